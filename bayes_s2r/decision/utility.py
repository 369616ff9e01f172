"""The decision functional: the number the rule maximises for the belief about one gain.

It is one choice applied everywhere (U0, the look-ahead's next-state values, the rollout's
base policy, the multi-objective layer), made by `Utility.of(config)`:

- ``"mean"``: the posterior mean μ.
- ``"lcb"``: a lower quantile of the gain at `level`, in its Gaussian moment form
  μ + σ·Φ⁻¹(level).
- ``"cvar"``: the mean of the gain over its worst `level` tail, in its Gaussian moment form
  μ − σ·φ(Φ⁻¹(level))/level.
- ``"adopt"``: the gain a try brings when its policy is kept only if its paired evaluation
  shows it better (the campaign's adoption rule): E[ΔJ · P(adopt | ΔJ)], where P(adopt | ΔJ)
  is the chance that the candidate's own evaluation (its outcome model: episodes per arm,
  or the measurement noise) comes out above zero when the true gain is ΔJ
  (`adoption_probability`). A small true gain is kept about half the
  time and a small loss is kept too, so an uncertain candidate is not valued as if the
  evaluation revealed the sign of ΔJ exactly; with a noiseless evaluation (no outcome model)
  it is E[max(ΔJ, 0)]. U0 takes it exactly over the posterior draws, which respect
  ΔJ ≤ 1 − J (a Gaussian with the same moments would see room above a policy at J = 1). The
  Gaussian moment form E[X·Φ(X/σ_e)] = μ·Φ(μ/s) + (σ²/s)·φ(μ/s), s² = σ² + σ_e², is used
  where only moments are at hand.
  A try that would make things worse costs its price but not its loss, so an uncertain
  candidate with a mean below zero can still be worth its price. In the look-ahead the
  deployed policy then changes only in the simulated outcomes whose evaluation shows an
  improvement (the other outcomes keep the current policy and its gains).

The moment forms need only the mean and variance of each gain, which the look-ahead gets
from the reweighted draws at the cost of one extra matrix product; an empirical quantile
under importance weights would need a sort per candidate and outcome.

Every method takes `xp`, the array namespace (NumPy, or `jax.numpy` inside compiled code).
`Utility` is hashable, so compiled functions take it as a static argument.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import special

__all__ = ["UTILITIES", "Utility", "adopt_moment", "adopt_shape", "adoption_probability", "evaluation_noise",
           "evaluation_sd", "normal", "positive_part", "shows_improvement"]

UTILITIES = ("mean", "lcb", "cvar", "adopt")


class Utility(NamedTuple):
    """A decision functional (see the module docstring).

    Attributes:
        name: one of `UTILITIES`.
        level: the tail level of "lcb" and "cvar" (unused by the others).

    Example:
        >>> u = Utility("lcb", 0.1)
        >>> round(u.kappa, 4), u.label
        (-1.2816, 'lcb(0.1)')
        >>> float(Utility("mean").of_moments(0.2, 1.0))
        0.2
    """

    name: str = "mean"
    level: float = 0.1

    @classmethod
    def of(cls, config: Any) -> Utility:
        """The functional a `DecideConfig` names. The level is kept only where it matters, so
        "mean" and "adopt" compile one look-ahead whatever `utility_level` says."""
        level = float(config.utility_level) if config.utility in ("lcb", "cvar") else 0.0
        return cls(config.utility, level)

    @property
    def adopts(self) -> bool:
        """A try's policy is kept only when its evaluation shows an improvement."""
        return self.name == "adopt"

    @property
    def uses_spread(self) -> bool:
        """The functional depends on the gain's spread, not only its mean."""
        return self.name != "mean"

    @property
    def kappa(self) -> float:
        """κ with functional = μ + κ·σ, for "mean", "lcb" and "cvar" ("adopt" is not of that form)."""
        if self.name in ("mean", "adopt"):
            return 0.0
        z = float(special.ndtri(self.level))
        return z if self.name == "lcb" else -float(normal(np).pdf(z)) / self.level

    @property
    def label(self) -> str:
        """The functional's name as reports show it: "mean", "adopt", or e.g. "lcb(0.1)"."""
        return self.name if self.name in ("mean", "adopt") else f"{self.name}({self.level:g})"

    @property
    def exact_on_draws(self) -> bool:
        """U0 is taken over the posterior draws (`of_draws`) rather than their moments."""
        return self.adopts

    def of_draws(self, theta, kind, a, b, xp=np):
        """Per-draw values whose mean is the functional, for a gain with draws `theta` measured
        by the outcome model `(kind, a, b)`; only where `exact_on_draws`."""
        if not self.exact_on_draws:
            raise ValueError(f"the {self.label} functional is taken from moments, not draws")
        return theta * adoption_probability(theta, kind, a, b, xp)

    def of_moments(self, mean, sd, noise_sd=0.0, xp=np):
        """The functional of gains with the given mean and sd; `noise_sd` is the sd of the
        evaluation that decides adoption (used by "adopt" only)."""
        if self.adopts:
            return adopt_moment(mean, sd, noise_sd, xp)
        return mean + self.kappa * sd if self.uses_spread else mean

    def of_secondary(self, gain, primary_gain, *, joint: bool):
        """The functional of a gain on a secondary objective (draws, NumPy). Under "adopt" the
        policy is kept by its primary gain: E[gain · 1{primary > 0}], over the `joint` draws
        when the two come from one posterior (else the two taken as independent)."""
        if self.adopts:
            kept = primary_gain > 0
            return (gain * kept).mean() if joint else gain.mean() * kept.mean()
        return self.of_moments(gain.mean(), gain.std())

    def keeps(self, shows_improvement):
        """Whether a try's policy is deployed, given whether its evaluation shows an improvement."""
        return shows_improvement if self.adopts else True


