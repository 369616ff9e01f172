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
    _episode_count,
    policy_id,
    policy_label,
    sample_init,
    simulate_batch,
)
from bayes_s2r.sim.space import ParamSpace
from bayes_s2r.sim.task import Task, simulate_task
from bayes_s2r.sim.world import World

__all__ = ["SweepResult", "pair_effects", "rank_directions", "sensitivity_sweep"]


class SweepResult(NamedTuple):
    """Result of `sensitivity_sweep`.

    Attributes:
        trials: `SensitivityTrial` records (single-direction trials, then pair trials).
        table: DataFrame with one row per trial: direction, level, pair_direction, pair_level,
            successes, episodes, success_rate, mean_score (for a `Task`: the mean return).
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


def sensitivity_sweep(key: jax.Array, world: World | Task, policy, space: ParamSpace | None = None, *,
                      directions: Sequence[str] | None = None,
                      levels: Sequence[float] = (0.0, 0.5, 1.0, 1.5),
                      episodes: int = 32,
                      pairs: Sequence[tuple[str, str]] | bool = False,
                      pair_levels: Sequence[float] = (0.5, 1.0),
                      policy_name: str | None = None, round: int = 0) -> SweepResult:
    """Sweep each direction (and optionally pairs) around `world`'s ξ, or a task's nominal model.

    Args:
        key: PRNG key (initial states and noise, shared by every condition).
        world: the sim world whose ξ is the level-0 point, or a `Task` (with `space`).
        policy: the policy evaluated (a `Policy` or `LinearPolicy` for a task).
        space: for a `Task`, the `ParamSpace` whose directions are swept (level ℓ is the value
            nominal + ℓ·unit); None for a `World`.
        directions: direction names (default: all of `DIRECTIONS`, or of `space`).
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
    if isinstance(world, Task):
        if not isinstance(space, ParamSpace):
            raise InputError("space", space, "a ParamSpace (the directions to sweep) for a Task")
        known = space.names
    elif space is not None:
        raise InputError("space", space, "None for a World (its directions are DIRECTIONS)")
    else:
        known = tuple(DIRECTIONS)
    names = tuple(directions) if directions is not None else known
    for d in names:
        if d not in known:
            raise InputError("directions", d, f"names among {known}")
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
            if len(p) != 2 or p[0] == p[1] or any(x not in known for x in p):
                raise InputError("pairs", p, "pairs (a, b) of two different direction names")
    plv = _levels(pair_levels, "pair_levels") if pair_list else ()
    if isinstance(world, Task):
        return _task_sweep(key, world, policy, space, names, lv, pair_list, plv, n,
                           policy_name or policy_label(policy), round)

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
    return _sweep_result(conds, stats, n, policy_name or policy_id(policy), round, world.protocol.horizon)


def _task_sweep(key, task, policy, space, names, lv, pair_list, plv, n, label, round) -> SweepResult:
    """The sweep on a `Task`: every condition on the same episode keys, in one batch."""
    conds = [(d, level, None, None, space.at_levels({d: level}, field=f"levels[{d}]"))
             for d in names for level in lv]
    for a, b in pair_list:
        for la, lb in itertools.product(plv, plv):
            conds.append((a, la, b, lb, space.at_levels({a: la, b: lb}, field=f"pair_levels[{a}, {b}]")))
    m = len(conds)
    keys = jnp.concatenate([jax.random.split(key, n)] * m)  # common random numbers
    values = np.repeat(np.stack([c[4] for c in conds]), n, axis=0)
    stats = simulate_task(key, task, policy, values, space=space, keys=keys)
    return _sweep_result(conds, stats, n, label, round, task.horizon)


def _sweep_result(conds, stats, n: int, label: str, round: int, horizon: int) -> SweepResult:
    """Records, table and ranking of a sweep whose `stats` hold n episodes per condition, in order."""
    m = len(conds)
    success = np.asarray(stats.success).reshape(m, n)
    score = np.asarray(stats.score).reshape(m, n)
    trials, rows = [], []
    for i, (d, level, pd_, pl, _) in enumerate(conds):
        s = int(success[i].sum())
        trials.append(SensitivityTrial(direction=d, level=level, successes=s, episodes=n, tier="proxy",
                                       policy=label, round=round, pair_direction=pd_, pair_level=pl))
        rows.append({"direction": d, "level": level, "pair_direction": pd_, "pair_level": pl,
                     "successes": s, "episodes": n, "success_rate": s / n,
                     "mean_score": float(score[i].mean())})
    table = pd.DataFrame(rows)
    return SweepResult(trials, table, rank_directions(table), m * n * horizon)


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


def pair_effects(table: pd.DataFrame) -> pd.DataFrame:
    """Single and joint effects of each pair condition, and their synergy.

    For a pair (a at la, b at lb), with success rates p0 (level 0), pa, pb (each alone at its
    level) and pab (together): effect_a = pa − p0, effect_b = pb − p0, effect_pair = pab − p0,
    synergy = effect_pair − effect_a − effect_b (0 when the effects add). Pair conditions whose
    single conditions (or level 0) are not in the table are left out; sweep with `levels`
    that include 0 and the `pair_levels`.

    Returns:
        DataFrame: direction, level, pair_direction, pair_level, effect_a, effect_b,
        effect_pair, synergy.
    """
    single = table[table["pair_direction"].isna()]
    rate = {(r.direction, round(float(r.level), 9)): r.success_rate for r in single.itertuples()}
    rows = []
    for r in table[table["pair_direction"].notna()].itertuples():
        a, la, b, lb = r.direction, round(float(r.level), 9), r.pair_direction, round(float(r.pair_level), 9)
        need = [(a, 0.0), (a, la), (b, lb)]
        if not all(k in rate for k in need):
            continue
        p0 = rate[(a, 0.0)]
        ea, eb, eab = rate[(a, la)] - p0, rate[(b, lb)] - p0, r.success_rate - p0
        rows.append({"direction": a, "level": r.level, "pair_direction": b, "pair_level": r.pair_level,
                     "effect_a": ea, "effect_b": eb, "effect_pair": eab, "synergy": eab - ea - eb})
    return pd.DataFrame(rows, columns=["direction", "level", "pair_direction", "pair_level",
                                       "effect_a", "effect_b", "effect_pair", "synergy"])
