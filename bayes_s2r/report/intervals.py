"""Frequentist intervals the report draws next to the Bayesian ones.

Wilson score intervals for one proportion, Newcombe's hybrid score interval for a
difference of two proportions, and the one-sided Clopper–Pearson upper bound used for
execution and deployment risk. All are closed forms over `scipy.stats`; they are checked
in the tests against `scipy.stats.binomtest` and published worked examples.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from scipy import stats

from bayes_s2r.errors import InputError, require_int_nonneg, require_probability

__all__ = ["Interval", "clopper_pearson_upper", "newcombe_difference", "wilson_interval"]


class Interval(NamedTuple):
    """A point estimate with a two-sided interval.

    Attributes:
        estimate: the point estimate (a proportion or a difference of proportions).
        low: lower end of the interval.
        high: upper end of the interval.
    """

    estimate: float
    low: float
    high: float


def _level(level: float) -> float:
    return require_probability("level", level)


def _counts(successes, trials, where: str) -> tuple[int, int]:
    x = require_int_nonneg(f"{where}.successes", successes)
    n = require_int_nonneg(f"{where}.trials", trials)
    if n == 0:
        raise InputError(f"{where}.trials", n, "at least one trial")
    if x > n:
        raise InputError(f"{where}.successes", x, f"at most trials={n}")
    return x, n


def wilson_interval(successes: int, trials: int, level: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion.

    Args:
        successes: number of successes x.
        trials: number of trials n >= 1.
        level: two-sided coverage.

    Returns:
        Interval(x/n, low, high).

    Example:
        >>> iv = wilson_interval(81, 263)          # Newcombe (1998a), method 3
        >>> round(iv.low, 4), round(iv.high, 4)
        (0.2553, 0.3662)
    """
    x, n = _counts(successes, trials, "wilson_interval")
    z = float(stats.norm.ppf(0.5 + _level(level) / 2))
    p = x / n
    denom = n + z * z
    centre = (x + z * z / 2) / denom
    half = z / denom * math.sqrt(x * (n - x) / n + z * z / 4)
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half))


def newcombe_difference(successes_a: int, trials_a: int, successes_b: int, trials_b: int,
                        level: float = 0.95) -> Interval:
    """Newcombe's hybrid score interval for p_a − p_b (Newcombe 1998b, method 10).

    Built from the two Wilson intervals. It treats the two arms as independent, which for
    matched (paired) evaluations with positively correlated arms is conservative: the
    paired version subtracts a correlation term that needs the discordant-pair counts,
    which marginal counts do not carry.

    Args:
        successes_a, trials_a: counts of arm a (e.g. the treated policy).
        successes_b, trials_b: counts of arm b (e.g. the control policy).
        level: two-sided coverage.

    Returns:
        Interval(p_a − p_b, low, high).

    Example:
        >>> iv = newcombe_difference(56, 70, 48, 80)   # Newcombe (1998b), example (a)
        >>> round(iv.low, 4), round(iv.high, 4)
        (0.0524, 0.3339)
    """
    a = wilson_interval(successes_a, trials_a, level)
    b = wilson_interval(successes_b, trials_b, level)
    d = a.estimate - b.estimate
    low = d - math.sqrt((a.estimate - a.low) ** 2 + (b.high - b.estimate) ** 2)
    high = d + math.sqrt((a.high - a.estimate) ** 2 + (b.estimate - b.low) ** 2)
    return Interval(d, max(-1.0, low), min(1.0, high))


def clopper_pearson_upper(events: int, trials: int, delta: float) -> float:
    """One-sided Clopper–Pearson upper bound at level 1 − delta on an event probability.

    It is `bayes_s2r.belief.risk.clopper_pearson_ucb`, so the report shows the very bound
    the decision used; this wrapper names the report's fields in its errors. With no trials
    the bound is 1 (nothing is known).

    Args:
        events: number of events (e.g. unsafe executions).
        trials: number of trials (executions); 0 gives 1.0.
        delta: one-sided error level, in (0, 1).

    Returns:
        The upper bound u with P(Binomial(trials, u) <= events) = delta.

    Example:
        >>> round(clopper_pearson_upper(0, 59, 0.05), 4)   # the "rule of three" regime
        0.0495
    """
    k = require_int_nonneg("clopper_pearson_upper.events", events)
    n = require_int_nonneg("clopper_pearson_upper.trials", trials)
    if k > n:
        raise InputError("clopper_pearson_upper.events", k, f"at most trials={n}")
    require_probability("delta", delta)
    from bayes_s2r.belief.risk import clopper_pearson_ucb  # NumPyro and JAX: only when drawn

    return float(clopper_pearson_ucb(k, n, delta))
