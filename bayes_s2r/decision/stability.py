"""How stable the choice is: decision-flip probability and weight robustness.

Both hold the look-ahead value CVU at its estimate (it is not recomputed per draw or per
weight): p_best re-scores each candidate with one posterior draw θ^(s) in place of the
decision functional of its gain; the weight robustness moves one resource weight λ_r with
the others fixed. With CVU held, Q(c) = gain(c) + β·CVU(c) − Σ_r λ_r·ΔC_r(c) is linear in
λ_r, so the interval on which the chosen candidate stays the argmax is exact for that
approximation. The stop's score (`stop_score`) is held with CVU.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bayes_s2r.vocab import RESOURCES

__all__ = ["STOP", "flip_scores", "p_best", "stop_score", "weight_robustness"]

STOP = "(stop)"


def stop_score(g0_null: float, beta: float) -> float:
    """Q of the stop: U0 = 0 and, since no decision follows it, CVU = 0 − G0(s^∅).

    0 at the terminal round (no look-ahead: `g0_null` is NaN). Any candidate with
    U0 + β·E[G0(s^{m,Y})] > 0 scores above it.
    """
    return 0.0 if not math.isfinite(g0_null) else -float(beta) * float(g0_null)


def flip_scores(draw_gains: np.ndarray, c_lambda: np.ndarray, cvu: np.ndarray, beta: float) -> np.ndarray:
    """Scores [S, C]: θ^(s) − C_λ + β·CVU for each draw and candidate."""
    return draw_gains - c_lambda[None, :] + beta * cvu[None, :]


def p_best(names, draw_gains: np.ndarray, c_lambda: np.ndarray, cvu: np.ndarray, beta: float,
           feasible: np.ndarray, stop_q: float = 0.0) -> pd.Series:
    """Share of posterior draws in which each feasible candidate (or the stop) is the argmax.

    Args:
        names: candidate names [C].
        draw_gains: gain draws [S, C] (zeros for diagnosis and model_update).
        c_lambda, cvu: priced cost and look-ahead value [C].
        beta: weight of CVU.
        feasible: mask [C]; infeasible candidates are not scored.
        stop_q: the stop's score (`Decision.stop_Q`); a draw in which no candidate scores
            above it counts for the stop.

    Returns:
        A Series over the feasible names and "(stop)" that sums to 1.
    """
    idx = np.flatnonzero(feasible)
    labels = [names[i] for i in idx] + [STOP]
    s = draw_gains.shape[0]
    counts = np.zeros(len(labels))
    if idx.size:
        scores = flip_scores(draw_gains[:, idx], c_lambda[idx], cvu[idx], beta)
        top = scores.argmax(axis=1)
        stop = scores.max(axis=1) <= stop_q
        counts[: idx.size] = np.bincount(top[~stop], minlength=idx.size)
        counts[-1] = stop.sum()
    else:
        counts[-1] = s
    return pd.Series(counts / s, index=labels, name="p_best")


def _interval(coef: np.ndarray, rhs: np.ndarray) -> tuple[float, float]:
    """{λ ≥ 0 : coef·λ ≥ rhs for every row} as (low, high); (nan, nan) if empty."""
    low, high = 0.0, math.inf
    tol = 1e-12
    for a, r in zip(coef, rhs):
        if a > tol:
            low = max(low, r / a)
        elif a < -tol:
            high = min(high, r / a)
        elif r > tol:
            return math.nan, math.nan
    return (low, high) if low <= high + 1e-12 else (math.nan, math.nan)


def weight_robustness(best: int | None, q: np.ndarray, cost: np.ndarray, lam: np.ndarray,
                      feasible: np.ndarray, stop_q: float = 0.0) -> pd.DataFrame:
    """For each resource r, the interval of λ_r (others fixed, CVU held) keeping the choice.

    Args:
        best: index of the chosen candidate, or None for a stop.
        q: Q [C] at the current weights.
        cost: ΔC [C, 3]; lam: λ_t [3]; feasible: mask [C].
        stop_q: the stop's Q (held, like CVU).

    Returns:
        DataFrame with columns resource, current, low, high (high may be inf). For a stop
        with an empty feasible set the choice does not depend on λ: [0, inf).
    """
    rows = []
    idx = np.flatnonzero(feasible)
    for r, res in enumerate(RESOURCES):
        d = cost[:, r]
        with np.errstate(invalid="ignore"):  # an exhausted resource has λ_r = ∞; unused, it costs 0
            base = q + np.where(d > 0, lam[r] * d, 0.0)  # Q(λ_r) = base − λ_r·ΔC_r
        if best is None:
            # stop stays: base_c − λ d_c ≤ stop_q  ⇔  d_c·λ ≥ base_c − stop_q
            lo, hi = _interval(d[idx], base[idx] - stop_q)
        else:
            others = idx[idx != best]
            # Q_b ≥ Q_c  ⇔  (d_c − d_b)·λ ≥ base_c − base_b;   Q_b > stop_q  ⇔  −d_b·λ ≥ stop_q − base_b
            coef = np.concatenate([d[others] - d[best], [-d[best]]])
            rhs = np.concatenate([base[others] - base[best], [stop_q - base[best]]])
            lo, hi = _interval(coef, rhs)
        rows.append({"resource": res, "current": float(lam[r]), "low": lo, "high": hi})
    return pd.DataFrame(rows, columns=["resource", "current", "low", "high"])
