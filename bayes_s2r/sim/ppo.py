"""Brax's PPO on the pinned JAX: one entry point with the smallest compatibility fix.

Brax 0.14's `ppo.train` calls `jax.device_put_replicated`, which JAX 0.10 removed, at its
first training step (a run with `num_timesteps=0` returns before it and hides the failure).
`train_ppo` provides that one function, for the duration of the call only, as a
`jax.device_put` of stacked copies sharded over the devices' leading axis, which is what
the removed function returned; JAX itself is left as it was afterwards. Nothing else in
Brax's trainer is changed.

For the small linear policies of the testbed, `train_es` and `train_cem` need no such fix
and are the trainers the interventions use; PPO is for a lab's own Brax environment and
network.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.errors import InputError, require_int, require_positive

__all__ = ["PPOConfig", "PPOResult", "device_put_replicated", "train_ppo"]


def device_put_replicated(x: Any, devices: list) -> Any:
    """Copies of every leaf of `x` stacked on a new leading axis, one per device.

    The leading axis is sharded over `devices` (one copy each), as `jax.pmap` expects.
    """
    devices = list(devices)
    if not devices:
        raise InputError("devices", devices, "at least one device")
    n = len(devices)
    if n == 1:
        put = lambda a: jax.device_put(jnp.stack([jnp.asarray(a)]), devices[0])
    else:
        mesh = jax.sharding.Mesh(np.array(devices), ("replica",))
        sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("replica"))
        put = lambda a: jax.device_put(jnp.stack([jnp.asarray(a)] * n), sharding)
    return jax.tree.map(put, x)


@contextlib.contextmanager
def _replicated_shim() -> Iterator[None]:
    """`jax.device_put_replicated` while inside the block, when JAX lacks it; restored after."""
    if hasattr(jax, "device_put_replicated"):
        yield
        return
    jax.device_put_replicated = device_put_replicated
    try:
        yield
    finally:
        del jax.device_put_replicated


class PPOConfig(NamedTuple):
    """The PPO settings this entry point exposes (Brax's names and meanings).

    Attributes:
        num_timesteps: environment steps to train for (> 0).
        episode_length: steps per episode.
        num_envs: parallel environments.
        unroll_length: steps unrolled per environment per batch.
        batch_size: minibatch size (in unrolls).
        num_minibatches: minibatches per update.
        num_updates_per_batch: passes over each batch.
        learning_rate: Adam step size.
        entropy_cost: entropy bonus.
        discounting: discount factor.
        num_evals: evaluations during training (at least 1).
        num_eval_envs: environments per evaluation.
        normalize_observations: keep running observation statistics.
        extra: any other keyword of `brax.training.agents.ppo.train.train`, as a dict.
    """

    num_timesteps: int = 1_000_000
    episode_length: int = 1000
    num_envs: int = 1024
    unroll_length: int = 10
    batch_size: int = 1024
    num_minibatches: int = 32
    num_updates_per_batch: int = 4
    learning_rate: float = 3e-4
    entropy_cost: float = 1e-2
    discounting: float = 0.97
    num_evals: int = 1
    num_eval_envs: int = 128
    normalize_observations: bool = True
    extra: dict | None = None


class PPOResult(NamedTuple):
    """Result of `train_ppo`.

    Attributes:
        inference_fn: `inference_fn(obs, key) -> (action, info)`, the trained deterministic policy
            (jittable).
        make_policy: Brax's policy factory, `make_policy(params, deterministic=...)`.
        params: (normalizer params, policy params, value params).
        metrics: the last evaluation's metrics (floats).
        progress: (env steps, metrics) at each evaluation.
    """

    inference_fn: Callable
    make_policy: Callable
    params: Any
    metrics: dict
    progress: list


def _check(config: PPOConfig) -> PPOConfig:
    require_int("ppo.num_timesteps", config.num_timesteps, 1)
    for f in ("episode_length", "num_envs", "unroll_length", "batch_size", "num_minibatches",
              "num_updates_per_batch", "num_evals", "num_eval_envs"):
        require_int(f"ppo.{f}", getattr(config, f), 1)
    for f in ("learning_rate", "discounting"):
        require_positive(f"ppo.{f}", getattr(config, f))
    if (config.batch_size * config.num_minibatches) % config.num_envs:
        raise InputError("ppo.num_envs", config.num_envs,
                         f"a divisor of batch_size × num_minibatches = {config.batch_size * config.num_minibatches}")
    if config.extra is not None and not isinstance(config.extra, dict):
        raise InputError("ppo.extra", config.extra, "a dict of extra keywords or None")
    return config


def train_ppo(key: jax.Array, env: Any, config: PPOConfig | None = None) -> PPOResult:
    """Train Brax's PPO on `env` (any `brax.envs.Env`, MJX included).

    Args:
        key: PRNG key; Brax's trainer takes an integer seed, drawn from this key.
        env: the environment.
        config: `PPOConfig`.

    Returns:
        `PPOResult` with a ready `inference_fn`.
    """
    from brax.training.agents.ppo import train as ppo

    config = _check(config or PPOConfig())
    seed = int(jax.random.randint(key, (), 0, np.iinfo(np.int32).max))
    kwargs = {k: v for k, v in config._asdict().items() if k != "extra"}
    kwargs.update(config.extra or {})
    progress: list = []
    with _replicated_shim():
        make_policy, params, metrics = ppo.train(
            environment=env, seed=seed, progress_fn=lambda step, m: progress.append((int(step), dict(m))),
            **kwargs)
    inference_fn = make_policy(params, deterministic=True)
    metrics = {k: float(np.asarray(v)) for k, v in metrics.items()}
    return PPOResult(inference_fn, make_policy, params, metrics, progress)

