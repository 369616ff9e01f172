"""The built-in cart-pole and reacher as `Task`s: Brax environments with the worlds' episode.

`as_task(world)` gives a `BuiltinTask(task, space, values)`:

- `task`: a `Task` over `BuiltinEnv`, a Brax `PipelineEnv` (the world's backend) that runs
  the world's MJCF model, initial-state distribution, action scaling, freezing rule and
  protocol (success, unsafe, score) as stated in `bayes_s2r.sim.rollout`;
- `space`: a `ParamSpace` with one direction per `Params` field, under the same names
  (`mass_scale` moves the scaled links' mass and inertia, `damping_scale` every joint's
  damping, `gear_scale` the actuator gear, `latency`, `obs_noise` on every channel,
  `obs_bias` on the world's biased channel, `control_period` the physics time step);
- `values`: the world's ξ as a value vector of `space`.

So anything written for a lab's own `Task` (any `Policy`, `rollout_dr` with `space.dr(...)`,
`sensitivity_sweep`, `paired_eval`, `identify` on `TaskData`) runs on the built-in worlds too.

Same physics, same episode: from the same initial state with no sensor noise, an episode of
the task and of the world (`simulate_batch`) end with the same success, unsafe flag and score
(a test checks it episode by episode). What differs is how randomness is drawn: a `Task`
draws each episode's initial state and sensor noise from that episode's own key, a `World`
draws a batch's initial states from one key, so the same key gives different (equally
distributed) episodes on the two paths, and the `World` path keeps every recorded result.
`TaskStats.steps_alive` counts steps before termination; the world's `steps_alive` (steps
within the success limits) is `Episode.extra["alive"].sum()`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from brax.envs.base import PipelineEnv, State

from bayes_s2r.errors import InputError
from bayes_s2r.sim.params import DIRECTIONS, MAX_LATENCY, PARAM_NAMES
from bayes_s2r.sim.rollout import (
    REACHER_REACH,
    _cartpole_limits,
    _initial_states,
    _is_finite,
    _reacher_distance,
    _reacher_ik,
    _reacher_obs,
    _to_ctrl,
)
from bayes_s2r.sim.space import Latency, ModelField, ObsBias, ObsNoise, ParamSpace, SysFn
from bayes_s2r.sim.task import Episode, Task
from bayes_s2r.sim.world import ENVS, Protocol, World, _base_system

__all__ = ["BuiltinEnv", "BuiltinTask", "as_task", "builtin_space"]


class BuiltinEnv(PipelineEnv):
    """The world's environment as a Brax `PipelineEnv` (cart-pole or reacher).

    Actions in [-1, 1] are scaled to the actuators' control range. `done` is set when the
    protocol's unsafe limits are crossed or the state is not finite (a non-finite step keeps
    the previous state); a `Task` then freezes the episode. `state.info["alive"]` says the success limits held at every step so far; the reward is the
    world's per-step score divided by the horizon, so the return is the world's `score`.
    """

    def __init__(self, env: str = "inverted_pendulum", protocol: Protocol | None = None,
                 backend: str = "generalized"):
        if env not in ENVS:
            raise InputError("env", env, f"one of {tuple(ENVS)}")
        self.env_name = env
        self.protocol = protocol or Protocol()
        super().__init__(_base_system(env), backend=backend, n_frames=ENVS[env]["n_frames"])

    def reset(self, rng: jax.Array) -> State:
        q0, qd0 = _initial_states(rng, self.env_name, self.sys, self.protocol.init_scale, 1)
        q, qd = q0[0], qd0[0]
        goal = jnp.stack(_reacher_ik(q[2], q[3])) if self.env_name == "reacher" else jnp.zeros(2)
        ps = self.pipeline_init(q, qd)
        info = {"goal": goal, "alive": jnp.array(True), "near": jnp.array(False)}
        return State(ps, self._obs(ps, goal), jnp.zeros(()), jnp.zeros(()), {}, info)

    def _obs(self, ps, goal):
        if self.env_name == "reacher":
            return _reacher_obs(ps.q, ps.qd, goal)
        return jnp.concatenate([ps.q, ps.qd])

    def step(self, state: State, action: jax.Array) -> State:
        p = self.protocol
        new = self.pipeline_step(state.pipeline_state, _to_ctrl(self.sys, jnp.clip(action, -1.0, 1.0)))
        finite = _is_finite(new)
        new = jax.tree.map(lambda n, o: jnp.where(finite, n, o), new, state.pipeline_state)
        info = dict(state.info)
        if self.env_name == "reacher":
            alive = state.info["alive"] & finite & jnp.all(jnp.abs(new.qd[:2]) <= p.speed_limit)
            dist = _reacher_distance(new)
            shaped = 1.0 - dist / REACHER_REACH
            info["near"] = alive & (dist <= p.reach_tolerance)
            done = ~alive
        else:
            ok, fell, hit, shaped = _cartpole_limits(new.q, p, finite)
            alive = state.info["alive"] & ok
            done = fell | hit
        info["alive"] = alive
        reward = jnp.where(alive, jnp.clip(shaped, 0.0, 1.0), 0.0) / p.horizon
        return state.replace(pipeline_state=new, obs=self._obs(new, state.info["goal"]), reward=reward,
                             done=done.astype(jnp.float32), info=info)


def _flags(state):
    return {"alive": state.info["alive"], "near": state.info["near"]}


def _unsafe(ep: Episode):
    return ep.terminated


def _cartpole_success(ep: Episode):
    return ep.extra["alive"][-1]


def _reacher_success(hold: int, ep: Episode):
    return ep.extra["alive"][-1] & jnp.all(ep.extra["near"][-hold:])


@functools.cache
def builtin_space(env: str = "inverted_pendulum") -> ParamSpace:
    """The seven `Params` fields of `env` as `ParamSpace` directions (same names, same effect).

    Units are those of the built-in `DIRECTIONS` (a sweep level means the same change on both
    paths); scales accept any positive value, as `Params` does. One space per environment, so
    the episodes of a task compile once whatever the number of `as_task` calls.
    """
    if env not in ENVS:
        raise InputError("env", env, f"one of {tuple(ENVS)}")
    spec = ENVS[env]
    links = np.atleast_1d(np.asarray(spec["pole_link"]))
    lo, hi = int(links.min()), int(links.max()) + 1  # the scaled links are contiguous
    n_frames = spec["n_frames"]
    unit = {d.param: d.unit for d in DIRECTIONS.values()}

    def scaled(name, paths):  # both engines' fields; any positive scale, as Params takes
        return ModelField(name, paths, unit=unit[name], low=1e-6)

    dirs = {
        "mass_scale": scaled("mass_scale", (f"link.inertia.mass[{lo}:{hi}]", f"link.inertia.i[{lo}:{hi}]",
                                            f"body_mass[{lo + 1}:{hi + 1}]", f"body_inertia[{lo + 1}:{hi + 1}]")),
        "damping_scale": scaled("damping_scale", ("dof.damping", "dof_damping")),
        "gear_scale": scaled("gear_scale", ("actuator.gear", "actuator_gear")),
        "latency": Latency("latency", max_steps=MAX_LATENCY, unit=unit["latency"]),
        "obs_noise": ObsNoise("obs_noise", unit=unit["obs_noise"]),
        "obs_bias": ObsBias("obs_bias", channels=(spec["bias_index"],), unit=unit["obs_bias"]),
        "control_period": SysFn("control_period", functools.partial(_control_period, n_frames), nominal=0.04,
                                unit=0.01, low=1e-4),
    }
    return ParamSpace(tuple(dirs[name] for name in PARAM_NAMES))


def _control_period(n_frames: int, sys, value):
    return sys.tree_replace({"opt.timestep": jnp.asarray(value, jnp.float32) / n_frames})


@functools.cache
def _task(env: str, protocol: Protocol, backend: str, chunk: int) -> Task:
    """One task per (environment, protocol, backend, chunk), so its episodes compile once."""
    if env == "reacher":
        success = functools.partial(_reacher_success, min(protocol.hold_steps, protocol.horizon))
    else:
        success = _cartpole_success
    return Task(BuiltinEnv(env, protocol, backend), protocol.horizon, success, _unsafe, measure=_flags,
                chunk=chunk, name=env)


class BuiltinTask(NamedTuple):
    """A built-in world as a task: `task`, its `space` and the world's ξ as `values` [D]."""

    task: Task
    space: ParamSpace
    values: np.ndarray


def as_task(world: World, *, chunk: int = 64) -> BuiltinTask:
    """The built-in `world` as a `Task` with its `ParamSpace` and its ξ (module docstring).

    Example:
        >>> import jax
        >>> bt = as_task(make_world())
        >>> stats = rollout_dr(jax.random.key(0), bt.task, nominal_policy(), bt.space.point(), 4)[0]
        >>> stats.success.shape, bt.space.names[:3]
        ((4,), ('mass_scale', 'damping_scale', 'gear_scale'))
    """
    if not isinstance(world, World):
        raise InputError("world", world, "a built-in sim.World")
    task = _task(world.env, world.protocol, world.backend, chunk)
    space = builtin_space(world.env)
    values = space.values({f: float(getattr(world.params, f)) for f in PARAM_NAMES})
    return BuiltinTask(task, space, values)


from bayes_s2r.sim.rollout import rollout_dr  # noqa: F401  (doctest namespace)
from bayes_s2r.sim.train import nominal_policy  # noqa: F401  (doctest namespace)
from bayes_s2r.sim.world import make_world  # noqa: F401  (doctest namespace)
