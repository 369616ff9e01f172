"""The testbed's rollouts with the environment batch split over devices.

Each function mirrors one of `bayes_s2r.sim.rollout` (same arguments plus `devices=`) and
calls the very same jitted batch function: the inputs that carry the batch (ξ, policies,
initial states, excitation) are padded to a multiple of the device count and placed with a
`NamedSharding`, so `jax.jit` partitions the episodes over the devices. The results are
cut back to the requested number of episodes.

Same key, same episodes: a sharded call returns exactly what the single-device call returns.
Initial states are drawn here exactly as `simulate_batch` draws them, so that every batched
input is split over the devices. Padding keeps the equality because JAX's default random
numbers (`jax_threefry_partitionable`, on by default) are prefix-stable: the first n of
`split(key, n + p)` are `split(key, n)`, so the per-episode noise keys `simulate_batch`
derives for the padded batch begin with those of the original one.

`simulate_batch` runs big batches in chunks of `bayes_s2r.sim.rollout.CHUNK` episodes, and a
slice of a sharded batch after the first chunk comes back replicated. On more than one device
the batch therefore runs as one chunk (`chunk_for`), which keeps it split over the devices.
"""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.distributed.placement import batch_length, place_batch, place_replicated, unpad
from bayes_s2r.errors import InputError
from bayes_s2r.sim.params import DRSpec, Params, broadcast_params, sample_params
from bayes_s2r.sim.rollout import EpisodeStats, LinearPolicy, sample_init, simulate_batch
from bayes_s2r.sim.world import World

__all__ = ["chunk_for", "sharded_rollout", "sharded_rollout_dr", "sharded_simulate_batch"]


#: `simulate_batch` takes the episodes per compiled call (`chunk=`).
_HAS_CHUNK = "chunk" in inspect.signature(simulate_batch).parameters


def chunk_for(episodes: int, devices: int) -> int:
    """Episodes per compiled call for a batch split over `devices` (> 1): one call for the batch.

    `simulate_batch` slices big batches into chunks; a slice after the first loses the batch
    sharding, so a sharded batch runs as one chunk. Its size is `devices` × the next power of
    two ≥ episodes / devices: a new compile only when that per-device size doubles.

    Example:
        >>> chunk_for(6, 4), chunk_for(256, 4), chunk_for(1000, 4)
        (8, 256, 1024)
    """
    per_device = -(-episodes // devices)
    return devices * (1 << max(0, per_device - 1).bit_length())


def _episodes(episodes: Any) -> int:
    if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or episodes < 1:
        raise InputError("episodes", episodes, "a whole number >= 1")
    return int(episodes)


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
        devices: which devices (None: all, or the mesh of an enclosing `use_devices`).

    Returns:
        `EpisodeStats` (and a `Trajectory` when `record`) for the B episodes, equal to
        `simulate_batch(key, world, policy, params, ...)`.
    """
    if not isinstance(params, Params):
        raise InputError("params", type(params).__name__, "a Params of arrays of shape [B]")
    n = batch_length(params, "params")
    horizon = world.protocol.horizon
    if init is None:  # the initial states simulate_batch would draw from `key`
        init = sample_init(jax.random.split(key)[0], world, n)
    if not (isinstance(init, tuple) and len(init) == 2):
        raise InputError("init", type(init).__name__, "a pair (q0 [B, q], qd0 [B, qd])")
    exc = jnp.zeros((n, horizon), jnp.float32) if excitation is None else jnp.asarray(excitation, jnp.float32)
    if exc.shape != (n, horizon):
        raise InputError("excitation", exc.shape, f"shape {(n, horizon)}")
    weights, bias = jnp.asarray(policy.weights, jnp.float32), jnp.asarray(policy.bias, jnp.float32)
    if weights.ndim == 1:
        weights, bias = jnp.broadcast_to(weights, (n,) + weights.shape), jnp.broadcast_to(bias, (n,))
    if weights.ndim != 2 or weights.shape[0] != n:
        raise InputError("policy.weights", weights.shape, f"one policy [obs] or a batch [{n}, obs]")
    # Everything that carries the batch is split over the devices (one compiled variant).
    batch = {"params": params, "init": tuple(jnp.asarray(x, jnp.float32) for x in init),
             "excitation": exc, "policy": LinearPolicy(weights, bias)}
    placed = place_batch(batch, devices)
    b = placed.tree
    extra = {"chunk": chunk_for(n, placed.mesh.size)} if placed.mesh.size > 1 and _HAS_CHUNK else {}
    out = simulate_batch(place_replicated(key, placed.mesh), world, b["policy"], b["params"],
                         init=b["init"], excitation=b["excitation"], record=record, **extra)
    padded = batch_length(b["params"])
    return unpad(out, placed.length, padded)


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
    n = _episodes(episodes)
    p = broadcast_params(world.params if params is None else params, n)
    return sharded_simulate_batch(key, world, policy, p, devices=devices)


def sharded_rollout_dr(key: jax.Array, world: World, policy: LinearPolicy, spec: DRSpec,
                       episodes: int, *, devices: Any = None) -> tuple[EpisodeStats, Params]:
    """`rollout_dr` with the episodes split over devices (same key, same ξ, same episodes).

    Returns:
        (stats, the ξ drawn for each episode).
    """
    n = _episodes(episodes)
    if not isinstance(spec, DRSpec):
        raise InputError("spec", type(spec).__name__, "a DRSpec")
    k_xi, k_run = jax.random.split(key)
    params = sample_params(k_xi, spec, n)
    return sharded_simulate_batch(k_run, world, policy, params, devices=devices), params
