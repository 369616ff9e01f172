"""Options of `decide` as one validated NamedTuple, and the decision functional.

The decision functional turns the belief about one candidate's gain into the number the
rule maximises. It is one choice applied everywhere (U0, the look-ahead G0, the
multi-objective layer):

- ``"mean"``: the posterior mean μ.
- ``"lcb"``: a lower quantile of the gain at `utility_level`, in its Gaussian moment form
  μ + σ·Φ⁻¹(level).
- ``"cvar"``: the mean of the gain over its worst `utility_level` tail, in its Gaussian
  moment form μ − σ·φ(Φ⁻¹(level))/level.
- ``"adopt"``: the gain a try brings when its policy is kept only if its paired evaluation
  shows it better (the campaign's adoption rule): E[ΔJ · P(adopt | ΔJ)], where P(adopt | ΔJ)
  is the chance that the candidate's own evaluation (its outcome model: episodes per arm,
  or the measurement noise) comes out above zero when the true gain is ΔJ. A small true gain
  is kept about half the time and a small loss is kept too, so an uncertain candidate is not
  valued as if the evaluation revealed the sign of ΔJ exactly; with a noiseless evaluation
  (no outcome model) it is E[max(ΔJ, 0)]. U0 takes it exactly over the posterior draws,
  which respect ΔJ ≤ 1 − J (a Gaussian with the same moments would see room above a policy
  at J = 1). The Gaussian moment form E[X·Φ(X/σ_e)] = μ·Φ(μ/s) + (σ²/s)·φ(μ/s),
  s² = σ² + σ_e², is used where only moments are at hand.
  A try that would make things worse costs its price but not its loss, so an uncertain
  candidate with a mean below zero can still be worth its price. In the look-ahead the
  deployed policy then changes only in the simulated outcomes whose evaluation shows an
  improvement (the other outcomes keep the current policy and its gains).

The moment forms need only the mean and variance of each gain, which the look-ahead gets
from the reweighted draws at the cost of one extra matrix product; an empirical quantile
under importance weights would need a sort per candidate and outcome.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import special

from bayes_s2r.errors import (
    InputError,
    require_bool,
    require_choice,
    require_finite,
    require_finite_nonneg,
    require_int,
    require_probability,
    require_seed,
)

__all__ = ["CONTINUATIONS", "MULTI_MODES", "UTILITIES", "DecideConfig", "adopt_moment", "adoption_probability",
           "evaluation_sd",
           "positive_part", "utility_constant", "utility_label", "utility_value"]

UTILITIES = ("mean", "lcb", "cvar", "adopt")
MULTI_MODES = ("lexicographic", "pareto")
CONTINUATIONS = ("g0", "rollout")


class DecideConfig(NamedTuple):
    """Every option of `decide`, validated by `DecideConfig.make`.

    Attributes:
        alpha_exec: execution-risk threshold α_exec of the safety gate, in [0, 1].
        delta: the gate uses the UCB at level 1 − δ; δ in (0, 1).
        beta: weight β ≥ 0 of the look-ahead value in Q = U0 + β·CVU.
        cvu_samples: simulated outcomes per candidate (K ≥ 2).
        terminal: no next decision: CVU := 0.
        seed: seed of the look-ahead's outcome draws (same seed, same answer).
        utility: decision functional, one of `UTILITIES`.
        utility_level: tail level of "lcb"/"cvar", in (0, 0.5].
        collapse_ess: below this effective sample size (in draws) the importance weights
            are replaced by the moment-matched Gaussian update.
        bucket: the candidate axis is padded to a multiple of `bucket` rounded up to a
            power of two times `bucket`, so a shrinking set reuses the compiled look-ahead.
        chunk_bytes: upper bound on the bytes of one chunk of importance weights; outcomes
            are processed in chunks that fit it (bounds peak memory). Bigger chunks give
            XLA's threads more work per step; 4 MiB ran the look-ahead in half the time of
            1 MiB (benchmarks/bench_decide.py).
        objectives: objective names in priority order (the first is the primary one, on
            which U0/CVU/Q are computed); None means just the belief's primary objective.
        objective_tol: per secondary objective, the lexicographic tolerance.
        multi: "lexicographic" or "pareto".
        allow_bad_belief: accept a belief whose diagnostics are not ok.
        lookahead_depth: decisions the look-ahead sees after m: 1 (DESIGN's CVU, the default)
            or 2. A one-step look-ahead cannot value an experiment whose worth shows only two
            decisions later, e.g. a cheap pilot that decides which of several costly tries to
            make; depth 2 costs about `inner_samples` × `inner_draws` / draws one-step
            look-aheads.
        inner_samples: simulated outcomes per candidate of the second step (depth 2).
        inner_draws: draws that carry each next state in the second step (depth 2; at most
            the belief's draws).
        continuation: what stands in for the value V_{t+1} of the rest of the campaign in
            CVU: "g0" (DESIGN's G0, one more decision) or "rollout" (the value of a base
            policy run for `horizon` more decisions in scenarios drawn from the posterior;
            see `bayes_s2r.decision.rollout`).
        horizon: decisions left after this one, for the "rollout" continuation (0: none,
            CVU = 0).
    """

    alpha_exec: float = 0.05
    delta: float = 0.05
    beta: float = 1.0
    cvu_samples: int = 1024
    terminal: bool = False
    seed: int = 0
    utility: str = "mean"
    utility_level: float = 0.1
    collapse_ess: float = 50.0
    bucket: int = 8
    chunk_bytes: int = 2**22  # 4 MiB: measured fastest on a 2-core CPU (32 x 4,000 x 256)
    objectives: tuple[str, ...] | None = None
    objective_tol: tuple[float, ...] = ()
    multi: str = "lexicographic"
    allow_bad_belief: bool = False
    lookahead_depth: int = 1
    inner_samples: int = 32
    inner_draws: int = 512
    continuation: str = "g0"
    horizon: int = 1

    @classmethod
    def make(cls, **kwargs: Any) -> DecideConfig:
        """Validate every option in plain Python; InputError names the field and the value."""
        cfg = cls(**kwargs)
        alpha = require_probability("alpha_exec", cfg.alpha_exec, closed=True)
        delta = require_probability("delta", cfg.delta)
        beta = require_finite_nonneg("beta", cfg.beta)
        k = require_int("cvu_samples", cfg.cvu_samples, 2)
        for flag in ("terminal", "allow_bad_belief"):
            require_bool(flag, getattr(cfg, flag))
        seed = require_seed("seed", cfg.seed)
        require_choice("utility", cfg.utility, UTILITIES)
        level = require_finite("utility_level", cfg.utility_level)
        if not 0 < level <= 0.5:
            raise InputError("utility_level", cfg.utility_level, "a level in (0, 0.5]")
        ess = require_finite_nonneg("collapse_ess", cfg.collapse_ess)
        bucket = require_int("bucket", cfg.bucket, 1)
        chunk = require_int("chunk_bytes", cfg.chunk_bytes, 2**16)
        objectives = cfg.objectives
        if objectives is not None:
            objectives = (objectives,) if isinstance(objectives, str) else tuple(objectives)
            if not objectives or not all(isinstance(o, str) and o for o in objectives) or len(
                set(objectives)) != len(objectives):
                raise InputError("objectives", cfg.objectives, "distinct objective names in priority order")
        tol = tuple(require_finite_nonneg(f"objective_tol[{i}]", t) for i, t in enumerate(cfg.objective_tol))
        if objectives is not None and len(tol) > len(objectives):
            raise InputError("objective_tol", cfg.objective_tol,
                             f"at most one tolerance per objective ({len(objectives)})")
        depth = require_int("lookahead_depth", cfg.lookahead_depth, 1, 2)
        inner_k = require_int("inner_samples", cfg.inner_samples, 2)
        inner_s = require_int("inner_draws", cfg.inner_draws, 16)
        require_choice("multi", cfg.multi, MULTI_MODES)
        require_choice("continuation", cfg.continuation, CONTINUATIONS)
        horizon = require_int("horizon", cfg.horizon, 0)
        return cfg._replace(
            alpha_exec=alpha, delta=delta, beta=beta, cvu_samples=k, seed=seed, utility_level=level,
            collapse_ess=ess, bucket=bucket, chunk_bytes=chunk, objectives=objectives, objective_tol=tol,
            lookahead_depth=depth, inner_samples=inner_k, inner_draws=inner_s, horizon=horizon,
        )


def utility_constant(utility: str, level: float) -> float:
    """The factor κ with functional = μ + κ·σ (0 for the mean and for "adopt", which is not
    of that form: see `positive_part`)."""
    if utility in ("mean", "adopt"):
        return 0.0
    z = float(special.ndtri(level))
    if utility == "lcb":
        return z
    return -float(_NumpyNormal.pdf(z)) / level


def utility_label(utility: str, level: float) -> str:
    """The functional's name as reports show it: "mean", "adopt", or e.g. "lcb(0.1)"."""
    return utility if utility in ("mean", "adopt") else f"{utility}({level:g})"


def positive_part(mean, sd, xp=np):
    """E[max(X, 0)] for X ~ N(mean, sd²): mean·Φ(mean/sd) + sd·φ(mean/sd); max(mean, 0) at sd = 0.

    `xp` is the array namespace (NumPy, or `jax.numpy` inside compiled code).
    """
    norm = _norm(xp)
    pos = sd > 0
    safe = xp.where(pos, sd, 1.0)
    z = mean / safe
    return xp.where(pos, mean * norm.cdf(z) + safe * norm.pdf(z), xp.maximum(mean, 0.0))


def adoption_probability(theta, kind, a, b, xp=np):
    """P(adopt | ΔJ = θ): the chance that a candidate's evaluation shows it better.

    `(kind, a, b)` are its outcome model's `params()`. Paired binomial (a episodes per arm,
    control at J = b): the new policy is kept when its successes exceed the control's,
    P(T − C ≥ 1) ≈ Φ((θ − 0.5/a)/sd) with sd² = (p₁(1 − p₁) + b(1 − b))/a, p₁ = b + θ.
    Gaussian (noise sd a): Φ(θ/a). Anything else: a noiseless evaluation, 1{θ > 0}.
    """
    norm = _norm(xp)
    theta = xp.asarray(theta)
    n = xp.maximum(a, 1.0)
    p1 = xp.clip(b + theta, 0.0, 1.0)
    sd_b = xp.sqrt((p1 * (1.0 - p1) + b * (1.0 - b)) / n)
    binom = xp.where(sd_b > 0, norm.cdf((theta - 0.5 / n) / xp.where(sd_b > 0, sd_b, 1.0)), theta > 0.5 / n)
    gauss = norm.cdf(theta / xp.where(kind == 1, a, 1.0))
    return xp.where(kind == 2, binom, xp.where(kind == 1, gauss, (theta > 0).astype(theta.dtype)))


def evaluation_sd(kind, a, b, xp=np):
    """The sd σ_e of a candidate's evaluation of a gain near 0 (0 for a noiseless one)."""
    n = xp.maximum(a, 1.0)
    return xp.where(kind == 2, xp.sqrt(2.0 * b * (1.0 - b) / n), xp.where(kind == 1, a, 0.0))


def adopt_moment(mean, sd, noise_sd, xp=np):
    """E[X·Φ(X/σ_e)] for X ~ N(mean, sd²): μ·Φ(μ/s) + (σ²/s)·φ(μ/s), s² = σ² + σ_e².

    The "adopt" functional in moment form; `positive_part` when σ_e = 0.
    """
    norm = _norm(xp)
    s = xp.sqrt(sd**2 + noise_sd**2)
    pos = s > 0
    safe = xp.where(pos, s, 1.0)
    z = mean / safe
    return xp.where(pos, mean * norm.cdf(z) + sd**2 / safe * norm.pdf(z), xp.maximum(mean, 0.0))


class _NumpyNormal:
    """The standard normal's cdf and pdf in NumPy (scipy.special: scipy.stats costs a third of
    a second to import, and these are what scipy.stats.norm computes)."""

    cdf = staticmethod(special.ndtr)

    @staticmethod
    def pdf(z):
        return np.exp(-0.5 * np.square(z)) / np.sqrt(2.0 * np.pi)


def _norm(xp):
    if xp is np:
        return _NumpyNormal
    import jax.scipy.stats

    return jax.scipy.stats.norm


def utility_value(mean, sd, utility: str, level: float):
    """The decision functional of gains with the given mean and sd (NumPy arrays)."""
    if utility == "adopt":
        return positive_part(np.asarray(mean, float), np.asarray(sd, float))
    kappa = utility_constant(utility, level)
    return mean if kappa == 0.0 else mean + kappa * sd
