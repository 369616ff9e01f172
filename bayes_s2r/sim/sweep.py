"""Sensitivity sweeps in sim (tier "proxy"): success at controlled perturbation levels.

Each direction (see `DIRECTIONS`) is moved to several levels, where level 1.0 is a plausible
real mismatch for that direction; pairs of directions are moved together on a grid to expose
synergy. Every condition runs on the same initial states and noise keys (common random
numbers), and all conditions go through the compiled rollouts in one batch.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import SensitivityTrial
from bayes_s2r.sim.params import DIRECTIONS, Params, perturb, stack_params
from bayes_s2r.sim.rollout import (
    LinearPolicy,
    _episode_count,
    policy_id,
    sample_init,
    simulate_batch,
)
from bayes_s2r.sim.world import World

__all__ = ["SweepResult", "rank_directions", "sensitivity_sweep"]


class SweepResult(NamedTuple):
    """Result of `sensitivity_sweep`.

    Attributes:
        trials: `SensitivityTrial` records (single-direction trials, then pair trials).
        table: DataFrame with one row per trial: direction, level, pair_direction, pair_level,
            successes, episodes, success_rate, mean_score.
        ranking: directions ordered by the drop in success rate at level 1.0 (largest first).
        sim_steps: simulated control steps used.
    """

    trials: list
    table: pd.DataFrame
    ranking: list
    sim_steps: int


def _levels(levels, field) -> tuple[float, ...]:
    out = tuple(levels)
    if not out or any(isinstance(x, bool) or not isinstance(x, (int, float)) or not np.isfinite(x) for x in out):
        raise InputError(field, levels, "one or more finite levels")
    return tuple(float(x) for x in out)


def sensitivity_sweep(key: jax.Array, world: World, policy: LinearPolicy, *,
                      directions: Sequence[str] | None = None,
                      levels: Sequence[float] = (0.0, 0.5, 1.0, 1.5),
                      episodes: int = 32,
                      pairs: Sequence[tuple[str, str]] | bool = False,
                      pair_levels: Sequence[float] = (0.5, 1.0),
                      policy_name: str | None = None, round: int = 0) -> SweepResult:
    """Sweep each direction (and optionally pairs) around `world`'s ξ.

    Args:
        key: PRNG key (initial states and noise, shared by every condition).
        world: the sim world whose ξ is the level-0 point.
        policy: the policy evaluated.
        directions: direction names (default: all of `DIRECTIONS`).
        levels: levels per direction (1.0 = a plausible real mismatch).
        episodes: episodes per condition.
        pairs: True for every pair of `directions`, or a list of (a, b) pairs.
        pair_levels: levels used on the pair grid (both directions take each combination).
        policy_name: label stored in the records (default: `policy_id(policy)`).
        round: campaign round stored in the records.

    Returns:
        `SweepResult`; its trials validate as ledger records.

    Example:
        >>> import jax
        >>> from bayes_s2r.sim import LinearPolicy, make_world
        >>> w = make_world()
        >>> r = sensitivity_sweep(jax.random.key(0), w, LinearPolicy.zeros(), directions=["mass"],
        ...                       levels=[0.0, 1.0], episodes=4)
        >>> [(t.direction, t.level) for t in r.trials]
        [('mass', 0.0), ('mass', 1.0)]
    """
    names = tuple(directions) if directions is not None else tuple(DIRECTIONS)
    for d in names:
        if d not in DIRECTIONS:
            raise InputError("directions", d, f"names among {tuple(DIRECTIONS)}")
    if len(set(names)) != len(names):
        raise InputError("directions", names, "distinct names")
    lv = _levels(levels, "levels")
    n = _episode_count(episodes)
    if pairs is True:
        pair_list = list(itertools.combinations(names, 2))
    elif pairs is False or pairs is None:
        pair_list = []
    else:
        pair_list = [tuple(p) for p in pairs]
        for p in pair_list:
            if len(p) != 2 or p[0] == p[1] or any(x not in DIRECTIONS for x in p):
                raise InputError("pairs", p, "pairs (a, b) of two different direction names")
    plv = _levels(pair_levels, "pair_levels") if pair_list else ()

    conds: list[tuple[str, float, str | None, float | None, Params]] = []
    for d in names:
        for level in lv:
            conds.append((d, level, None, None, perturb(world.params, d, level)))
    for a, b in pair_list:
        for la, lb in itertools.product(plv, plv):
            conds.append((a, la, b, lb, perturb(perturb(world.params, a, la), b, lb)))

    k_init, k_noise = jax.random.split(key)
    q0, qd0 = sample_init(k_init, world, n)
    m = len(conds)
    params = stack_params([c[4] for c in conds for _ in range(n)])
    init = (jnp.tile(q0, (m, 1)), jnp.tile(qd0, (m, 1)))
    stats = simulate_batch(k_noise, world, policy, params, init=init)
    success = np.asarray(stats.success).reshape(m, n)
    score = np.asarray(stats.score).reshape(m, n)
    label = policy_name or policy_id(policy)
    trials, rows = [], []
    for i, (d, level, pd_, pl, _) in enumerate(conds):
        s = int(success[i].sum())
        trials.append(SensitivityTrial(direction=d, level=level, successes=s, episodes=n, tier="proxy",
                                       policy=label, round=round, pair_direction=pd_, pair_level=pl))
        rows.append({"direction": d, "level": level, "pair_direction": pd_, "pair_level": pl,
                     "successes": s, "episodes": n, "success_rate": s / n,
                     "mean_score": float(score[i].mean())})
    table = pd.DataFrame(rows)
    return SweepResult(trials, table, rank_directions(table), m * n * world.protocol.horizon)


def rank_directions(table: pd.DataFrame, level: float = 1.0) -> list[str]:
    """Directions ordered by the drop in success rate from level 0 to `level` (ties: score drop).

    Directions without both levels in the table are left out.
    """
    single = table[table["pair_direction"].isna()]
    drops = []
    for d, g in single.groupby("direction", sort=False):
        at = {round(float(r.level), 9): r for r in g.itertuples()}
        if 0.0 in at and round(level, 9) in at:
            hi = at[round(level, 9)]
            drops.append((at[0.0].success_rate - hi.success_rate, at[0.0].mean_score - hi.mean_score, d))
    drops.sort(key=lambda x: (-x[0], -x[1]))
    return [d for *_, d in drops]
