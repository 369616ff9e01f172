"""A lab's own robot behind `bayes_s2r.sim.robot.Robot`: what stands in for `RealRobot`.

The experiments (`run_intervention`'s `real_finetune`, `transfer_delta`, a campaign's real
evaluations) ask a robot for two things: `run(key, policy, episodes) -> RealRun` and
`hours_used`. A lab has an executor that runs one episode on the hardware; `LabRobot` turns
it into such a robot: it draws one seed per episode from the key, hands the executor a plain
NumPy policy function, collects the episode outcomes into `EpisodeStats`, and charges robot
time per episode.

Usage (with the lab's `execute(policy_fn, seed) -> dict`):

    robot = LabRobot(execute, episode_seconds=28.0, interface=sim_world.interface)
    result = run_intervention(key, "real_finetune", {"episodes": 32}, policy, sim_world, robot)
    result.cost.real                      # robot-hours this fine-tuning used

`execute` returns, per episode: success (bool), unsafe (bool, an unsafe event happened),
steps_alive (control steps before the first violation of the success limits) and score (a
number in [0, 1], higher is better). The tests run `LabRobot` against a simulated stand-in
(native MuJoCo's cart-pole driven step by step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from bayes_s2r.errors import InputError, require_int, require_positive
from bayes_s2r.sim.real import RealRun
from bayes_s2r.sim.rollout import EpisodeStats, LinearPolicy


class LabRobot:
    """A robot that runs episodes one at a time through a lab's executor.

    Args:
        execute: `execute(policy_fn, seed) -> dict` runs one episode on the robot, where
            `policy_fn(obs: np.ndarray) -> np.ndarray` gives the action in [-1, 1], and returns
            {"success", "unsafe", "steps_alive", "score"}.
        episode_seconds: robot time one episode costs, reset included.
        act_size: actuators (1: a scalar action per step).
        interface: the robot's `PolicyInterface` (optional; checked against the sim's).

    Attributes:
        hours_used: robot-hours charged so far.
        episodes_run: episodes run so far.
    """

    def __init__(self, execute: Callable[[Callable, int], dict], episode_seconds: float,
                 act_size: int = 1, interface: Any = None):
        if not callable(execute):
            raise InputError("execute", execute, "a callable execute(policy_fn, seed) -> dict")
        self.execute = execute
        self.episode_seconds = require_positive("episode_seconds", episode_seconds)
        self.act_size = require_int("act_size", act_size, 1)
        if interface is not None:
            self.interface = interface
        self.hours_used = 0.0
        self.episodes_run = 0

    def _policies(self, policy: LinearPolicy, episodes: int) -> list[tuple[np.ndarray, np.ndarray]]:
        w, b = np.asarray(policy.weights, np.float64), np.asarray(policy.bias, np.float64)
        single = w.ndim == (1 if self.act_size == 1 else 2)
        if single:
            return [(w, b)] * episodes
        if w.shape[0] != episodes:
            raise InputError("policy.weights", w.shape, f"one policy or a batch of {episodes}")
        return [(w[i], b[i]) for i in range(episodes)]

    def run(self, key: jax.Array, policy: LinearPolicy, episodes: int) -> RealRun:
        """Run `policy` (or a batch of `episodes` policies, one each) for `episodes` episodes."""
        episodes = require_int("episodes", episodes, 1)
        seeds = np.asarray(jax.random.randint(key, (episodes,), 0, np.iinfo(np.int32).max))
        logs = []
        for (w, b), seed in zip(self._policies(policy, episodes), seeds):
            policy_fn = lambda obs, w=w, b=b: np.clip(w @ np.asarray(obs, np.float64) + b, -1.0, 1.0)
            logs.append(self.execute(policy_fn, int(seed)))
        col = lambda name, dtype: np.array([log[name] for log in logs], dtype)
        unsafe = col("unsafe", bool)
        stats = EpisodeStats(success=col("success", bool), unsafe=unsafe, fell=unsafe,
                             rail_hit=np.zeros(episodes, bool), steps_alive=col("steps_alive", np.int32),
                             score=col("score", np.float32))
        hours = episodes * self.episode_seconds / 3600.0
        self.hours_used += hours
        self.episodes_run += episodes
        return RealRun(stats, hours, int(unsafe.sum()))
