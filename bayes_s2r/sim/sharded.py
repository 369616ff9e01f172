"""The testbed's rollouts with the environment batch split over devices.

Each function mirrors one of `bayes_s2r.sim.rollout` (same arguments plus `devices=`) and
calls the very same jitted batch function: the inputs that carry the batch (ξ, policies,
initial states, excitation) are padded and placed with a `NamedSharding` (by
`simulate_batch(..., devices=...)`), so `jax.jit` partitions the episodes over the devices.
The results are cut back to the requested number of episodes.

Same key, same episodes: a sharded call returns exactly what the single-device call returns.
Padding keeps the equality because JAX's default random numbers
(`jax_threefry_partitionable`, on by default) are prefix-stable: the first n of
`split(key, n + p)` are `split(key, n)`, so the per-episode noise keys `simulate_batch`
derives for the padded batch begin with those of the original one.

`simulate_batch` runs big batches in chunks of `bayes_s2r.sim.rollout.CHUNK` episodes, and a
slice of a sharded batch after the first chunk comes back replicated. On more than one device
the batch therefore runs as one chunk (`bayes_s2r.sim.rollout.chunk_for`), which keeps it
split over the devices.
"""

from __future__ import annotations

from typing import Any

import jax

from bayes_s2r.errors import InputError
from bayes_s2r.sim.params import DRSpec, Params, broadcast_params, sample_params
from bayes_s2r.sim.rollout import EpisodeStats, LinearPolicy, _episode_count, simulate_batch
from bayes_s2r.sim.world import World

__all__ = ["sharded_rollout", "sharded_rollout_dr", "sharded_simulate_batch"]


def _all_devices(devices: Any) -> Any:
    """`devices`, with None read as every device JAX sees (`simulate_batch` reads None as one)."""
    return jax.device_count() if devices is None else devices


def sharded_simulate_batch(key: jax.Array, world: World, policy: LinearPolicy, params: Params, *,
                           init: tuple | None = None, excitation: Any = None, record: bool = False,
                           devices: Any = None):
    """`simulate_batch` with the batch of ξ (and everything batched with it) split over devices.

    Args:
        key: PRNG key (initial states unless `init` is given, and observation noise).
        world: environment and protocol.
        policy: one `LinearPolicy` (copied to every device) or a batch of B (split).
        params: `Params` of arrays of shape [B].
        init: optional matched initial states (q0 [B, q], qd0 [B, qd]).
        excitation: optional [B, T] signal added to the actions.
        record: also return the `Trajectory`.
        devices: which devices (None: every device JAX sees).

    Returns:
        `EpisodeStats` (and a `Trajectory` when `record`) for the B episodes, equal to
        `simulate_batch(key, world, policy, params, ...)`.
    """
    if not isinstance(params, Params):
        raise InputError("params", type(params).__name__, "a Params of arrays of shape [B]")
    if init is not None and not (isinstance(init, tuple) and len(init) == 2):
        raise InputError("init", type(init).__name__, "a pair (q0 [B, q], qd0 [B, qd])")
    return simulate_batch(key, world, policy, params, init=init, excitation=excitation, record=record,
                          devices=_all_devices(devices))


def sharded_rollout(key: jax.Array, world: World, policy: LinearPolicy, episodes: int,
                    params: Params | None = None, *, devices: Any = None) -> EpisodeStats:
    """`rollout` with the episodes split over devices (same key, same episodes).

    Example:
        >>> import jax
        >>> from bayes_s2r.sim.world import Protocol, make_world
        >>> w = make_world(protocol=Protocol(horizon=20))
        >>> s = sharded_rollout(jax.random.key(0), w, LinearPolicy.zeros(), 6, devices=4)
        >>> s.success.shape
        (6,)
    """
    n = _episode_count(episodes)
    p = broadcast_params(world.params if params is None else params, n)
    return sharded_simulate_batch(key, world, policy, p, devices=devices)


def sharded_rollout_dr(key: jax.Array, world: World, policy: LinearPolicy, spec: DRSpec,
                       episodes: int, *, devices: Any = None) -> tuple[EpisodeStats, Params]:
    """`rollout_dr` with the episodes split over devices (same key, same ξ, same episodes).

    Returns:
        (stats, the ξ drawn for each episode).
    """
    n = _episode_count(episodes)
    if not isinstance(spec, DRSpec):
        raise InputError("spec", type(spec).__name__, "a DRSpec")
    k_xi, k_run = jax.random.split(key)
    params = sample_params(k_xi, spec, n)
    return sharded_simulate_batch(k_run, world, policy, params, devices=devices), params
