"""Tasks over any Brax environment, and their vectorized episodes.

A `Task` is a Brax `Env` (any backend, MJX included; wrappers allowed) under one evaluation
protocol: a horizon, a success and an unsafe predicate over the episode, and the observation
the policy sees. The predicates are JAX functions of an `Episode` (the per-step observations,
actions, rewards and termination flags of one episode), for example

    success=lambda ep: ~ep.terminated & (ep.ret > 50.0)
    unsafe=lambda ep: jnp.any(ep.obs[:, 0] < 0.8)     # torso height below 0.8

An episode is `lax.scan` over control steps; a batch is `vmap` over episodes and runs in
chunks of `task.chunk` episodes through one compiled function per (task, space, policy
structure), whatever the batch size. Per step: the policy sees `observe(state)` with the
space's observation noise and bias, its action (clipped to `action_clip`) goes through the
latency buffer, the environment steps on the model edited by the space's model directions.
After the environment reports `done` the state freezes and rewards stop.

Seeds are matched: an episode is a pure function of (values, key), so the same key gives the
same initial state, observation noise and policy keys to both arms of a paired comparison.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.compiling import LazyJit
from bayes_s2r.errors import InputError, require_int
from bayes_s2r.sim.policy import as_policy
from bayes_s2r.sim.space import ParamSpace, space_of

__all__ = ["Episode", "Task", "TaskStats", "episode_fn", "never", "simulate_task", "survived"]


class Episode(NamedTuple):
    """One episode as the predicates see it (leading axis: time, T = horizon).

    Attributes:
        obs: true observation `observe(state)` after each step, [T, ...].
        seen: what the policy saw before acting (noise and bias applied), [T, ...].
        action: the policy's action (clipped, before latency), [T, act].
        reward: reward of each step, 0 after termination, [T].
        done: terminated at or before this step, [T] bool.
        extra: `measure(state)` after each step (a pytree with leading axis T), or ().
    """

    obs: Any
    seen: Any
    action: jax.Array
    reward: jax.Array
    done: jax.Array
    extra: Any = ()

    @property
    def terminated(self) -> jax.Array:
        """The environment ended the episode before the horizon."""
        return self.done[..., -1]

    @property
    def ret(self) -> jax.Array:
        """The return: sum of rewards up to termination."""
        return self.reward.sum(axis=-1)

    @property
    def steps_alive(self) -> jax.Array:
        """Steps completed without termination."""
        return (~self.done).sum(axis=-1)


class TaskStats(NamedTuple):
    """Per-episode outcome (arrays with the batch shape).

    Attributes:
        success: the task's success predicate.
        unsafe: the task's unsafe predicate.
        terminated: the environment ended the episode before the horizon.
        steps_alive: steps completed without termination.
        score: the episode return (sum of rewards up to termination).
    """

    success: jax.Array
    unsafe: jax.Array
    terminated: jax.Array
    steps_alive: jax.Array
    score: jax.Array


def survived(ep: Episode) -> jax.Array:
    """Default success: the environment did not terminate the episode."""
    return ~ep.terminated


def never(ep: Episode) -> jax.Array:
    """Default unsafe predicate: no episode is unsafe."""
    return jnp.zeros((), bool)


def _state_obs(state):
    return state.obs


def _nothing(state):
    return ()


@dataclasses.dataclass(frozen=True)
class Task:
    """A Brax environment under one evaluation protocol (build it with `Task.from_brax`).

    Attributes:
        env: a `brax.envs.Env` (any backend; wrappers are unwrapped to edit the model).
        horizon: control steps per episode.
        success, unsafe: predicates `f(Episode) -> bool scalar` (JAX functions).
        observe: the observation the policy sees, `observe(state) -> obs` (default `state.obs`).
        measure: extra per-step quantities for the predicates, `measure(state) -> pytree`.
        action_clip: actions are clipped to [low, high] (None: not clipped).
        chunk: episodes per compiled call.
        model_attr: the attribute of the unwrapped environment that holds the model
            ("sys" for Brax environments).
        name: label.
    """

    env: Any
    horizon: int
    success: Callable[[Episode], Any] = survived
    unsafe: Callable[[Episode], Any] = never
    observe: Callable[[Any], Any] = _state_obs
    measure: Callable[[Any], Any] = _nothing
    action_clip: tuple[float, float] | None = (-1.0, 1.0)
    chunk: int = 64
    model_attr: str = "sys"
    name: str = "task"

    def __post_init__(self):
        env = self.env
        if not all(callable(getattr(env, m, None)) for m in ("reset", "step")) or not hasattr(env, "action_size"):
            raise InputError("task.env", env, "a brax.envs.Env (reset, step, action_size)")
        base = getattr(env, "unwrapped", env)
        if not hasattr(base, self.model_attr):
            raise InputError("task.model_attr", self.model_attr, "the attribute of the environment holding its model")
        require_int("task.horizon", self.horizon, 1, 1_000_000)
        require_int("task.chunk", self.chunk, 1)
        for f in ("success", "unsafe", "observe", "measure"):
            if not callable(getattr(self, f)):
                raise InputError(f"task.{f}", getattr(self, f), "a function")
        if self.action_clip is not None:
            lo, hi = self.action_clip
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise InputError("task.action_clip", self.action_clip, "(low, high) with low < high, or None")
            object.__setattr__(self, "action_clip", (float(lo), float(hi)))

    @classmethod
    def from_brax(cls, env, *, horizon: int, success: Callable | None = None, unsafe: Callable | None = None,
                  observe: Callable | None = None, measure: Callable | None = None,
                  action_clip: tuple[float, float] | None = (-1.0, 1.0), chunk: int = 64,
                  name: str | None = None) -> Task:
        """A task over a Brax environment (e.g. `brax.envs.get_environment("hopper", backend="mjx")`).

        Args:
            env: the environment.
            horizon: control steps per episode.
            success: `f(Episode) -> bool` (default: not terminated, `survived`).
            unsafe: `f(Episode) -> bool` (default: never, `never`).
            observe: `observe(state) -> obs` the policy sees (default: `state.obs`).
            measure: `measure(state) -> pytree` recorded per step into `Episode.extra`.
            action_clip: clip actions to this range (Brax actuators take [-1, 1]).
            chunk: episodes per compiled call; every batch is padded to a multiple of it, so
                a value near the usual batch size wastes least (one compile serves all sizes).
            name: label (default: the environment's class name).

        Another environment interface with `reset(rng)`, `step(state, action)` and
        `action_size` works too: build `Task(env, horizon, ..., model_attr=...)` with the
        attribute that holds its model (e.g. "_mjx_model" for MuJoCo Playground).
        """
        return cls(env, horizon, success or survived, unsafe or never, observe or _state_obs,
                   measure or _nothing, action_clip, chunk, "sys",
                   name or type(getattr(env, "unwrapped", env)).__name__.lower())

    @property
    def act_size(self) -> int:
        return int(self.env.action_size)


@contextlib.contextmanager
def _model(task: Task, model):
    """The environment with its model swapped for `model` while tracing (as Brax's DR wrapper does)."""
    env = getattr(task.env, "unwrapped", task.env)
    old = getattr(env, task.model_attr)
    try:
        setattr(env, task.model_attr, model)
        yield
    finally:
        setattr(env, task.model_attr, old)


def _episode(task: Task, space: ParamSpace, apply, keyed: bool, params, values, key):
    """One episode: (TaskStats of one episode, Episode). Traceable."""
    env = task.env
    base = getattr(getattr(env, "unwrapped", env), task.model_attr)
    model = space.apply_model(base, values)
    k_reset, k_obs, k_act = jax.random.split(key, 3)
    latency = space.latency(values)
    with _model(task, model):
        state0 = env.reset(k_reset)

        def step(carry, t):
            state, buf, done = carry
            seen = space.observe(task.observe(state), values, jax.random.fold_in(k_obs, t))
            a = apply(params, seen, jax.random.fold_in(k_act, t)) if keyed else apply(params, seen)
            a = jnp.reshape(jnp.asarray(a, jnp.float32), (task.act_size,))
            if task.action_clip is not None:
                a = jnp.clip(a, *task.action_clip)
            buf = jnp.concatenate([a[None], buf[:-1]])
            new = env.step(state, buf[latency])
            new = jax.tree.map(lambda n, o: jnp.where(done, o, n), new, state)
            reward = jnp.where(done, 0.0, new.reward)
            done = done | (new.done > 0.5)
            out = (task.observe(new), seen, a, reward, done, task.measure(new))
            return (new, buf, done), out

        buf0 = jnp.zeros((space.max_latency + 1, task.act_size), jnp.float32)
        carry0 = (state0, buf0, jnp.zeros((), bool))
        _, out = jax.lax.scan(step, carry0, jnp.arange(task.horizon))
    ep = Episode(*out)
    success, unsafe = task.success(ep), task.unsafe(ep)
    for f, v in (("success", success), ("unsafe", unsafe)):
        if jnp.shape(v) != ():
            raise InputError(f"task.{f}", jnp.shape(v), "a predicate returning one boolean per episode")
    stats = TaskStats(jnp.asarray(success, bool), jnp.asarray(unsafe, bool), ep.terminated, ep.steps_alive,
                      ep.ret)
    return stats, ep


def episode_fn(task: Task, policy, space: ParamSpace | None = None) -> Callable:
    """The pure one-episode function `f(params, values, key) -> (TaskStats, Episode)`.

    For one's own loops: `jax.vmap` it over values and keys, `jax.grad` through it with
    respect to the policy's `params` or the mismatch `values` (a differentiable backend; MJX
    gradients need `opt.iterations=1`, see FINDINGS), or `jax.jit` it. `simulate_task` runs
    the same function.
    """
    if not isinstance(task, Task):
        raise InputError("task", task, "a sim.Task (Task.from_brax(env, ...))")
    pol = as_policy(policy)
    return functools.partial(_episode, task, space_of(space), pol.apply, pol.keyed)


@functools.partial(LazyJit, static_argnames=("task", "space", "apply", "keyed"))
def _chunk_fn(task, space, apply, keyed, params, values, keys):
    # the episodes are always returned (the scan builds them anyway), so recording them, e.g.
    # to log data for identification, reuses the compiled chunk
    run = lambda v, k: _episode(task, space, apply, keyed, params, v, k)
    return jax.vmap(run)(values, keys)


def simulate_task(key: jax.Array, task: Task, policy, values=None, *, space: ParamSpace | None = None,
                  episodes: int | None = None, keys: jax.Array | None = None, record: bool = False):
    """One episode per row of `values` ([B, D], D = directions of `space`).

    Args:
        key: PRNG key: split into one key per episode (ignored when `keys` is given).
        task: the task.
        policy: a `Policy` (or a `LinearPolicy`).
        values: mismatch values [B, D]; None runs `episodes` episodes at the space's nominal.
        space: the `ParamSpace` of `values` (None: no mismatch directions).
        episodes: number of episodes when `values` is None.
        keys: explicit per-episode keys [B] (common random numbers across conditions).
        record: also return the `Episode`s (leading axis B).

    Returns:
        `TaskStats` of shape [B] (and the `Episode`s when `record`).
    """
    if not isinstance(task, Task):
        raise InputError("task", task, "a sim.Task (Task.from_brax(env, ...))")
    space = space_of(space)
    pol = as_policy(policy)
    if values is None:
        n = require_int("episodes", episodes, 1)
        values = jnp.broadcast_to(jnp.asarray(space.nominal), (n, len(space.names)))
    values = jnp.asarray(values, jnp.float32)
    if values.ndim != 2 or values.shape[1] != len(space.names) or values.shape[0] < 1:
        raise InputError("values", values.shape, f"[episodes, {len(space.names)}] (one column per direction)")
    n = values.shape[0]
    if keys is None:
        if key is None:
            raise InputError("key", key, "a PRNG key (or per-episode keys in `keys`)")
        keys = jax.random.split(key, n)
    if keys.shape[0] != n:
        raise InputError("keys", keys.shape, f"{n} keys, one per episode")
    c = task.chunk
    pad = (-n) % c
    if pad:
        values = jnp.concatenate([values, jnp.repeat(values[-1:], pad, axis=0)])
        keys = jnp.concatenate([keys, jnp.repeat(keys[-1:], pad, axis=0)])
    outs = []
    for i in range(0, n + pad, c):
        stats, ep = _chunk_fn(task, space, pol.apply, pol.keyed, pol.params, values[i:i + c], keys[i:i + c])
        outs.append((stats, ep) if record else stats)
    joined = jax.tree.map(lambda *xs: jnp.concatenate(xs)[:n], *outs)
    return joined
