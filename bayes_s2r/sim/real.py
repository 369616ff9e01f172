"""The "real" robot: a hidden-parameter world reachable only through a facade.

`RealRobot` runs episodes with the same compiled rollouts as sim, but it
- charges robot time per episode: horizon × control period + a reset overhead, in hours;
- records unsafe events (the pole falling past `fall_limit`, the cart hitting the rail end);
- returns what a robot would give: outcomes, observations and commanded actions, never the
  true states or ξ. Its parameters are exposed only by `oracle()`, meant for benchmarks.

The facade keeps a running account of hours, episodes and unsafe events (a robot's clock is
state); every call also returns its own charge, so callers can price experiments exactly.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.errors import InputError, require_finite_nonneg, require_int
from bayes_s2r.sim.params import broadcast_params
from bayes_s2r.sim.rollout import EpisodeStats, LinearPolicy, _episode_count, simulate_batch
from bayes_s2r.sim.world import Protocol, World, load_card

__all__ = ["RealRobot", "RealRun", "RealTrajectories", "read_at_rest"]


class RealRun(NamedTuple):
    """Outcome of a batch of real episodes.

    Attributes:
        stats: `EpisodeStats` as NumPy arrays (success, unsafe, fell, rail_hit, steps_alive, score).
        hours: robot-hours charged for this batch.
        unsafe: number of episodes with an unsafe event.
    """

    stats: EpisodeStats
    hours: float
    unsafe: int


class RealTrajectories(NamedTuple):
    """Logged real episodes (what the robot's logs hold; no true state).

    Attributes:
        obs: observations the policy saw, [K, T, obs].
        action: commanded actions (policy + excitation, clipped), [K, T] ([K, T, act] when the
            robot has act > 1 actuators).
        excitation: the known excitation signal added to the actions, same shape as `action`.
        alive: success limits held up to each step, [K, T].
        run: the `RealRun` of these episodes.
        setup: what the experimenter set up for each episode and so knows without measuring it:
            the reacher's target position (x, y), [K, 2]; None for the cart-pole, whose first
            observation is its whole state.
        running: no unsafe event (the robot's stop) up to and including each step, [K, T]; the
            logs are physical until the robot stops, usually well past the first step out of the
            success limits (`alive`). None: only `alive` is known.
    """

    obs: np.ndarray
    action: np.ndarray
    excitation: np.ndarray
    alive: np.ndarray
    run: RealRun
    setup: np.ndarray | None = None
    running: np.ndarray | None = None


class RealRobot:
    """Facade over a hidden "real" world.

    Args:
        world: the hidden world, or the name of a shipped card (e.g. "real_latency").
        reset_overhead_s: robot time per episode spent resetting, in seconds.
        protocol: evaluation protocol (defaults to the card world's, i.e. the standard one).

    Example:
        >>> robot = RealRobot("real_latency")
        >>> robot.hours_used
        0.0
    """

    def __init__(self, world: World | str, reset_overhead_s: float = 20.0,
                 protocol: Protocol | None = None):
        if isinstance(world, str):
            world = load_card(world, protocol=protocol)
        elif not isinstance(world, World):
            raise InputError("world", world, "a World or a card name")
        elif protocol is not None:
            world = dataclasses.replace(world, protocol=protocol)
        self._world = world
        self.reset_overhead_s = require_finite_nonneg("reset_overhead_s", reset_overhead_s)
        self.hours_used = 0.0
        self.episodes_run = 0
        self.unsafe_events = 0

    def __repr__(self) -> str:
        return (f"RealRobot(name={self._world.name!r}, hours_used={self.hours_used:.3f}, "
                f"episodes_run={self.episodes_run}, unsafe_events={self.unsafe_events})")

    @property
    def name(self) -> str:
        return self._world.name

    @property
    def interface(self):
        """The robot's `PolicyInterface` (public: it is what the policy plugs into)."""
        return self._world.interface

    @property
    def protocol(self) -> Protocol:
        return self._world.protocol

    @property
    def env(self) -> str:
        return self._world.env

    def episode_hours(self, episodes: int = 1) -> float:
        """Robot-hours `episodes` episodes would cost."""
        return self._world.episode_hours(episodes, self.reset_overhead_s)

    def oracle(self) -> World:
        """The hidden world itself. For benchmarks and tests only; a campaign must not call it."""
        return self._world

    def _charge(self, stats: EpisodeStats, world: World | None = None) -> RealRun:
        stats = EpisodeStats(*(np.asarray(x) for x in stats))
        n = int(stats.success.shape[0])
        hours = (world or self._world).episode_hours(n, self.reset_overhead_s)
        unsafe = int(stats.unsafe.sum())
        self.hours_used += hours
        self.episodes_run += n
        self.unsafe_events += unsafe
        return RealRun(stats, hours, unsafe)

    def run(self, key: jax.Array, policy: LinearPolicy, episodes: int) -> RealRun:
        """Run `episodes` episodes (one policy, or a batch of `episodes` policies) and charge them.

        The same key gives the same initial states and sensor noise (matched comparisons).
        """
        n = _episode_count(episodes)
        stats = simulate_batch(key, self._world, policy, broadcast_params(self._world.params, n))
        return self._charge(stats)

    def collect(self, key: jax.Array, policy: LinearPolicy, episodes: int,
                excitation: float = 0.0, hold: int = 5, horizon: int | None = None) -> RealTrajectories:
        """Logged episodes with a known excitation added to the actions (for identification).

        Args:
            key: PRNG key.
            policy: the policy run in closed loop.
            episodes: number of episodes.
            excitation: amplitude of a piecewise-constant random signal added to the actions.
            hold: control steps each excitation level is held.
            horizon: control steps per episode, at most the protocol's (None: the protocol's).
                Short episodes are a safer data-collection protocol: they end before a poor
                policy drives the robot past its limits. Charged by their own length.
        """
        n = _episode_count(episodes)
        amp = require_finite_nonneg("excitation", excitation)
        require_int("hold", hold, 1)
        world = self._world
        if horizon is not None:
            require_int("horizon", horizon, 1, self.protocol.horizon)
            world = dataclasses.replace(world, protocol=dataclasses.replace(world.protocol, horizon=horizon))
        k_exc, k_run = jax.random.split(key)
        exc = make_excitation(k_exc, n, world.protocol.horizon, amp, hold, world.act_size)
        stats, traj = simulate_batch(k_run, world, policy, broadcast_params(world.params, n),
                                     excitation=exc, record=True)
        run = self._charge(stats, world)
        # the reacher's target joints are the last two of q; the arm's own state is not logged
        setup = np.asarray(traj.init_q[:, 2:4]) if world.env == "reacher" else None
        return RealTrajectories(np.asarray(traj.obs), np.asarray(traj.action), np.asarray(exc),
                                np.asarray(traj.alive), run, setup, _running(world, traj))

    def read_at_rest(self, key: jax.Array, readings: int) -> np.ndarray:
        """Sensor readings of the robot at rest: one after each of `readings` resets.

        No action is applied, so nothing can go unsafe; the robot is charged the resets (the
        reset overhead and one control period each).

        Returns:
            [readings, obs] observations, as the policy would see them.
        """
        obs = read_at_rest(key, self._world, readings)
        n = obs.shape[0]
        self.hours_used += _at_rest(self._world).episode_hours(n, self.reset_overhead_s)
        self.episodes_run += n
        return obs


def _running(world: World, traj) -> np.ndarray:
    """No unsafe event up to and including each step, [K, T] (the rollouts' unsafe criteria)."""
    q, qd, p = np.asarray(traj.q), np.asarray(traj.qd), world.protocol
    bad = ~(np.isfinite(q).all(-1) & np.isfinite(qd).all(-1))
    if world.env == "reacher":
        bad |= (np.abs(qd[..., :2]) > p.speed_limit).any(-1)
    else:
        bad |= (np.abs(q[..., 1]) > p.fall_limit) | (np.abs(q[..., 0]) > p.rail_end)
    return ~np.logical_or.accumulate(bad, axis=1)


def _at_rest(world: World) -> World:
    """`world` with one-step episodes: a reset and one reading, no action (zero policy)."""
    protocol = dataclasses.replace(world.protocol, horizon=1, hold_steps=1)
    return dataclasses.replace(world, protocol=protocol)


def read_at_rest(key: jax.Array, world: World, readings: int) -> np.ndarray:
    """The observation right after each of `readings` resets of `world`, before any action.

    Returns:
        [readings, obs] observations, with the world's sensor noise and bias.
    """
    n = _episode_count(readings)
    rest = _at_rest(world)
    zero = LinearPolicy.zeros(world.obs_size, world.act_size)
    _, traj = simulate_batch(key, rest, zero, broadcast_params(world.params, n), record=True)
    return np.asarray(traj.obs[:, 0])


def make_excitation(key: jax.Array, n: int, horizon: int, amplitude: float, hold: int = 5,
                    act_size: int = 1) -> jax.Array:
    """Piecewise-constant random excitation, uniform in ±amplitude, held `hold` steps.

    Returns:
        [n, horizon] for one actuator; [n, horizon, act_size] for more (one signal each).
    """
    extra = (act_size,) if act_size > 1 else ()
    levels = jax.random.uniform(key, (n, -(-horizon // hold)) + extra, minval=-amplitude, maxval=amplitude)
    return jnp.repeat(levels, hold, axis=1)[:, :horizon].astype(jnp.float32)
