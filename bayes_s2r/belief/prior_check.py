"""Does a gain prior predict the team's past campaigns? A prior predictive check.

`fit_gain_prior` sizes the candidate level from past paired evaluations; unless asked
(`shared_scales`, `scale_hierarchy`) it holds the levels one campaign's candidates share
(μ_A, the method and group levels) at their means, and the gains model then adds their
spread on top. So a fitted prior can be wider than the history it was fitted to, and a
library or hand-written prior can be anything. How wide the first belief is decides how
much a campaign explores: a belief that expects large measured gains from every try keeps
trying where the lab's record says there is little to find.

`check_gain_prior` asks the question directly, one past effect at a time: given what its
control arm showed, draw its treated arm's successes from the prior's predictive (every level
of the hierarchy, the candidate level's tails and skew, the binomial noise of the arm) and
place the treated arm's count in it (a randomized PIT, for discrete counts). Under a prior
that describes the history the PITs are uniform and the central 90% predictive intervals
hold 90% of the past effects; a prior wider than the history holds more of them and
predicts larger measured gains than the team saw, a narrower one holds fewer.

The levels a campaign's candidates share enter each effect's predictive with their whole
spread, as they do in `fit_gain_prior`'s marginal likelihood. The gains model leaves out the
method level for a campaign of one method (and the group level where each method has one
lens group), so for such campaigns the check reads the prior a little wider than a fit sees it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np
from scipy import special, stats

from bayes_s2r.belief.team_prior import control_posterior, past_effects
from bayes_s2r.errors import InputError, require_int, require_probability, require_seed
from bayes_s2r.models.gains import GainPrior, mixing_sd_mean

__all__ = ["PriorCheck", "check_gain_prior"]

#: Below this p-value a spread or a centre is called off the history's (`PriorCheck.verdict`).
SIGNIFICANCE = 0.05


@dataclasses.dataclass(frozen=True)
class PriorCheck:
    """The result of `check_gain_prior`.

    Attributes:
        effects: how many past effects (campaign, candidate, policy) were checked.
        level: the central predictive interval's probability.
        coverage: the share of past effects whose treated arm fell inside it.
        p_value: two-sided binomial test of `coverage` against `level`: is the prior's spread
            the history's? The effects are taken as independent (under the prior the effects
            of one campaign share its levels), so read it and `location_p_value` as screens,
            not exact tests.
        mean_pit: the PITs' mean: 0.5 under a prior centred on the history, above it when the
            past treated arms did better than the prior predicted.
        location_p_value: two-sided test of `mean_pit` against 0.5 (normal, variance 1/12 per
            effect): is the prior's centre the history's?
        gain_predicted: the mean over effects of the predicted E[max(measured ΔJ, 0)], with
            measured ΔJ = treated rate − control rate of the arm as it was run: the gain a
            try is expected to show, on the scale the lab reads.
        gain_observed: the same from the past measurements themselves.
        gain_expected: the mean over effects of the prior's E[max(ΔJ, 0)] at the effect's
            control level, without the arms' noise: what the prior expects a try to bring.
        pit: each effect's randomized probability integral transform (uniform on [0, 1]
            under a prior that describes the history).
    """

    effects: int
    level: float
    coverage: float
    p_value: float
    mean_pit: float
    location_p_value: float
    gain_predicted: float
    gain_observed: float
    gain_expected: float
    pit: np.ndarray

    @property
    def verdict(self) -> str:
        """"consistent with the history", or what is off: "wider than the history" or "narrower
        than the history", and "expects larger gains than seen" or "expects smaller gains than seen"."""
        off = []
        if self.p_value < SIGNIFICANCE:
            off.append("wider than the history" if self.coverage > self.level else "narrower than the history")
        if self.location_p_value < SIGNIFICANCE:
            off.append("expects larger gains than seen" if self.mean_pit < 0.5 else "expects smaller gains than seen")
        return "; ".join(off) or "consistent with the history"

    def text(self) -> str:
        return (f"prior predictive check on {self.effects} past effects: {self.coverage:.0%} inside the "
                f"central {self.level:.0%} intervals (binomial test p = {self.p_value:.2g}), mean PIT "
                f"{self.mean_pit:.2f} (p = {self.location_p_value:.2g}); gain per try {self.gain_expected:.3f} "
                f"expected, as measured {self.gain_predicted:.3f} predicted and {self.gain_observed:.3f} seen: "
                f"{self.verdict}")

    def to_dict(self) -> dict:
        """JSON data (without the per-effect PITs)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "pit"}
        return {**out, "verdict": self.verdict}


def _half_normal(rng: np.random.Generator, scale: float, fixed: bool, shape) -> np.ndarray | float:
    if fixed or scale == 0.0:
        return scale
    return np.abs(rng.normal(0.0, scale, shape))


def _effect_draws(prior: GainPrior, locs: np.ndarray, rng: np.random.Generator, draws: int,
                  fix_probs: np.ndarray | None = None) -> np.ndarray:
    """[E, N] effects δ on the logit scale drawn from the whole hierarchy of `models/gains.py`."""
    shape = (locs.size, draws)
    delta = np.broadcast_to(locs[:, None], shape).copy()
    for scale in (prior.gain_scale, prior.method_scale, prior.group_scale):
        delta += _half_normal(rng, scale, prior.fixed_scales, shape) * rng.standard_normal(shape)
    tau = tau_base = _half_normal(rng, prior.candidate_scale, prior.fixed_scales, shape)
    if prior.candidate_df is not None:  # Student-t as a scale mixture, as the model samples it
        nu = prior.candidate_df
        tau = tau_base / np.sqrt(rng.gamma(nu / 2, 2 / nu, shape))
        if prior.candidate_skew:
            delta += prior.candidate_skew * (tau - tau_base * mixing_sd_mean(nu))
    delta = delta + tau * rng.standard_normal(shape)
    if prior.has_fix:  # each candidate is its campaign's one fix with its probability q
        q = np.full(locs.size, prior.fix_prob) if fix_probs is None else fix_probs
        fix = rng.random(shape) < q[:, None]
        delta = np.where(fix, rng.normal(prior.fix_loc, prior.fix_scale, shape), delta)
    return delta


def check_gain_prior(histories: Iterable[Iterable], prior: GainPrior, *, methods: Mapping[str, str] | None = None,
                     level: float = 0.9, draws: int = 4000, seed: int = 0) -> PriorCheck:
    """Check `prior` against past campaigns by its predictive of each past treated arm.

    Args:
        histories: past campaigns, each a `Ledger` or an iterable of records, as for
            `fit_gain_prior` (the evaluations of one candidate, policy and objective within a
            campaign are summed into one effect).
        prior: the gain prior to check (link "logit").
        methods: the method of each past candidate, {candidate: method}; needed when
            `prior.method_locs` gives some methods their own mean.
        level: the central predictive interval's probability, in (0, 1).
        draws: Monte-Carlo draws of each effect's predictive (at least 100).
        seed: the draws' seed; the same seed gives the same check.

    Returns:
        a `PriorCheck`.

    Example:
        >>> import bayes_s2r as bs
        >>> past = [[bs.PairedEval("dr", 30, 48, 29, 48), bs.PairedEval("da", 27, 48, 28, 48)],
        ...         [bs.PairedEval("dr", 20, 48, 21, 48), bs.PairedEval("da", 22, 48, 20, 48)]]
        >>> bs.check_gain_prior(past, bs.GainPrior()).gain_predicted > 0.1  # the library prior expects large gains
        True
    """
    if not isinstance(prior, GainPrior):
        raise InputError("prior", prior, "a GainPrior")
    if prior.link != "logit":
        raise InputError("prior.link", prior.link, "'logit' (the check draws effects on the logit scale)")
    level = require_probability("level", level)
    draws = require_int("draws", draws, 100)
    seed = require_seed("seed", seed)
    if methods is not None and not (isinstance(methods, Mapping)
                                    and all(isinstance(v, str) for v in methods.values())):
        raise InputError("methods", methods, "a mapping {candidate: method name}")
    own = dict(prior.method_locs)
    for field, by_method in (("method_locs", own), ("method_fix_probs", dict(prior.method_fix_probs))):
        if by_method and methods is None:
            raise InputError("methods", None, f"each past candidate's method, for prior.{field} {sorted(by_method)}")
    counts, names, _ = past_effects(histories)
    locs = np.asarray([own.get((methods or {}).get(name), prior.gain_loc) for name in names])
    fix_probs = np.asarray([prior.fix_prob_of((methods or {}).get(name)) for name in names])
    st, nt, sc, nc = counts.T
    rng = np.random.default_rng(seed)
    m, sd = control_posterior(sc, nc, prior)   # the control level given its own arm
    alpha = m[:, None] + sd[:, None] * rng.standard_normal((len(names), draws))
    p_c = special.expit(alpha)
    p_t = special.expit(alpha + _effect_draws(prior, locs, rng, draws, fix_probs))
    below = stats.binom.cdf(st[:, None] - 1, nt[:, None], p_t).mean(axis=1)
    at = stats.binom.pmf(st[:, None], nt[:, None], p_t).mean(axis=1)
    pit = below + rng.uniform(size=below.shape) * at
    tail = (1.0 - level) / 2
    inside = int(np.sum((pit > tail) & (pit < 1.0 - tail)))
    z = (pit.mean() - 0.5) * np.sqrt(12.0 * len(names))
    rate_c = sc / np.maximum(nc, 1.0)
    shown = rng.binomial(nt[:, None].astype(np.int64), p_t) / np.maximum(nt, 1.0)[:, None]
    return PriorCheck(
        effects=len(names), level=level, coverage=inside / len(names),
        p_value=float(stats.binomtest(inside, len(names), level).pvalue),
        mean_pit=float(pit.mean()), location_p_value=float(2.0 * stats.norm.sf(abs(z))),
        gain_predicted=float(np.maximum(shown - rate_c[:, None], 0.0).mean()),
        gain_observed=float(np.maximum(st / np.maximum(nt, 1.0) - rate_c, 0.0).mean()),
        gain_expected=float(np.maximum(p_t - p_c, 0.0).mean()),
        pit=pit)
