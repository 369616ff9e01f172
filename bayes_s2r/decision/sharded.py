"""The Monte-Carlo look-ahead with the posterior draws split over devices (`decide(devices=...)`).

`bayes_s2r.decision.lookahead` computes, for every candidate and simulated outcome, weights
over the S posterior draws and their products with the draws. Here the draw axis of its
input arrays (`gains` [S, Mb] and `observed` [Mb, S]) is sharded over the mesh and the
other inputs are replicated; `jax.jit` then partitions the same compiled kernel so that each
device holds S/d draws and the sums over draws become cross-device reductions. The outcome
draws (common random numbers) are unchanged, so the result equals the single-device one up
to the order of floating-point additions.

S must split evenly: the mesh uses the largest device count ≤ the requested one that
divides S (padding draws would change the posterior). Beliefs from NUTS have
chains × samples draws, which usually divide.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from jax.sharding import NamedSharding, PartitionSpec

from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.lookahead import (
    LookaheadArrays,
    LookaheadResult,
    lookahead,
    lookahead_arrays,
)
from bayes_s2r.decision.problem import Problem
from bayes_s2r.decision.transition import resolve_transition
from bayes_s2r.distributed.devices import BATCH_AXIS, batch_mesh
from bayes_s2r.distributed.placement import put_global
from bayes_s2r.errors import InputError, require_int

__all__ = ["draw_mesh", "shard_lookahead_arrays", "sharded_lookahead"]

_DRAW_AXIS = MappingProxyType({"gains": 0, "observed": 1})


def draw_mesh(num_draws: int, devices: Any = None):
    """The mesh for `num_draws` draws: the largest prefix of the chosen devices that divides it."""
    mesh = batch_mesh(devices)
    require_int("num_draws", num_draws, 1)
    size = max(d for d in range(1, mesh.size + 1) if num_draws % d == 0)
    return mesh if size == mesh.size else batch_mesh(list(mesh.devices.flat[:size]))


def shard_lookahead_arrays(arrays: LookaheadArrays, devices: Any = None) -> LookaheadArrays:
    """The look-ahead inputs with the draw axis split over the devices, the rest replicated.

    Args:
        arrays: from `bayes_s2r.decision.lookahead.lookahead_arrays`.
        devices: which devices (see `draw_mesh` for how S is split).

    Returns:
        The same arrays, placed.
    """
    if not isinstance(arrays, LookaheadArrays):
        raise InputError("arrays", type(arrays).__name__, "LookaheadArrays")
    mesh = draw_mesh(int(arrays.gains.shape[0]), devices)

    def spec(name: str, x) -> NamedSharding:
        axes = [None] * x.ndim
        if name in _DRAW_AXIS:
            axes[_DRAW_AXIS[name]] = BATCH_AXIS
        return NamedSharding(mesh, PartitionSpec(*axes))

    return LookaheadArrays(*(put_global(x, spec(name, x)) for name, x in zip(arrays._fields, arrays)))


def sharded_lookahead(problem: Problem, config: DecideConfig, rule: Any = None, *,
                      devices: Any = None) -> LookaheadResult:
    """`lookahead(problem, config, rule)` with the posterior draws split over devices.

    Args:
        problem: from `bayes_s2r.decision.problem.build_problem`.
        config: `DecideConfig` (cvu_samples, seed, bucket, ...).
        rule: transition rule; None for the default `HeadroomTransition()`.
        devices: which devices.

    Returns:
        `LookaheadResult`, equal to the single-device one up to reduction order.
    """
    if not isinstance(problem, Problem):
        raise InputError("problem", type(problem).__name__, "a Problem from build_problem")
    if not isinstance(config, DecideConfig):
        raise InputError("config", type(config).__name__, "a DecideConfig (DecideConfig.make(...))")
    rule = resolve_transition(rule)
    if config.terminal:
        return lookahead(problem, config, rule)
    arrays = shard_lookahead_arrays(lookahead_arrays(problem, config.bucket), devices)
    return lookahead(problem, config, rule, arrays=arrays)

