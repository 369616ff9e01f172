"""The team's gain prior learned from its past campaigns (empirical Bayes, type-II ML).

How large and how heavy-tailed intervention effects are is the prior choice that moves the
decisions most: under a normal candidate level two blind tries look as good as pilots that
find the one fix, under a heavy-tailed one they do not. A lab that has run campaigns before
has evidence on exactly that. `fit_gain_prior` chooses the candidate level's scale and
degrees of freedom (`GainPrior.candidate_scale`, `candidate_df`, and when asked its skew,
`candidate_skew`) that maximise the marginal
likelihood of past paired evaluations, each one an effect drawn from the team's prior:

    p(s_c, s_t | s, ν) = ∫∫ Bin(s_c | n_c, σ(α)) Bin(s_t | n_t, σ(α + δ)) N(α; α0, σ_α)
                         p(δ | s, ν) dα dδ,
    δ = gain_loc + τ·ε,   τ ~ HalfNormal(s),   ε ~ Student-t(ν) (normal for ν = None),

the candidate level of `models/gains.py` with its method and group levels held at their
prior means (they are small next to the candidate level, and a history of a few campaigns
cannot separate them). The double integral is computed by quadrature: α on a Gauss-Hermite
rule placed around each effect's control arm, δ at equal-probability quantiles of its prior
(a midpoint rule in probability, so the heavy tails are integrated without truncation;
beyond |δ| = 25 logits both arms saturate and the likelihood is flat). A few lines of NumPy/SciPy do this exactly for two
hyperparameters on a grid; a NumPyro fit of the hyper-level would need the full model per
candidate and gives the same point estimate.

The upper levels are small next to the library's candidate scale of 2, but not next to a
fitted scale of 0.5: their scales (0.5, 0.5 and 0.3 logits) then add more spread to each
effect than the history showed. With `scale_hierarchy=True` they are sized with the
candidate level (each multiplied by s / base.candidate_scale) and their normal offset
enters the marginal, δ = gain_loc + s_up·ζ + τ·ε with s_up² the sum of their squared
scales, integrated on the grid. On the "small" family of `benchmarks/worlds.py` (gains of
0-0.2 of the headroom) the first belief of a campaign with the candidate level fitted alone
had an sd of ΔJ 2.6 times the true gains' spread (standardized errors with sd 0.39). With
the hierarchy sized and the mean fitted, the rule's net utility over 120 worlds per family
(every strategy under the same prior) rose where gains are many and small (+0.018
[+0.004, +0.032]: it then stops at once, as its rivals do) and fell where one rare fix
decides (needle −0.038 [−0.081, +0.004]), as fitting the mean alone did; a symmetric
candidate level centred at 0 makes the search for a rare large gain look worth less. So it
is off by default. Under the one-fix structure with each method's mean and fix probability
(what `bayes-s2r prior --candidates` fits), sizing the hierarchy made the prior pass its
predictive check in all fourteen random families (it was wider than the history in five) and
its expected gain per try match the truth where gains are many and small (0.045 against 0.044,
0.083 before), yet it moved the rule by +0.001 [−0.005, +0.006] over 2800 worlds: +0.008 to
+0.019 in four families, −0.032 [−0.060, −0.003] where an SI candidate is usually the fix
(`worlds_history_fix_method_hierarchy.json`). A calibrated marginal is not what the rule
lacks there, so it stays off.

Histories of all-or-nothing outcomes (0/n against n/n) only say "large", and the chosen scale
is then the largest searched (`GainPriorFit.at_grid_edge`). The default grid stops at 4
logits. Scale 4 already puts the 7 logits of a fixed failure well inside the prior, and
larger scales are harder for NUTS. Simulation-based calibration with ν = 2
(benchmarks/sbc_gains.py, 100 datasets each) measured:

- scale 2: no divergent transitions, rank test p = 0.13;
- scale 4: coverage of the 90% intervals 89.2%, 2 divergent transitions, p = 0.076;
- scale 8: coverage 90.5%, 7 divergent transitions, ranks skewed low (p = 0.001).

Pass `candidate_scales` to search further.

The effects' prior mean (`GainPrior.gain_loc`) is searched too when asked (`gain_locs`, e.g.
`DEFAULT_LOCS`). By default it stays at the base prior's: on the random families of
`benchmarks/worlds.py` (200 worlds each, paired) fitting it raised the rule's net utility
where gains are many and small (+0.012 [+0.005, +0.018]) and lowered it where one candidate
is the fix (−0.034 [−0.064, −0.004]): with the mean fitted at 0 the rule made 3.8 decisions
there instead of 4.3 and ended at J 0.595 instead of 0.649. The library's mildly optimistic
0.3 pays for the search for the fix.

The candidate level's skew (`candidate_skews`, e.g. `DEFAULT_SKEWS`; `GainPrior.candidate_skew`)
is searched only when asked. The histories of all six families prefer a skewed level (skew 4,
2 in "small"), yet over 62 worlds per family (`worlds_history_skew.json`, every strategy under
it) the rule's net utility moved in no family with an interval excluding 0 (easy −0.035
[−0.075, +0.006], needle −0.011 [−0.072, +0.049], robot +0.024 [−0.022, +0.070]).

Each method's own mean (`methods` and `method_locs`, e.g. `DEFAULT_METHOD_LOCS`;
`GainPrior.method_locs`) is fitted on that method's effects alone: the evidence is a sum
over effects, so each method's maximum is found apart. `bayes-s2r prior` fits them whenever
it is given the candidates' methods. Over 200 random worlds per family (`worlds.json` against
`worlds_pooled.json`) they lifted the rule by +0.094 [+0.055, +0.133] of net utility where
fine-tuning is usually the fix (robot) and moved no other family with an interval excluding 0;
over those five together the rule lost 0.011 [0.001, 0.022], the price of four means fitted
from twelve past campaigns where the methods do not differ.

Shrinking each method's mean toward `gain_loc` by the evidence instead (`method_spreads`, e.g.
`DEFAULT_METHOD_SPREADS`) is the hierarchical answer to that price: the methods' means are
drawn from N(gain_loc, ω²), each is integrated out of the marginal likelihood, ω is chosen by
it (0 is one mean for all) and each method gets its posterior mean. Unlike the maximum over
`method_locs`, which always beats one mean, the integrated evidence pays for each mean it
frees: it chose ω = 0 in two of the six families and 0.25 in the others. The rule's net
utility under it (`worlds_history_shrunk.json`, 200 worlds per family, paired) was +0.007
[−0.003, +0.016] above the methods' own means over the five families where they cost, and
−0.042 [−0.070, −0.015] below them where fine-tuning is usually the fix (robot: FT 0.37
against DR −0.03, where the own means were 0.5 and −0.25). Neither dominates, so it is used
only when asked.

With `integrate_method_spread=True` each method's shrunk mean is averaged over ω's posterior
(ω ~ HalfCauchy(base.method_scale)) instead of taken at the most evident ω: four or five methods
say little about ω. On one team's history of the "small" family the two gave the same means to
0.02; what moved them toward the truth (0.11 logits for every method) was fitting the common
mean they shrink to (SI 0.30 toward 0.3, 0.13 toward a fitted 0). With the common mean fitted too (`--gain-prior history-fix-per-method-shrunk`
of `benchmarks/bench_worlds.py`, ten teams' histories, 200 worlds per family, every strategy
under it; `worlds_teams_shrunk.json`) the rule moved by +0.005 [−0.002, +0.011] where gains are
many and small and +0.010 [−0.015, +0.035] where one rare fix decides, and MV-greedy by +0.005
[−0.001, +0.011] and +0.023 [+0.002, +0.043]: a method mean flattered by its history misleads
every rule that reads the prior, so correcting it did not change the rule's standing against
its rivals. Off by default.

The levels one campaign's candidates share (μ_A, the method and group levels) say how much
one measured candidate tells about its siblings: with the library's levels, once one DR
candidate had measured −0.11, every other candidate of that campaign was believed to lose
0.06; with the levels at a tenth, to gain 0.06 (a pandora world's team prior, NUTS).
`shared_scales` (e.g. `DEFAULT_SHARED_SCALES`) sizes them by the evidence, with each past
campaign's effects taken jointly: a campaign offset and, with `methods`, a method offset
within it, integrated at equal-probability nodes over each effect's evidence as a function
of its mean (a spline on the grid of the shrunk means). It is searched with the candidate
scale once the rest of the prior is chosen. On the six random families the evidence chose
k = 0 in five (their adaptations' lifts are drawn independently) and 0.25–0.5 where every
world's start differs and the candidates are alternatives. Over 200 worlds per family
(`worlds_history_shared.json`, `worlds_history_shrunk_shared.json`) the rule moved by
−0.001 [−0.011, +0.009] with each method's own mean and +0.005 [−0.006, +0.015] with the
shrunk means, from +0.013 [+0.005, +0.020] where gains are many and small to −0.015
[−0.049, +0.019] where one rare fix decides. So the library's levels stay the default.

`fix_probs` (e.g. `DEFAULT_FIX_PROBS`) searches the one-fix structure of `GainPrior.fix_prob`:
each candidate of a campaign is its one fix with probability q, with effect N(fix_loc,
fix_scale²) in place of its level. A past campaign's evidence is then not a product over its
effects but (1 − T·q)·Π L0 + q·Σ_k L1_k·Π_{e≠k} L0, with T the candidates it tried, L0 each
effect's evidence under the level and L1 under the fix; an untried candidate that was the fix
leaves the tried ones at their level, which 1 − T·q counts. The structure is searched with the
candidate scale and level once the means are chosen. From 12 past campaigns of each random
family it chose q = 0.15 in five of them (one fix among five or six candidates, or one or two),
0.1 in four, 0.05 where a method works for all of its candidates or none, 0.02 where gains are
many and small and 0 where fixes are moderate and interact. It is not searched by default: `docs/decide.md` ("When at most one candidate is the fix") gives what
it did to the rule.

`method_fix_concentrations` (e.g. `DEFAULT_METHOD_FIX_CONCENTRATIONS`, with `fix_probs` and
`methods`) lets the fix follow the method that usually holds it (`GainPrior.method_fix_probs`):
each method's q is drawn from Beta(κ·q, κ·(1 − q)) around the common q. A campaign's evidence is
linear in its candidates' q, so the past campaigns' joint evidence is a polynomial in them; it is
integrated over the methods' q by quasi-Monte Carlo (Sobol points through the Beta quantiles, the
prior truncated to Σ q < 1 in each campaign), κ is chosen by it with κ = ∞ (one q for all) among
the options, and each method gets its posterior mean. Maximising each method's q on its own
instead found DA 0.5 where fine-tuning is usually the fix, from twelve campaigns.

`fix_units=("candidate", "method")` (with `fix_probs` and `methods`) also searches a fix per
method (`GainPrior.fix_unit`): each method works in a campaign with probability q, and then every
candidate of it is a fix. A campaign's evidence then factors over its methods, Π_h [(1 − q)·
Π_{k∈h} L0_k + q·Π_{k∈h} L1_k]. The method unit is kept only when its log evidence leads by more
than `fix_unit_margin` (`FIX_UNIT_MARGIN`). From 12 past campaigns of each of the fifteen random
families it led by 5.9 where a method works for all of its candidates or none, by 15.5 on a family
drawn afterwards to test it, by 0.25 where gains are many and small, and nowhere else.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from scipy import special, stats

from bayes_s2r.errors import InputError, require_finite_nonneg, require_positive
from bayes_s2r.evidence.records import PairedEval
from bayes_s2r.models.gains import FIX_UNITS, GainPrior, mixing_sd_mean

__all__ = ["GainPriorFit", "fit_gain_prior"]

#: The grid searched by default: candidate scales from 0.25 to 4 logits in steps of 2^(1/3)
#: (the module docstring says why not larger), ν ≥ 2 (see `GainPrior.candidate_df` on why
#: not 1) and the normal level.
DEFAULT_SCALES = tuple(float(x) for x in np.round(np.geomspace(0.25, 4.0, 13), 4))
DEFAULT_DFS: tuple[float | None, ...] = (2.0, 3.0, 5.0, 10.0, None)
#: Effects' prior means to search (`gain_locs=DEFAULT_LOCS`; logits), around the library's
#: 0.3: within half a logit either way, the range in which a few dozen effects can place it.
DEFAULT_LOCS = (-0.5, -0.25, 0.0, 0.15, 0.3, 0.5)
#: Fewer effects than this leave the mean at the base prior's: with a handful of effects the
#: maximum sits at the mean of what was seen with the smallest scale, a prior sure of a
#: gain it has seen a few times.
MIN_EFFECTS_FOR_LOC = 10
#: Skews of the Student-t level to search (`candidate_skews=DEFAULT_SKEWS`): 0 and up to a
#: shift of four times the level's scale for a candidate spread as wide as the average
DEFAULT_SKEWS = (0.0, 0.5, 1.0, 2.0, 4.0)
#: Per-method means to search (`method_locs=DEFAULT_METHOD_LOCS`; logits): wider than
#: `DEFAULT_LOCS`, since a method that is usually the fix sits well above the rest.
DEFAULT_METHOD_LOCS = (-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0)
#: Spreads of the methods' means around `gain_loc` to search (`method_spreads=DEFAULT_METHOD_SPREADS`;
#: logits): 0 is one mean for all, 2 lets a method that is usually the fix sit well apart.
DEFAULT_METHOD_SPREADS = (0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0, 1.5, 2.0)
#: Sizes of the levels one campaign's candidates share to search (`shared_scales=DEFAULT_SHARED_SCALES`):
#: multipliers of base's `gain_scale`, `method_scale` and `group_scale`. 0 makes the candidates of a
#: campaign independent given the prior; 1 is the library's hierarchy.
DEFAULT_SHARED_SCALES = (0.0, 0.125, 0.25, 0.5, 1.0)
#: The one-fix structure's settings to search (`fix_probs=DEFAULT_FIX_PROBS`): q, the prior
#: probability that a given candidate is a campaign's one fix (0: none), and the fix's effect
#: N(fix_loc, fix_scale²) in logits. A q at or above 1/(a past campaign's candidates) is skipped.
DEFAULT_FIX_PROBS = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3)
#: Concentrations κ of each method's q around the common q to search
#: (`method_fix_concentrations=DEFAULT_METHOD_FIX_CONCENTRATIONS`): with κ = 1 a method's q is
#: free of the others', with 100 close to the common q.
DEFAULT_METHOD_FIX_CONCENTRATIONS = (100.0, 30.0, 10.0, 3.0, 1.0)
#: The log Bayes factor a fix per method (`fix_units`) needs over one fix per campaign: 1, "positive"
#: evidence on Kass and Raftery's scale (JASA 1995). The method unit is the stronger claim, and the
#: costlier one when wrong: a sibling measured at zero then rules out the others, the fix among
#: them too, where one fix per campaign wrongly held only spends a try on a sibling. On a Brax world
#: whose one fix is one of two DR variants, four past campaigns chose it by 0.76 and the rule's J fell
#: by 0.097 [−0.229, +0.036] (100 seeds, 1.6 robot-hours); the random families that chose it did so
#: by 5.9 and 15.5 (siblings, kin) or by 0.25 (small).
FIX_UNIT_MARGIN = 1.0
DEFAULT_FIX_LOCS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
DEFAULT_FIX_SCALES = (0.5, 1.0, 2.0)
#: Equal-probability nodes of the fix's effect in its evidence.
_FIX_NODES = 32
#: The starting policies' level (`GainPrior.baseline_loc`, `baseline_scale`; logits) is searched
#: on this grid (`baseline_level=True`), from this many past campaigns on: with fewer the base
#: prior's is kept. The scales stop at 0.25 logits, a prior that still leaves a start's J
#: uncertain by a few points however alike the past starts were.
_BASELINE_LOCS = np.round(np.arange(-5.0, 5.0 + 1e-9, 0.05), 2)
_BASELINE_SCALES = tuple(float(x) for x in np.round(np.geomspace(0.25, 3.0, 25), 4))
MIN_CAMPAIGNS_FOR_BASELINE = 5
#: Equal-probability nodes of each shared level's normal offset in the campaign evidence.
_SHARED_NODES = 32
#: Each method's mean is integrated within this many logits of `gain_loc`, on a grid of this
#: step, spline-interpolated between its points (the evidence is smooth in the mean).
_METHOD_MEAN_RANGE, _METHOD_MEAN_STEP, _METHOD_MEAN_NODES = 4.0, 0.25, 64

_DELTA_GRID = np.linspace(-25.0, 25.0, 1001)


@dataclasses.dataclass(frozen=True)
class GainPriorFit:
    """The result of `fit_gain_prior`.

    Attributes:
        prior: `base` with `candidate_scale` and `candidate_df` set to the best pair (and
            `gain_loc` and `candidate_skew` to the best searched), and `fixed_scales` False.
        log_evidence: {(candidate_scale, candidate_df): log marginal likelihood} over the grid,
            at the chosen `gain_loc` and `candidate_skew`.
        effects: how many effects (campaign, candidate, policy) the evidence held.
        best_minus_normal: log evidence of the best pair minus that of the best normal level
            (a Bayes factor on the log scale; > 0 favours heavy tails), without the one-fix
            structure. NaN without normal entries in the grid.
        method_spread: with `method_spreads`, the spread of the methods' means chosen (0: one
            mean for all); None otherwise.
        shared_scale: with `shared_scales`, the multiplier of the shared levels chosen (0: the
            candidates of a campaign independent given the prior); None otherwise.
        shared_log_evidence: with `shared_scales`, {(candidate_scale, k): log marginal
            likelihood} with each past campaign's effects taken jointly, at the chosen rest of
            the prior; None otherwise.
        fix_log_evidence: with `fix_probs`, {(fix_prob, fix_loc, fix_scale): log marginal
            likelihood} with each past campaign's effects taken jointly, at the best candidate
            level for each (q = 0: no fix structure); None otherwise.
        method_fix_concentration: with `method_fix_concentrations`, the κ chosen (inf: one q
            for all); None otherwise.
        method_fix_log_evidence: with `method_fix_concentrations`, the log marginal likelihood
            at the chosen κ; None otherwise.
        fix_unit_log_evidence: with `fix_units`, {unit: the largest log marginal likelihood
            with that unit of the fix} (`GainPrior.fix_unit`); `fix_log_evidence` is the
            chosen unit's. None otherwise.
    """

    prior: GainPrior
    log_evidence: Mapping[tuple[float, float | None], float]
    effects: int
    best_minus_normal: float
    method_spread: float | None = None
    shared_scale: float | None = None
    shared_log_evidence: Mapping[tuple[float, float], float] | None = None
    fix_log_evidence: Mapping[tuple[float, float, float], float] | None = None
    method_fix_concentration: float | None = None
    method_fix_log_evidence: float | None = None
    fix_unit_log_evidence: Mapping[str, float] | None = None

    @property
    def at_grid_edge(self) -> bool:
        """Whether the chosen scale is the smallest or largest searched: the evidence would
        have gone further (saturated outcomes, 0/n or n/n, say only "large")."""
        scales = [s for s, _ in self.log_evidence]
        return self.prior.candidate_scale in (min(scales), max(scales))

    def text(self) -> str:
        df = "normal" if self.prior.candidate_df is None else f"Student-t, nu={self.prior.candidate_df:g}"
        if self.prior.candidate_skew:
            df += f", skew={self.prior.candidate_skew:g}"
        if self.prior.method_locs:
            shrunk = "" if self.method_spread is None else f" (shrunk to gain_loc, spread {self.method_spread:g})"
            df += f", method means{shrunk} " + ", ".join(f"{h} {m:.3g}" for h, m in self.prior.method_locs)
        elif self.method_spread == 0.0:
            df += ", one mean for all methods (spread 0 chosen)"
        if self.shared_scale is not None:
            df += f", shared levels x{self.shared_scale:g}"
        if self.prior.has_fix:
            q = f"{self.prior.fix_prob:g}"
            if self.prior.method_fix_probs:
                q = (", ".join(f"{h} {x:.2g}" for h, x in self.prior.method_fix_probs)
                     + f" (shrunk, concentration {self.method_fix_concentration:g}; others {q})")
            per = ("one fix with probability {} per candidate" if self.prior.fix_unit == "candidate"
                   else "each method works with probability {}, all its candidates fixes")
            df += f", {per.format(q)}, effect {self.prior.fix_loc:g} ± {self.prior.fix_scale:g}"
            if self.fix_unit_log_evidence is not None and len(self.fix_unit_log_evidence) > 1:
                other = next(u for u in self.fix_unit_log_evidence if u != self.prior.fix_unit)
                gap = self.fix_unit_log_evidence[self.prior.fix_unit] - self.fix_unit_log_evidence[other]
                df += f" (log Bayes factor {gap:+.2f} against a fix per {other})"

        elif self.fix_log_evidence is not None:
            df += ", no fix structure (q = 0 chosen)"
        if (self.prior.baseline_loc, self.prior.baseline_scale) != (GainPrior.baseline_loc, GainPrior.baseline_scale):
            df += (f", starting policies at {self.prior.baseline_loc:g} ± {self.prior.baseline_scale:g} logits "
                   f"(J {special.expit(self.prior.baseline_loc):.2f})")
        edge = " (at the edge of the scales searched)" if self.at_grid_edge else ""
        return (f"team gain prior from {self.effects} past effects: candidate_scale="
                f"{self.prior.candidate_scale:g}{edge}, candidate level {df}, gain_loc="
                f"{self.prior.gain_loc:g}; log Bayes factor against "
                f"the best normal level {self.best_minus_normal:+.2f}")


def past_campaigns(histories) -> list[list]:
    """`histories` as a list of past campaigns, each a list of its records (a `Ledger`'s read)."""
    if isinstance(histories, (str, bytes)) or not isinstance(histories, Iterable):
        raise InputError("histories", histories, "an iterable of campaigns, each an iterable of records")
    out = []
    for i, campaign in enumerate(histories):
        if callable(getattr(campaign, "records", None)):  # a Ledger
            campaign = campaign.records()
        if isinstance(campaign, (str, bytes, PairedEval)) or not isinstance(campaign, Iterable):
            raise InputError(f"histories[{i}]", campaign, "an iterable of records (one past campaign)")
        out.append(list(campaign))
    return out


def past_effects(histories) -> tuple[np.ndarray, list[str], np.ndarray]:
    """[E, 4] counts (s_t, n_t, s_c, n_c), one row per (campaign, candidate, policy), summed,
    each row's candidate and [E] its campaign."""
    rows, names, campaign_of = [], [], []
    for i, campaign in enumerate(past_campaigns(histories)):
        cells: dict[tuple, list[int]] = {}
        for r in campaign:
            if not isinstance(r, PairedEval):
                continue  # other evidence says nothing about the size of effects
            c = cells.setdefault((r.candidate, r.policy, r.objective), [0, 0, 0, 0])
            c[0] += r.successes_treated
            c[1] += r.episodes_treated
            c[2] += r.successes_control
            c[3] += r.episodes_control
        rows += cells.values()
        names += [k[0] for k in cells]
        campaign_of += [i] * len(cells)
    if not rows:
        raise InputError("histories", "no PairedEval records", "at least one past paired evaluation")
    return np.asarray(rows, dtype=float), names, np.asarray(campaign_of)


def control_posterior(sc: np.ndarray, nc: np.ndarray, prior: GainPrior) -> tuple[np.ndarray, np.ndarray]:
    """Mode and sd (Laplace) of α given the control counts and α's prior, by Newton's method."""
    m = np.full(sc.shape, prior.baseline_loc, dtype=float)
    prec0 = 1.0 / prior.baseline_scale**2
    for _ in range(30):  # concave in α: Newton converges from the prior mean
        p = special.expit(m)
        hess = nc * p * (1 - p) + prec0
        m = m + (sc - nc * p - (m - prior.baseline_loc) * prec0) / hess
    p = special.expit(m)
    return m, 1.0 / np.sqrt(nc * p * (1 - p) + prec0)


def start_arms(histories) -> np.ndarray:
    """[K, 2] (successes, episodes) of each past campaign's starting policy: the control arms of
    the paired evaluations against the policy of its earliest one (lowest round), summed."""
    out = []
    for campaign in past_campaigns(histories):
        paired = [r for r in campaign if isinstance(r, PairedEval)]
        if not paired:
            continue
        start = min(paired, key=lambda r: r.round).policy
        mine = [r for r in paired if r.policy == start]
        out.append((sum(r.successes_control for r in mine), sum(r.episodes_control for r in mine)))
    return np.asarray(out, dtype=float).reshape(-1, 2)


def fit_baseline_level(arms: np.ndarray) -> tuple[float, float]:
    """(loc, scale) of α ~ N(loc, scale²), the starting policies' level on the logit scale, that
    maximise Π_k ∫ Bin(s_k | n_k, σ(α)) N(α; loc, scale²) dα over the past campaigns' starting
    arms `arms` ([K, 2] successes, episodes), on `_BASELINE_LOCS` × `_BASELINE_SCALES`."""
    alpha = np.linspace(-15.0, 15.0, 1201)
    s, n = arms[:, :1], arms[:, 1:]
    ll = s * special.log_expit(alpha) + (n - s) * special.log_expit(-alpha)      # [K, A]
    top = ll.max(axis=1)
    lik = np.exp(ll - top[:, None])                                              # each arm's, scaled to max 1
    best, best_ll = (0.0, 1.0), -np.inf
    for scale in _BASELINE_SCALES:  # each arm's likelihood against the normal at every loc: one product
        kernel = (np.exp(-0.5 * ((alpha[:, None] - _BASELINE_LOCS[None, :]) / scale) ** 2)
                  * (alpha[1] - alpha[0]) / (scale * math.sqrt(2 * math.pi)))   # [A, L]
        total = (np.log(np.maximum(lik @ kernel, 1e-300)) + top[:, None]).sum(0)  # [L]
        i = int(np.argmax(total))
        if total[i] > best_ll:
            best, best_ll = (float(_BASELINE_LOCS[i]), scale), float(total[i])
    return best


def _log_lik_grid(counts: np.ndarray, prior: GainPrior, nodes: int = 48) -> np.ndarray:
    """[E, D] log ∫ Bin(s_c | σ(α)) Bin(s_t | σ(α + δ)) N(α) dα on `_DELTA_GRID`.

    Gauss-Hermite nodes are placed per effect around α's posterior given the control arm (twice
    its Laplace sd, with the prior over that normal as the weight): with a few dozen episodes
    per arm the integrand is narrower than the spacing of a rule on α's prior, which misplaced
    the evidence by about 0.05 per effect."""
    x, w = special.roots_hermitenorm(nodes)  # ∫ f(z) φ(z) dz ≈ Σ w f(x) / sqrt(2π)
    st, nt, sc, nc = (counts[:, i, None] for i in range(4))
    m, sd = control_posterior(sc, nc, prior)
    spread = 2.0 * sd
    alpha = m + spread * x[None, :]  # [E, A]
    z0 = (alpha - prior.baseline_loc) / prior.baseline_scale
    logw = (np.log(w) - 0.5 * math.log(2 * math.pi)                       # the node's N(0, 1) weight
            - 0.5 * z0**2 - np.log(prior.baseline_scale) + 0.5 * x**2 + np.log(spread))  # × prior / proposal
    log_c = sc * special.log_expit(alpha) + (nc - sc) * special.log_expit(-alpha)  # [E, A]
    eta = alpha[:, None, :] + _DELTA_GRID[None, :, None]  # [E, D, A]
    # log σ(−η) = log σ(η) − η: one log_expit over the [E, D, A] grid, not two
    terms = nt[:, :, None] * special.log_expit(eta) - (nt - st)[:, :, None] * eta + (log_c + logw)[:, None, :]
    binom = (special.gammaln(nt + 1) - special.gammaln(st + 1) - special.gammaln(nt - st + 1) +
             special.gammaln(nc + 1) - special.gammaln(sc + 1) - special.gammaln(nc - sc + 1))
    return _logsumexp(terms) + binom


def _effects_grid(counts: np.ndarray, prior: GainPrior) -> np.ndarray:
    """`_log_lik_grid` of every effect (read-only). The grid depends only on the counts and α's
    prior, and a history is often fitted several times over (a search over the fit's options,
    the CLI's `prior --candidates`), so the last few are kept."""
    counts = np.ascontiguousarray(counts, dtype=float)
    return _grid_of(counts.tobytes(), len(counts), float(prior.baseline_loc), float(prior.baseline_scale))


@functools.lru_cache(maxsize=8)
def _grid_of(counts: bytes, num: int, baseline_loc: float, baseline_scale: float) -> np.ndarray:
    rows = np.frombuffer(counts, dtype=float).reshape(num, 4)
    prior = GainPrior(baseline_loc=baseline_loc, baseline_scale=baseline_scale)
    grid = np.concatenate([_log_lik_grid(rows[i:i + 64], prior) for i in range(0, num, 64)])
    grid.setflags(write=False)
    return grid


def _logsumexp(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """log Σ exp(a) along `axis`. On these grids scipy.special.logsumexp's general handling
    (weights, signs, masked maxima) costs more than the sum itself."""
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return np.log(np.exp(a - top).sum(axis=axis)) + np.squeeze(top, axis)


def _mid(k: int) -> np.ndarray:
    return (np.arange(k) + 0.5) / k


def _delta_nodes(prior: GainPrior, scale: float, df: float | None, skew: float = 0.0,
                 k_tau: int = 16, k_eps: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """Nodes of δ = gain_loc + τ ε, τ ~ HalfNormal(scale), ε ~ t_ν, and their log weights.

    τ and ε sit at equal-probability quantiles (a midpoint rule in probability, equal weights).
    With a skew κ, ε = κ(w − c_ν) + w·z with w = λ^-½ (`models/gains.py`): z on 32 quantiles,
    λ on k_eps/4 quantiles u = v² of midpoints v, denser where λ is small and w large, where
    the few large gains live (equal steps in u left an error of 0.05 in a single effect's log
    evidence).
    """
    tau = scale * special.ndtri((1.0 + _mid(k_tau)) / 2.0)  # half-normal quantile
    if skew == 0.0:
        eps = special.ndtri(_mid(k_eps)) if df is None else special.stdtrit(df, _mid(k_eps))
        log_w = np.full(eps.size, -math.log(eps.size))
    else:
        v = _mid(k_eps // 4)
        w = 1.0 / np.sqrt(special.gammaincinv(df / 2, v**2) / (df / 2))
        z = special.ndtri(_mid(32))
        eps = ((skew * (w - mixing_sd_mean(df)))[:, None] + w[:, None] * z[None, :]).ravel()
        log_w = np.repeat(np.log(2 * v / v.size), z.size) - math.log(z.size)
    delta = (prior.gain_loc + tau[:, None] * eps[None, :]).ravel()
    return delta, np.tile(log_w, tau.size) - math.log(tau.size)


def _on_grid(grid_ll: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """[E, K] the log-likelihood grid linearly interpolated at `delta` (within the grid)."""
    pos = np.interp(delta, _DELTA_GRID, np.arange(_DELTA_GRID.size))
    lo = np.floor(pos).astype(int).clip(0, _DELTA_GRID.size - 2)
    frac = pos - lo
    return grid_ll[:, lo] * (1 - frac) + grid_ll[:, lo + 1] * frac


def _hierarchy_at(base: GainPrior, candidate_scale: float) -> GainPrior:
    """`base` with its upper levels (μ_A, method, group) scaled as its candidate level would be
    to `candidate_scale`, keeping their proportions."""
    k = candidate_scale / base.candidate_scale
    return dataclasses.replace(base, gain_scale=base.gain_scale * k, method_scale=base.method_scale * k,
                               group_scale=base.group_scale * k)


def _upper_sd(prior: GainPrior) -> float:
    """sd of the upper levels' sum (E[τ²] = scale² for a half-normal τ)."""
    return math.sqrt(prior.gain_scale**2 + prior.method_scale**2 + prior.group_scale**2)


def _upper_levels(grid_ll: np.ndarray, sd: float, nodes: int = 16) -> np.ndarray:
    """[E, D] log ∫ L(δ + sd·ζ) φ(ζ) dζ: the likelihood grid averaged over the upper levels'
    normal offset (equal-probability nodes; beyond the grid the likelihood is flat)."""
    zeta = special.ndtri(_mid(nodes))
    shifted = np.clip(_DELTA_GRID[:, None] + sd * zeta[None, :], _DELTA_GRID[0], _DELTA_GRID[-1])  # [D, Z]
    ll = _on_grid(grid_ll, shifted.ravel()).reshape(len(grid_ll), _DELTA_GRID.size, nodes)
    return special.logsumexp(ll, axis=-1) - math.log(nodes)


def _finite_numbers(value) -> tuple | None:
    """`value` as a tuple of finite real numbers, or None when it is not one (or empty)."""
    items = tuple(value) if isinstance(value, Iterable) and not isinstance(value, (str, bytes)) else ()
    ok = items and all(isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x) for x in items)
    return items if ok else None


def _search_grid(candidate_scales, candidate_dfs, gain_locs, base: GainPrior, candidate_skews, methods,
                 method_locs, method_spreads):
    """The checked grid of `fit_gain_prior`: scales, means, (df, skew) levels, method means and
    the spreads of the methods' means."""
    scales = tuple(candidate_scales)
    dfs = tuple(candidate_dfs)
    if not scales:
        raise InputError("candidate_scales", candidate_scales, "a non-empty sequence of numbers > 0")
    if not dfs:
        raise InputError("candidate_dfs", candidate_dfs, "a non-empty sequence of numbers > 0 or None")
    for s in scales:
        require_positive("candidate_scales", s)
    for d in dfs:
        if d is not None:
            require_positive("candidate_dfs", d)
    locs = (base.gain_loc,) if gain_locs is None else tuple(float(x) for x in gain_locs)
    if not locs or not all(math.isfinite(x) for x in locs):
        raise InputError("gain_locs", gain_locs, "a non-empty sequence of finite numbers (logits) or None")
    skews = _finite_numbers(candidate_skews)
    if skews is None:
        raise InputError("candidate_skews", candidate_skews, "a non-empty sequence of finite numbers")
    # a skew other than 0 needs a Student-t level with a finite mean scale (ν > 1) to skew
    levels = [(None if df is None else float(df), float(k)) for df in dfs for k in skews
              if k == 0.0 or (df is not None and df > 1.0)]
    if not levels:
        raise InputError("candidate_skews", candidate_skews, "0 among them, or a candidate_df above 1")
    if method_locs is not None:
        if _finite_numbers(method_locs) is None:
            raise InputError("method_locs", method_locs, "a non-empty sequence of finite numbers (logits) or None")
        method_locs = tuple(float(m) for m in method_locs)
    if method_spreads is not None:
        spreads = _finite_numbers(method_spreads)
        if spreads is None or any(w < 0 for w in spreads):
            raise InputError("method_spreads", method_spreads, "a non-empty sequence of numbers >= 0 (logits) or None")
        if method_locs is not None:
            raise InputError("method_spreads", method_spreads, "None with method_locs (each method's mean is either "
                                                               "fitted on its own or shrunk, not both)")
        method_spreads = tuple(float(w) for w in spreads)
    named = isinstance(methods, Mapping) and all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in methods.items())
    # base's own method means hold in the evidence too, so their effects must be known
    if (method_locs is not None or method_spreads is not None or base.method_locs) and not named:
        why = "" if method_locs is not None or method_spreads is not None else (
            " (base.method_locs gives some methods their own mean)")
        raise InputError("methods", methods, "{candidate name: method name} of the past candidates" + why)
    return scales, locs, levels, method_locs, method_spreads


def fit_gain_prior(histories: Iterable[Iterable], *, base: GainPrior | None = None,
                   candidate_scales: Sequence[float] = DEFAULT_SCALES,
                   candidate_dfs: Sequence[float | None] = DEFAULT_DFS,
                   gain_locs: Sequence[float] | None = None,
                   min_effects_for_loc: int = MIN_EFFECTS_FOR_LOC,
                   scale_hierarchy: bool = False,
                   candidate_skews: Sequence[float] = (0.0,),
                   methods: Mapping[str, str] | None = None,
                   method_locs: Sequence[float] | None = None,
                   method_contrasts: bool = False,
                   method_spreads: Sequence[float] | None = None,
                   integrate_method_spread: bool = False,
                   shared_scales: Sequence[float] | None = None,
                   baseline_level: bool = False,
                   fix_probs: Sequence[float] | None = None,
                   method_fix_concentrations: Sequence[float] | None = None,
                   fix_locs: Sequence[float] = DEFAULT_FIX_LOCS,
                   fix_scales: Sequence[float] = DEFAULT_FIX_SCALES,
                   fix_units: Sequence[str] = ("candidate",),
                   fix_unit_margin: float = FIX_UNIT_MARGIN) -> GainPriorFit:
    """Choose the gains model's candidate level (and, when asked, the effects' prior mean) from
    past campaigns (type-II maximum likelihood).

    Args:
        histories: past campaigns, each a `Ledger` or an iterable of records. Only `PairedEval` records are used; the evaluations of
            one (candidate, policy, objective) within one campaign are summed into one
            effect, and effects are treated as independent draws of the team's prior.
        base: the prior whose other settings are kept (default `GainPrior()`); its link
            must be "logit". Its `method_locs` are kept for the methods not fitted here and
            hold in the evidence, so with them `methods` is needed.
        candidate_scales: the candidate scales (HalfNormal scale of τ_cand) searched.
        candidate_dfs: the degrees of freedom searched (None: the normal level).
        gain_locs: the prior means of the effect (`GainPrior.gain_loc`, logits) searched as
            well (e.g. `DEFAULT_LOCS`); None (default) keeps `base.gain_loc`, for the reason
            in the module docstring.
        min_effects_for_loc: with fewer effects in `histories` the mean is not searched even
            when `gain_locs` is given (`base.gain_loc` is kept; see `MIN_EFFECTS_FOR_LOC`).
        scale_hierarchy: size the whole effect hierarchy, not only its candidate level: the
            upper levels' scales (`gain_scale`, `method_scale`, `group_scale`) are multiplied
            by candidate_scale / base.candidate_scale, keeping base's proportions, and the
            marginal likelihood includes their variance (module docstring). Without it a
            small fitted candidate scale sits under upper levels that are not fitted.
        candidate_skews: the skews of the Student-t level searched (`GainPrior.candidate_skew`;
            e.g. `DEFAULT_SKEWS`); a skew other than 0 pairs only with the dfs above 1.
        methods: the method of each past candidate, {candidate: method}, for `method_locs`.
        method_locs: the prior means searched for each method's effects on its own
            (`GainPrior.method_locs`, e.g. `DEFAULT_METHOD_LOCS`), for the methods with at
            least `min_effects_for_loc` effects in `histories`; the others keep base's mean
            (`base.method_locs`, else `gain_loc`).
            None (default): one mean for all.
        method_contrasts: keep the effects' overall mean at `gain_loc` and take from the
            history only how the methods differ: each method's mean is gain_loc plus its fitted
            mean minus the fitted mean of all their effects together.
        method_spreads: shrink each method's mean toward `gain_loc` by the evidence instead of
            fitting it on its own (`method_locs`): the methods' means are drawn from
            N(gain_loc, ω²), ω is chosen among these spreads (e.g. `DEFAULT_METHOD_SPREADS`; 0 is
            one mean for all) by the marginal likelihood with each method's mean integrated out,
            and each method with past effects gets its posterior mean. Needs `methods`; with
            fewer than `min_effects_for_loc` effects ω is 0.
        integrate_method_spread: with `method_spreads`, average each method's posterior mean
            over ω's posterior instead of taking it at the most evident ω: ω ~ HalfCauchy with
            `base.method_scale`, on the spreads given (trapezoid weights). Four or five methods
            say little about ω, so its whole posterior is what the evidence gives (module
            docstring).
        shared_scales: size the levels the candidates of one campaign share (μ_A, and with
            `methods` the method level) by the evidence: base's `gain_scale`, `method_scale` and
            `group_scale` are multiplied by the k among these (e.g. `DEFAULT_SHARED_SCALES`; 0:
            the candidates of a campaign are independent given the prior) whose marginal
            likelihood, with each past campaign's effects taken jointly, is largest, searched
            together with the candidate scale once the rest of the prior is chosen (module
            docstring). None (default): base's levels as they are.
        baseline_level: also fit the prior of the policies' level (`GainPrior.baseline_loc`,
            `baseline_scale`) to the past campaigns' starting policies (`start_arms`, by
            `fit_baseline_level`), with at least `MIN_CAMPAIGNS_FOR_BASELINE` of them, before the
            rest: gains are modelled on the logit scale, so a campaign that has not measured its
            starting policy prices every gain at the J this prior expects (0.5 for the library's).
            Off by default: on three held-out random families (200 worlds each, every strategy
            under it) it moved the rule by −0.007 [−0.014, +0.001] where the policy already
            works, +0.002 where it mostly fails and −0.007 where starts lie anywhere.
        fix_probs: also search the one-fix structure (`GainPrior.fix_prob`, `fix_loc`,
            `fix_scale`): these q (e.g. `DEFAULT_FIX_PROBS`; 0 is none) with every
            `fix_locs` × `fix_scales`, jointly with the candidate scale and level, each past
            campaign's effects taken jointly with its one fix summed out (module docstring).
            The rest of the prior (means, skew) is chosen first. Not with `shared_scales`.
        method_fix_concentrations: with `fix_probs` and `methods`, let each method with at
            least `min_effects_for_loc` past effects have its own q, shrunk toward the common q
            by the evidence (`GainPrior.method_fix_probs`), so that the fix follows the method
            that usually holds it: each method's q is drawn from Beta(κ·q, κ·(1 − q)), integrated
            out of the marginal likelihood, κ is chosen among these (e.g.
            `DEFAULT_METHOD_FIX_CONCENTRATIONS`) or infinity (one q for all), and each method
            gets its posterior mean. Other candidates keep the common q.
        fix_units: with `fix_probs`, the units of the fix searched (`GainPrior.fix_unit`):
            "candidate" (at most one fix per campaign) and, with `methods`, "method" (each
            method works in a campaign with probability q, and then all its candidates are
            fixes; a past candidate without a method is a unit of its own). The unit with the
            larger marginal likelihood is kept, "method" only by more than `fix_unit_margin`.
        fix_unit_margin: the log Bayes factor a fix per method needs over one fix per campaign
            to be chosen (see `FIX_UNIT_MARGIN`).

    Returns:
        a `GainPriorFit`; pass `fit.prior` as `fit_gains(..., prior=fit.prior)` or
        `CampaignConfig(fit_options={"prior": fit.prior})`.

    Example:
        >>> import bayes_s2r as bs
        >>> past = [[bs.PairedEval("dr", 48, 48, 0, 48), bs.PairedEval("da", 0, 48, 0, 48)],
        ...         [bs.PairedEval("dr", 1, 48, 0, 48), bs.PairedEval("da", 47, 48, 1, 48)]]
        >>> fit = bs.fit_gain_prior(past)
        >>> fit.prior.candidate_df is not None, fit.effects
        (True, 4)
    """
    base = GainPrior() if base is None else base
    if not isinstance(base, GainPrior):
        raise InputError("base", base, "a GainPrior")
    if base.link != "logit":
        raise InputError("base.link", base.link, "'logit' (the quadrature is on the logit scale)")
    scales, locs, levels, method_locs, spreads = _search_grid(candidate_scales, candidate_dfs, gain_locs, base,
                                                              candidate_skews, methods, method_locs, method_spreads)
    if isinstance(min_effects_for_loc, bool) or not isinstance(min_effects_for_loc, int) or min_effects_for_loc < 0:
        raise InputError("min_effects_for_loc", min_effects_for_loc, "a whole number >= 0")
    if not isinstance(scale_hierarchy, bool):
        raise InputError("scale_hierarchy", scale_hierarchy, "True or False")
    if not isinstance(method_contrasts, bool):
        raise InputError("method_contrasts", method_contrasts, "True or False")
    if not isinstance(baseline_level, bool):
        raise InputError("baseline_level", baseline_level, "True or False")
    if not isinstance(integrate_method_spread, bool):
        raise InputError("integrate_method_spread", integrate_method_spread, "True or False")
    if integrate_method_spread and method_spreads is None:
        raise InputError("integrate_method_spread", integrate_method_spread, "False without method_spreads")
    if method_contrasts and spreads is not None:
        raise InputError("method_contrasts", method_contrasts, "False with method_spreads (the spread sets the contrasts)")
    if shared_scales is not None:
        shared = _finite_numbers(shared_scales)
        if shared is None or any(k < 0 for k in shared):
            raise InputError("shared_scales", shared_scales, "a non-empty sequence of numbers >= 0 or None")
        if scale_hierarchy:
            raise InputError("shared_scales", shared_scales, "None with scale_hierarchy (both size the upper levels)")
        shared = tuple(float(k) for k in shared)
    else:
        shared = None
    fix_grid = _fix_grid(fix_probs, fix_locs, fix_scales, shared)
    concentrations = None
    if method_fix_concentrations is not None:
        concentrations = _finite_numbers(method_fix_concentrations)
        if concentrations is None or any(k <= 0 for k in concentrations):
            raise InputError("method_fix_concentrations", method_fix_concentrations,
                             "a non-empty sequence of numbers > 0, or None")
        if fix_grid is None or not isinstance(methods, Mapping):
            raise InputError("method_fix_concentrations", method_fix_concentrations,
                             "None unless fix_probs and methods are given")
    units = _checked_fix_units(fix_units, fix_grid, methods)
    fix_unit_margin = require_finite_nonneg("fix_unit_margin", fix_unit_margin)
    if baseline_level:
        histories = past_campaigns(histories)
        arms = start_arms(histories)
        if len(arms) >= MIN_CAMPAIGNS_FOR_BASELINE:
            loc, scale = fit_baseline_level(arms)
            base = dataclasses.replace(base, baseline_loc=loc, baseline_scale=scale)
    counts, names, campaign_of = past_effects(histories)
    if len(counts) < min_effects_for_loc:
        locs = (base.gain_loc,)
        spreads = None if spreads is None else (0.0,)
    effects_of: dict[str, list[int]] = {}  # method -> indices of its candidates' effects
    for i, name in enumerate(names):
        if (method_locs is not None or spreads is not None or base.method_locs) and name in methods:
            effects_of.setdefault(methods[name], []).append(i)
    if spreads is not None:  # shrinkage places every method that has effects
        of_method = {h: np.asarray(ix) for h, ix in effects_of.items()}
    elif method_locs is not None:
        of_method = {h: np.asarray(ix) for h, ix in effects_of.items() if len(ix) >= min_effects_for_loc}
    else:
        of_method = {}
    # base's method means that are not fitted stay as they are, in the evidence and in the result
    kept_locs = {h: m for h, m in base.method_locs if h not in of_method}
    kept = {h: np.asarray(effects_of[h]) for h in kept_locs if h in effects_of}
    fitted_ix = np.concatenate([np.zeros(0, int), *of_method.values()])  # the effects with their method's mean
    rest = np.setdiff1d(np.arange(len(counts)), np.concatenate([fitted_ix, *kept.values()]))
    if not rest.size and spreads is None:  # every effect has its method's own mean: nothing left to place gain_loc
        locs = (base.gain_loc,)
    grid_ll = _effects_grid(counts, base)  # [E, D]
    at_scale = {s: _upper_levels(grid_ll, _upper_sd(_hierarchy_at(base, float(s)))) if scale_hierarchy else grid_ll
                for s in scales}
    by_key, by_method = {}, {}  # key: (gain_loc, skew, scale, df, spread or None)
    spread_mean = {}  # key: ω's posterior mean, with integrate_method_spread
    k = round(_METHOD_MEAN_RANGE / _METHOD_MEAN_STEP)  # with spreads: one grid of method means for every loc
    grid = np.arange(min(locs) - k * _METHOD_MEAN_STEP, max(locs) + (k + 1) * _METHOD_MEAN_STEP, _METHOD_MEAN_STEP)
    for df, skew in levels:
        for s in scales:
            each = {}  # per mean, each effect's log evidence [E]

            def at(loc, s=s, df=df, skew=skew, each=each):
                if loc not in each:
                    each[loc] = _effect_evidence(at_scale[s], base, float(s), df, skew, np.asarray([loc]))[:, 0]
                return each[loc]

            def others(loc, kept=kept, at=at):  # the effects not placed by a fitted method mean
                return float(at(loc)[rest].sum()) + sum(float(at(kept_locs[h])[ix].sum()) for h, ix in kept.items())

            if spreads is not None:
                per_effect = _effect_evidence(at_scale[s], base, float(s), df, skew, grid) if of_method else None
                for loc in locs:
                    shrunk = _shrunk_method_means(at, grid, per_effect, loc, spreads, of_method)
                    if integrate_method_spread:
                        key = (loc, skew, float(s), df, None)
                        evidence, by_method[key], spread_mean[key] = _over_spread(shrunk, loc, base.method_scale)
                        by_key[key] = others(loc) + evidence
                        continue
                    for w, (evidence, means) in shrunk.items():
                        by_key[loc, skew, float(s), df, w] = others(loc) + evidence
                        by_method[loc, skew, float(s), df, w] = means
                continue
            # each method's mean is chosen on its own effects (the evidence is a sum over effects)
            best_m = {h: float(max(method_locs, key=lambda m, ix=ix: at(float(m))[ix].sum()))
                      for h, ix in of_method.items()}
            m_all = (float(max(method_locs, key=lambda m: at(float(m))[fitted_ix].sum()))
                     if method_contrasts and of_method else 0.0)
            for loc in locs:
                key = (loc, skew, float(s), df, None)
                means = {h: round(loc + m - m_all, 9) for h, m in best_m.items()} if method_contrasts else best_m
                by_key[key] = others(loc) + sum(float(at(m)[of_method[h]].sum()) for h, m in means.items())
                by_method[key] = means
    best_key = max(by_key, key=by_key.get)
    loc_best, skew_best, scale_best, df_best, spread_best = best_key
    out = {(s, d): v for (loc, k, s, d, w), v in by_key.items()
           if loc == loc_best and k == skew_best and w == spread_best}
    normals = [v for (loc, k, s, d, w), v in by_key.items() if loc == loc_best and w == spread_best and d is None]
    method_locs_best = {**kept_locs, **by_method[best_key]}
    mean_of = np.asarray([method_locs_best.get((methods or {}).get(n), loc_best) for n in names])  # each effect's
    base_up, evidence = base, None
    if shared is not None:  # the shared levels' size, with the candidate scale, given the rest
        method_of = [(methods or {}).get(n) for n in names]
        grouped = isinstance(methods, Mapping) and len({m for m in method_of if m is not None}) > 1
        groups = _campaign_groups(campaign_of, method_of if grouped else [None] * len(names))
        evidence = {(float(sc), k): v for sc in scales for k, v in _shared_evidence(
            grid_ll, base, float(sc), df_best, skew_best, mean_of, groups, shared, grouped).items()}
        scale_best, shared_best = max(evidence, key=evidence.get)
        base_up = dataclasses.replace(base, gain_scale=base.gain_scale * shared_best,
                                      method_scale=base.method_scale * shared_best,
                                      group_scale=base.group_scale * shared_best)
    fix, fix_evidence, method_fix_evidence, concentration = {}, None, None, None
    versus_normal = out[scale_best, df_best] - max(normals) if normals else float("nan")
    unit_evidence = None
    if fix_grid is not None:  # the one-fix structure, with the candidate scale and level, given the rest
        fixes = _OneFixEvidence(grid_ll, at_scale, base, [(d, k) for d, k in levels if k == skew_best], mean_of,
                                _campaign_groups(campaign_of, names), fix_grid)
        groups = {u: None if u == "candidate" else _unit_groups(fixes, names, methods) for u in units}
        by_unit = {}
        for unit in units:
            fixes.use_units(groups[unit])
            by_unit[unit] = fixes.common(scales)
        unit_evidence = {u: max(v for v, _ in options.values()) for u, options in by_unit.items()}
        unit = max(unit_evidence, key=unit_evidence.get)
        if unit != "candidate" and "candidate" in unit_evidence and (
                unit_evidence[unit] - unit_evidence["candidate"] <= fix_unit_margin):
            unit = "candidate"
        fixes.use_units(groups[unit])
        options = by_unit[unit]
        fix_evidence = {key: v for key, (v, _) in options.items()}
        best_fix = max(options, key=fix_evidence.get)
        if best_fix[0] > 0.0:
            scale_best, df_best = options[best_fix][1]
            fix = {"fix_prob": best_fix[0], "fix_loc": best_fix[1], "fix_scale": best_fix[2], "fix_unit": unit}
        if concentrations is not None:
            counted = collections.Counter(methods.get(n) for n in names)
            label = [h if h is not None and counted[h] >= min_effects_for_loc else None
                     for h in map(methods.get, fixes.names_of(names))]
            shrunk = fixes.shrunk(options, label, concentrations)
            key = max(shrunk, key=lambda k: shrunk[k][0])
            method_fix_evidence, (scale_best, df_best), means = shrunk[key]
            concentration = key[3]
            if key[0] > 0.0:
                fix = {"fix_prob": key[0], "fix_loc": key[1], "fix_scale": key[2], "fix_unit": unit,
                       "method_fix_probs": () if math.isinf(concentration) else
                       tuple(sorted((h, round(x, 4)) for h, x in means.items()))}
    prior = dataclasses.replace(_hierarchy_at(base, scale_best) if scale_hierarchy else base_up, gain_loc=loc_best,
                                candidate_scale=scale_best, candidate_df=df_best, candidate_skew=skew_best,
                                method_locs=method_locs_best, fixed_scales=False, **fix)
    return GainPriorFit(prior=prior, log_evidence=out, effects=len(counts),
                        best_minus_normal=versus_normal, method_spread=spread_mean.get(best_key, spread_best),
                        shared_scale=None if shared is None else shared_best, shared_log_evidence=evidence,
                        fix_log_evidence=fix_evidence, method_fix_concentration=concentration,
                        method_fix_log_evidence=method_fix_evidence,
                        fix_unit_log_evidence=unit_evidence if len(units) > 1 else None)


def _fix_grid(fix_probs, fix_locs, fix_scales, shared) -> list[tuple[float, float, float]] | None:
    """The checked (q, fix_loc, fix_scale) options of `fix_probs` (q = 0 once), or None."""
    if fix_probs is None:
        return None
    probs, locs, scales = _finite_numbers(fix_probs), _finite_numbers(fix_locs), _finite_numbers(fix_scales)
    if probs is None or any(not 0.0 <= q < 1.0 for q in probs):
        raise InputError("fix_probs", fix_probs, "a non-empty sequence of probabilities in [0, 1), or None")
    if locs is None:
        raise InputError("fix_locs", fix_locs, "a non-empty sequence of finite numbers (logits)")
    if scales is None or any(w <= 0 for w in scales):
        raise InputError("fix_scales", fix_scales, "a non-empty sequence of numbers > 0 (logits)")
    if shared is not None:
        raise InputError("fix_probs", fix_probs, "None with shared_scales (the two are not searched together)")
    grid = [(0.0, GainPrior.fix_loc, GainPrior.fix_scale)]
    return grid + [(float(q), float(m), float(w)) for q in sorted(set(probs)) if q > 0 for m in locs for w in scales]


def _checked_fix_units(fix_units, fix_grid, methods) -> tuple[str, ...]:
    """The checked `fix_units` of `fit_gain_prior`."""
    units = tuple(fix_units) if isinstance(fix_units, (list, tuple)) else None
    if not units or any(u not in FIX_UNITS for u in units) or len(set(units)) < len(units):
        raise InputError("fix_units", fix_units, f"a non-empty sequence of distinct units among {list(FIX_UNITS)}")
    if units != ("candidate",) and fix_grid is None:
        raise InputError("fix_units", fix_units, "('candidate',) unless fix_probs is given")
    if "method" in units and not isinstance(methods, Mapping):
        raise InputError("fix_units", fix_units, "no 'method' unless methods is given")
    return units


def _unit_groups(fixes: _OneFixEvidence, names: Sequence[str], methods: Mapping[str, str]) -> np.ndarray:
    """[K] each (campaign, candidate) group's (campaign, method) unit; a candidate without a
    method is a unit of its own."""
    keys = [(int(c), methods.get(n) or ("", n)) for c, n in zip(fixes.campaign_of_cand, fixes.names_of(names),
                                                                  strict=True)]
    index: dict = {}
    return np.asarray([index.setdefault(k, len(index)) for k in keys])


class _OneFixEvidence:
    """The past campaigns' log evidence under the one-fix structure, Σ_c log[(1 − Σ_{k∈c} q_k)·
    Π_e L0_e + Σ_{k∈c} q_k·L1_k·Π_{e∉k} L0_e]: campaign c tried the candidates k ∈ c, L0_e is
    effect e's evidence under the candidate level (at its own mean) and L1_k that of candidate
    k's effects as the fix, N(fix_loc, fix_scale²); an untried fix leaves Π L0, counted in
    1 − Σ q_k. A q with Σ_{k∈c} q_k ≥ 1 in some campaign is left out.

    With `use_units` (a fix per method, [K] each group's (campaign, method) unit), the units
    work independently: Σ_c Σ_u log[(1 − q_u)·Π_{k∈u} L0_k + q_u·Π_{k∈u} L1_k]."""

    def __init__(self, grid_ll, at_scale, base, levels, mean_of, groups, fix_grid):
        self.at_scale, self.base, self.levels, self.mean_of, self.fix_grid = at_scale, base, levels, mean_of, fix_grid
        self.cand_of, self.campaign_of_cand = groups  # [E] each effect's (campaign, candidate), [K] its campaign
        self.onto = np.eye(self.campaign_of_cand.max() + 1)[self.campaign_of_cand]  # [K, campaigns]
        z = special.ndtri(_mid(_FIX_NODES))
        self.as_fix = {(m, w): special.logsumexp(_on_grid(grid_ll, np.clip(m + w * z, _DELTA_GRID[0], _DELTA_GRID[-1])),
                                                 axis=1) - math.log(z.size)
                       for _, m, w in fix_grid}  # [E] each
        self._plain = {}
        self.unit_of = self.unit_first = None

    def use_units(self, unit_of: np.ndarray | None) -> None:
        """Units of the fix for the evidence from here on: None (one fix per campaign) or [K]
        each (campaign, candidate) group's unit (`_unit_groups`)."""
        self.unit_of = unit_of
        self.unit_first = None if unit_of is None else np.unique(unit_of, return_index=True)[1]  # a group of each

    def names_of(self, names: Sequence[str]) -> list[str]:
        """[K] each (campaign, candidate) group's candidate name."""
        out = [""] * self.campaign_of_cand.size
        for e, k in enumerate(self.cand_of):
            out[k] = names[e]
        return out

    def plain(self, s, df, skew) -> np.ndarray:
        """[E] each effect's log evidence at its own mean under the level."""
        if (s, df, skew) not in self._plain:
            out = np.empty(len(self.mean_of))
            for m in np.unique(self.mean_of):
                ix = self.mean_of == m
                out[ix] = _effect_evidence(self.at_scale[s][ix], self.base, float(s), df, skew, np.asarray([m]))[:, 0]
            self._plain[s, df, skew] = out
        return self._plain[s, df, skew]

    def common(self, scales) -> dict:
        """{(q, fix_loc, fix_scale): (log evidence with every candidate's q the same, the
        (candidate_scale, candidate_df) that maximises it)}."""
        out, ones = {}, np.ones((1, self.campaign_of_cand.size))
        for s in scales:
            for df, skew in self.levels:
                plain = self.plain(s, df, skew)
                lifts = {key: self.lift(plain, key) for key in {(m, w) for _, m, w in self.fix_grid}}
                for q, m, w in self.fix_grid:
                    total = float(self.totals(plain, lifts[m, w], q * ones)[0])
                    if np.isfinite(total) and total > out.get((q, m, w), (-np.inf,))[0]:
                        out[q, m, w] = (total, (float(s), df))
        return out

    def lift(self, plain: np.ndarray, fix_key) -> tuple[np.ndarray, np.ndarray]:
        """([K] log L1_k − log Π_{e∈k} L0_e, [campaigns] its largest in each campaign)."""
        lift = np.zeros(self.campaign_of_cand.size)
        np.add.at(lift, self.cand_of, self.as_fix[fix_key] - plain)
        top = np.zeros(self.onto.shape[1])
        np.maximum.at(top, self.campaign_of_cand, lift)
        return lift, top

    def totals(self, plain: np.ndarray, lifted: tuple[np.ndarray, np.ndarray], q: np.ndarray) -> np.ndarray:
        """[S] the log evidence for each row of q ([S, K]), with `lifted` = `lift(plain, fix_key)`;
        −inf where a campaign's q sum to 1 or more."""
        lift, top = lifted
        if self.unit_of is not None:  # each unit on its own: q is its candidates' (all the same)
            unit_lift = np.zeros(self.unit_first.size)
            np.add.at(unit_lift, self.unit_of, lift)
            qu = q[:, self.unit_first]
            with np.errstate(divide="ignore"):
                return plain.sum() + np.logaddexp(np.log1p(-qu), np.log(qu) + unit_lift).sum(axis=1)
        none = 1.0 - q @ self.onto
        inner = (q * np.exp(lift - top[self.campaign_of_cand])) @ self.onto
        with np.errstate(invalid="ignore", divide="ignore"):
            each = np.log(np.maximum(none, 0.0) * np.exp(-top) + inner) + top
        return np.where((none > 0.0).all(axis=1), plain.sum() + each.sum(axis=1), -np.inf)

    def shrunk(self, common: dict, label: Sequence, concentrations: Sequence[float], draws: int = 2048,
               best: int = 8):
        """Each labelled method's q drawn from Beta(κ·q, κ·(1 − q)) around the common q and
        integrated out (quasi-Monte Carlo over `draws` points), for the `best` common options:
        {(q, fix_loc, fix_scale, κ): (log evidence, (candidate_scale, candidate_df), {method:
        posterior mean of its q})}; κ = inf is the common q itself."""
        label = np.asarray(label, dtype=object)
        methods = sorted({h for h in label if h is not None})
        u = stats.qmc.Sobol(max(len(methods), 1), scramble=True, seed=0).random(draws)  # [S, methods]
        column = np.asarray([methods.index(h) if h is not None else -1 for h in label])
        out = {}
        ranked = sorted(common, key=lambda key: common[key][0], reverse=True)
        for rank, (q, m, w) in enumerate(ranked):
            value, (s, df) = common[q, m, w]
            out[q, m, w, math.inf] = (value, (s, df), dict.fromkeys(methods, q))
            if q == 0.0 or not methods or rank >= best:
                continue
            plain = self.plain(s, df, self.levels[0][1])
            lifted = self.lift(plain, (m, w))
            for kappa in concentrations:
                own = special.betaincinv(kappa * q, kappa * (1.0 - q), u)       # [S, methods]
                full = np.where(column >= 0, own[:, np.maximum(column, 0)], q)   # [S, K]
                t = self.totals(plain, lifted, full)
                top = t.max()
                if not np.isfinite(top):
                    continue
                weight = np.exp(t - top)  # the prior is truncated to Σ q < 1 in every campaign
                evidence = float(top + np.log(weight[np.isfinite(t)].mean()))
                means = dict(zip(methods, (weight @ own / weight.sum()).tolist(), strict=True))
                out[q, m, w, float(kappa)] = (evidence, (s, df), means)
        return out


def _campaign_groups(campaign_of: np.ndarray, method_of: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """([E] each effect's (campaign, method) group, [G] each group's campaign)."""
    keys = sorted({(int(c), str(m)) for c, m in zip(campaign_of, method_of, strict=True)})
    index = {k: i for i, k in enumerate(keys)}
    return (np.asarray([index[int(c), str(m)] for c, m in zip(campaign_of, method_of, strict=True)]),
            np.asarray([c for c, _ in keys]))


def _each_at(curve, x: np.ndarray) -> np.ndarray:
    """[E, T] column e of the spline `curve` (values [M, E]) at x[e]: each effect's own curve
    at its own points, without evaluating every curve at every effect's points."""
    i = np.clip(np.searchsorted(curve.x, x, side="right") - 1, 0, curve.x.size - 2)
    dx = x - curve.x[i]
    c = curve.c[:, i, np.arange(x.shape[0])[:, None]]  # [4, E, T] the piece's coefficients
    return ((c[0] * dx + c[1]) * dx + c[2]) * dx + c[3]


def _shared_evidence(grid_ll, base, scale, df, skew, mean_of, groups, shared, grouped: bool) -> dict:
    """{k: Σ_c log ∫ N(a) Π_h ∫ N(b) Π_{e ∈ (c, h)} p(e | mean_e + a + b) db da} with
    a ~ N(0, (k·gain_scale)²) shared by campaign c's effects and b ~ N(0, (k·method_scale)²) by
    its effects of one method h (with `grouped` methods; the lens groups of past candidates are
    not known, so the group level is not separated from the method level).

    Each effect's evidence is computed on a grid of its prior mean (`_METHOD_MEAN_STEP`) and
    spline-interpolated; a and b are integrated at equal-probability nodes."""
    from scipy.interpolate import CubicSpline

    group, campaign_of_group = groups
    grid = np.arange(mean_of.min() - _METHOD_MEAN_RANGE, mean_of.max() + _METHOD_MEAN_RANGE + 1e-9, _METHOD_MEAN_STEP)
    curve = CubicSpline(grid, _effect_evidence(grid_ll, base, scale, df, skew, grid).T)  # [M, E]: each effect's
    z = special.ndtri(_mid(_SHARED_NODES))
    out = {}
    for k in shared:
        a = k * base.gain_scale * z                                   # [J]
        b = k * base.method_scale * z if grouped else np.zeros(1)     # [L]
        shift = (a[:, None] + b[None, :]).ravel()                     # [J·L]
        x = np.clip(mean_of[:, None] + shift[None, :], grid[0], grid[-1])
        ll = _each_at(curve, x)                                       # [E, J·L]: effect e at its own points
        per_group = np.zeros((len(campaign_of_group), shift.size))
        np.add.at(per_group, group, ll)
        inner = special.logsumexp(per_group.reshape(-1, a.size, b.size), axis=2) - math.log(b.size)  # [G, J]
        per_campaign = np.zeros((campaign_of_group.max() + 1, a.size))
        np.add.at(per_campaign, campaign_of_group, inner)
        out[k] = float((special.logsumexp(per_campaign, axis=1) - math.log(a.size)).sum())
    return out


def _effect_evidence(grid_ll: np.ndarray, base: GainPrior, scale: float, df: float | None, skew: float,
                     means: np.ndarray) -> np.ndarray:
    """[E, M] each effect's log evidence with the effects' prior mean at each of `means`."""
    delta, log_w = _delta_nodes(dataclasses.replace(base, gain_loc=0.0), scale, df, skew)
    out = np.empty((len(grid_ll), len(means)))
    for j, m in enumerate(means):
        d = np.clip(m + delta, _DELTA_GRID[0], _DELTA_GRID[-1])
        out[:, j] = _logsumexp(_on_grid(grid_ll, d) + log_w, axis=1)
    return out


def _over_spread(shrunk: Mapping[float, tuple[float, dict]], loc: float, scale: float) -> tuple[float, dict, float]:
    """(log ∫ evidence(ω) p(ω) dω, {method: E[m_h]} averaged over ω's posterior, E[ω]) from
    `_shrunk_method_means`'s {ω: (log evidence, means)}, with ω ~ HalfCauchy(scale) on the
    spreads given (trapezoid weights; ω = 0 leaves every method at `loc`)."""
    w = np.asarray(sorted(shrunk))
    width = np.gradient(w) if w.size > 1 else np.ones(1)
    if w.size > 1:
        width[[0, -1]] /= 2
    log_prior = stats.halfcauchy.logpdf(w, scale=scale) + np.log(width)
    log_prior -= special.logsumexp(log_prior)
    joint = np.asarray([shrunk[x][0] for x in w]) + log_prior
    post = special.softmax(joint)
    names = {h for _, means in shrunk.values() for h in means}
    means = {h: float(sum(p * shrunk[x][1].get(h, loc) for p, x in zip(post, w))) for h in sorted(names)}
    return float(special.logsumexp(joint)), means, float(post @ w)


def _shrunk_method_means(at, grid, per_effect, loc, spreads, of_method) -> dict:
    """{spread ω: (Σ_h log ∫ Π_{e∈h} p(e | m) N(m; loc, ω²) dm, {method h: E[m_h | its effects]})}.

    Each method's evidence Σ_{e∈h} log p(e | m), given on `grid` of m by `per_effect` [E, M], is
    spline-interpolated; the normal over m is integrated at equal-probability quantiles.
    ω = 0 is one mean for all (no method means)."""
    from scipy.interpolate import CubicSpline

    curves = {h: CubicSpline(grid, per_effect[ix].sum(0)) for h, ix in of_method.items()}
    z = special.ndtri(_mid(_METHOD_MEAN_NODES))
    out = {}
    for w in spreads:
        if w == 0.0:
            out[w] = (sum(float(at(loc)[ix].sum()) for ix in of_method.values()), {})
            continue
        m = np.clip(loc + w * z, grid[0], grid[-1])
        evidence, means = 0.0, {}
        for h, curve in curves.items():
            lh = curve(m)
            evidence += float(special.logsumexp(lh)) - math.log(m.size)
            means[h] = float(np.dot(special.softmax(lh), m))
        out[w] = (evidence, means)
    return out