def evaluation_noise(theta, kind, a, b, xp=np):
    """How a candidate's evaluation sees a true gain θ: it measures θ + sd·ε and keeps the new
    policy when the measurement is above `threshold`. Returns (sd, threshold).

    `(kind, a, b)` are its outcome model's `params()`. Paired binomial (a episodes per arm,
    control at J = b): the new policy is kept when its successes exceed the control's, in the
    normal approximation sd² = (p₁(1 − p₁) + b(1 − b))/a with p₁ = b + θ, threshold 0.5/a
    (the counts are whole). Gaussian (noise sd a): threshold 0. Anything else: a noiseless
    evaluation (sd 0, threshold 0).
    """
    n = xp.maximum(a, 1.0)
    p1 = xp.clip(b + theta, 0.0, 1.0)
    sd = xp.where(kind == 2, xp.sqrt((p1 * (1.0 - p1) + b * (1.0 - b)) / n), xp.where(kind == 1, a, 0.0))
    return sd, xp.where(kind == 2, 0.5 / n, 0.0)


def adoption_probability(theta, kind, a, b, xp=np):
    """P(adopt | ΔJ = θ): the chance that a candidate's evaluation shows it better,
    Φ((θ − threshold)/sd) under `evaluation_noise` (1{θ > threshold} when noiseless)."""
    theta = xp.asarray(theta)
    sd, threshold = evaluation_noise(theta, kind, a, b, xp)
    noisy = sd > 0
    return xp.where(noisy, normal(xp).cdf((theta - threshold) / xp.where(noisy, sd, 1.0)),
                    (theta > threshold).astype(theta.dtype))


def evaluation_sd(kind, a, b, xp=np):
    """The sd σ_e of a candidate's evaluation of a gain near 0 (0 for a noiseless one)."""
    return evaluation_noise(0.0, kind, a, b, xp)[0]


def shows_improvement(y, kind, a, b, xp=np):
    """Whether a simulated outcome y of the evaluation shows the new policy better: a positive
    measured gain, or more treated successes than the control's expected count b·n (a tie
    keeps the incumbent; the margin keeps float32 ties ties). False for an outcome model that
    measures no gain."""
    n = xp.maximum(a, 1.0)
    return xp.where(kind == 1, y > 0, (kind == 2) & (y > b * n + 1e-3))


def positive_part(mean, sd, xp=np):
    """E[max(X, 0)] for X ~ N(mean, sd²): mean·Φ(mean/sd) + sd·φ(mean/sd); max(mean, 0) at sd = 0
    (`adopt_moment` with a noiseless evaluation)."""
    return adopt_moment(mean, sd, 0.0, xp)


def adopt_moment(mean, sd, noise_sd, xp=np):
    """E[X·Φ(X/σ_e)] for X ~ N(mean, sd²): μ·Φ(μ/s) + (σ²/s)·φ(μ/s), s² = σ² + σ_e².

    The "adopt" functional in moment form; `positive_part` when σ_e = 0.
    """
    norm = normal(xp)
    s = xp.sqrt(sd**2 + noise_sd**2)
    pos = s > 0
    safe = xp.where(pos, s, 1.0)
    z = mean / safe
    return xp.where(pos, mean * norm.cdf(z) + sd**2 / safe * norm.pdf(z), xp.maximum(mean, 0.0))


def adopt_shape(quantiles, mean, sd, noise_sd, xp=np):
    """E[X·Φ(X/σ_e)] for X = mean + sd·Z over equally weighted standardized quantiles Z [Q, M]:
    `adopt_moment` for a belief of any shape; a noiseless evaluation keeps X > 0."""
    x = mean + sd * quantiles
    noisy = noise_sd > 0
    shows = xp.where(noisy, normal(xp).cdf(x / xp.where(noisy, noise_sd, 1.0)), (x > 0).astype(x.dtype))
    return (x * shows).mean(0)


class _NumpyNormal:
    """The standard normal's cdf and pdf in NumPy (scipy.special: scipy.stats costs a third of
    a second to import, and these are what scipy.stats.norm computes)."""

    cdf = staticmethod(special.ndtr)

    @staticmethod
    def pdf(z):
        return np.exp(-0.5 * np.square(z)) / np.sqrt(2.0 * np.pi)


def normal(xp):
    """The standard normal's `cdf` and `pdf` in the array namespace `xp`."""
    if xp is np:
        return _NumpyNormal
    import jax.scipy.stats

    return jax.scipy.stats.norm
