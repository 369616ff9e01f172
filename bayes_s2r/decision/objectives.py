"""Several objectives (success, energy, cycle time, wear) ranked without collapsing into one J.

How gains on several objectives are given:

- a `GainBelief` whose plain columns are gains on the primary objective and whose columns
  named ``"<candidate>@<objective>"`` are gains on a secondary objective, or
- a mapping ``{objective: GainBelief}``; the primary one is the first of
  `config.objectives` (default ``"success"``).

Every gain is an improvement (positive is better: energy saved, seconds of cycle time
removed, wear avoided). Diagnosis and model_update candidates gain 0 on every objective,
like the stop. An adaptation that lists an objective in `Candidate.objectives` must have a
column for it; one that does not list it gains 0 there.

The primary objective carries the whole decision rule (priced costs, CVU, Q); the
secondary objectives enter as the decision functional of their gains. Then:

- ``multi="lexicographic"``: among the feasible candidates and the stop, keep those whose Q
  is within `objective_tol[0]` of the best Q, then those within `objective_tol[1]` of the
  best gain on the second objective, and so on; the best survivor on the last objective
  wins (ties: larger Q). With zero tolerances this is the plain argmax of Q.
- ``multi="pareto"``: non-dominated sorting of (Q, gain on each secondary objective) over
  the feasible candidates and the stop; `pareto_rank` 0 is the front, reported in full;
  the front member with the largest Q is `best`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from bayes_s2r.belief.posterior import GainBelief
from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.stability import STOP
from bayes_s2r.errors import InputError

__all__ = ["ObjectiveSplit", "Ranking", "rank_alternatives", "secondary_gains", "split_objectives"]

PRIMARY_DEFAULT = "success"


class ObjectiveSplit(NamedTuple):
    """The primary belief and the secondary objectives' sources.

    Attributes:
        primary: the GainBelief of the primary objective (plain candidate columns).
        objectives: objective names in priority order (primary first).
        sources: objective -> (GainBelief, column-name suffix: "" or "@<objective>").
    """

    primary: GainBelief
    objectives: tuple[str, ...]
    sources: dict


def split_objectives(belief, config: DecideConfig) -> ObjectiveSplit:
    """Recognise the two ways of giving several objectives; validate the objective names."""
    if isinstance(belief, Mapping):
        if not belief:
            raise InputError("belief", belief, "a GainBelief or a non-empty mapping objective -> GainBelief")
        for k, v in belief.items():
            if not isinstance(v, GainBelief):
                raise InputError(f"belief[{k!r}]", v, "a GainBelief")
        order = config.objectives or ((PRIMARY_DEFAULT,) + tuple(k for k in belief if k != PRIMARY_DEFAULT))
        for o in order:
            if o not in belief:
                raise InputError("objectives", o, f"an objective with a belief (have {list(belief)})")
        if not config.allow_bad_belief:
            for o in order[1:]:
                diag = belief[o].diagnostics or {}
                if not diag.get("ok", False):
                    raise InputError(f"belief[{o!r}].diagnostics", diag.get("reason") or diag,
                                     "a belief whose diagnostics are ok (or allow_bad_belief=True)")
        return ObjectiveSplit(belief[order[0]], tuple(order), {o: (belief[o], "") for o in order[1:]})
    if not isinstance(belief, GainBelief):
        raise InputError("belief", belief, "a GainBelief or a mapping objective -> GainBelief")
    found = []
    for n in belief.names:
        if "@" in n and not n.startswith("sensitivity:"):
            obj = n.rsplit("@", 1)[1]
            if obj not in found:
                found.append(obj)
    primary = (config.objectives or (PRIMARY_DEFAULT,))[0]
    order = config.objectives or (primary, *[o for o in found if o != primary])
    for o in order[1:]:
        if o not in found:
            raise InputError("objectives", o, f"an objective with 'name@{o}' columns in the belief (found {found})")
    return ObjectiveSplit(belief, tuple(order), {o: (belief, f"@{o}") for o in order[1:]})


def secondary_gains(split: ObjectiveSplit, candidates, config: DecideConfig) -> pd.DataFrame:
    """Decision functional of each candidate's gain on each secondary objective [C, k−1]."""
    cols = {}
    for o in split.objectives[1:]:
        src, suffix = split.sources[o]
        vals = np.zeros(len(candidates))
        for i, c in enumerate(candidates):
            if c.role != "adaptation":
                continue
            col = c.name + suffix
            if col in src:
                d = src.column(col)
                primary = split.primary.column(c.name)
                joint = src is split.primary and len(d) == len(primary)
                vals[i] = config.functional.of_secondary(d, primary, joint=joint)
            elif o in c.objectives:
                raise InputError("belief.names", col, f"a column for {c.name!r}, which lists objective {o!r}")
        cols[f"gain@{o}"] = vals
    return pd.DataFrame(cols, index=[c.name for c in candidates])


class Ranking(NamedTuple):
    """Result of the multi-objective layer.

    Attributes:
        best: index of the chosen candidate, or None for the stop.
        rank: per candidate, lexicographic levels survived or Pareto rank (NaN if infeasible).
        front: names on the Pareto front (pareto) or the final survivors (lexicographic).
    """

    best: int | None
    rank: np.ndarray
    front: tuple[str, ...]


def _pareto_ranks(v: np.ndarray) -> np.ndarray:
    n = v.shape[0]
    ge = (v[:, None, :] >= v[None, :, :]).all(-1)
    gt = (v[:, None, :] > v[None, :, :]).any(-1)
    dominates = ge & gt  # [i, j]: i dominates j
    rank = np.full(n, -1)
    left = np.ones(n, bool)
    level = 0
    while left.any():
        front = left & ~dominates[left].any(0)  # not dominated by any remaining alternative
        rank[front] = level
        left &= ~front
        level += 1
    return rank


def rank_alternatives(names, q: np.ndarray, feasible: np.ndarray, secondary: pd.DataFrame,
                      config: DecideConfig, stop_q: float = 0.0) -> Ranking:
    """Pick among the feasible candidates and the stop (Q = `stop_q`, no secondary gain) on
    (Q, secondary gains)."""
    idx = np.flatnonzero(feasible)
    labels = [names[i] for i in idx] + [STOP]
    v = np.column_stack([np.append(q[idx], stop_q)] + [np.append(secondary[c].to_numpy()[idx], 0.0)
                                                    for c in secondary.columns])
    rank = np.full(len(names), np.nan)
    if config.multi == "pareto":
        r = _pareto_ranks(v)
        rank[idx] = r[:-1]
        front = np.flatnonzero(r == 0)
        win = front[np.argmax(v[front, 0])]
    else:
        tol = list(config.objective_tol) + [0.0] * (v.shape[1] - len(config.objective_tol))
        surv = np.arange(v.shape[0])
        survived = np.zeros(v.shape[0])
        for j in range(v.shape[1]):
            keep = v[surv, j] >= v[surv, j].max() - tol[j] - 1e-15
            surv = surv[keep]
            survived[surv] += 1
        rank[idx] = survived[:-1]
        last = v[surv]
        order = np.lexsort((last[:, 0], last[:, -1]))  # by last objective, ties by Q
        win = surv[order[-1]]
        front = surv
    best = None if win == len(idx) else int(idx[win])
    return Ranking(best, rank, tuple(labels[i] for i in front))
