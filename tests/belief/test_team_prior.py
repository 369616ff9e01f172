"""`fit_gain_prior`: the team's candidate level chosen by the marginal likelihood of past
campaigns, checked against Monte-Carlo integration and on histories simulated from a known prior."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

import bayes_s2r as bs
from bayes_s2r import GainPrior, InputError, PairedEval, fit_gain_prior
from bayes_s2r.belief.team_prior import (
    DEFAULT_LOCS,
    DEFAULT_METHOD_LOCS,
    DEFAULT_METHOD_SPREADS,
    DEFAULT_SKEWS,
)
from bayes_s2r.models.gains import mixing_sd_mean


def _skewed(rng, n: int, df: float, skew: float):
    """ε = κ(w − c_ν) + w·z, w = λ^-½, λ ~ Gamma(ν/2, rate ν/2): the skewed level of `models/gains.py`."""
    w = 1.0 / np.sqrt(rng.gamma(df / 2, 2 / df, n))
    return skew * (w - mixing_sd_mean(df)) + w * rng.normal(size=n)


def _simulate(rng, effects: int, scale: float, df: float | None, episodes: int = 48, skew: float = 0.0):
    """One campaign per effect, drawn from the fit's own generative model."""
    tau = scale * np.abs(rng.normal(size=effects))
    eps = (rng.normal(size=effects) if df is None else
           rng.standard_t(df, size=effects) if not skew else _skewed(rng, effects, df, skew))
    alpha = rng.normal(0.0, 1.5, size=effects)
    treated = rng.binomial(episodes, expit(alpha + 0.3 + tau * eps))
    control = rng.binomial(episodes, expit(alpha))
    return [[PairedEval(f"c{i}", int(t), episodes, int(c), episodes)] for i, (t, c) in enumerate(zip(treated, control))]


@pytest.mark.parametrize("counts, scale, df", [((3, 5, 1, 5), 2.0, None), ((5, 5, 0, 5), 1.0, 2.0),
                                               ((0, 6, 4, 6), 4.0, 3.0), ((30, 48, 20, 48), 0.5, 3.0),
                                               ((40, 48, 10, 48), 1.0, None)])
def test_the_evidence_of_one_effect_matches_monte_carlo(counts, scale, df):
    st, nt, sc, nc = counts
    fit = fit_gain_prior([[PairedEval("a", st, nt, sc, nc)]], candidate_scales=[scale], candidate_dfs=[df],
                         gain_locs=None)  # at the base prior's mean, 0.3
    rng = np.random.default_rng(0)
    n = 2_000_000
    alpha = rng.normal(0.0, 1.5, n)
    eps = rng.normal(size=n) if df is None else rng.standard_t(df, n)
    delta = 0.3 + scale * np.abs(rng.normal(size=n)) * eps
    pt, pc = expit(alpha + delta), expit(alpha)
    from scipy.stats import binom

    mc = np.mean(binom.pmf(st, nt, pt) * binom.pmf(sc, nc, pc))
    assert fit.log_evidence[(scale, df)] == pytest.approx(np.log(mc), abs=0.02)


def test_a_heavy_tailed_history_is_recognised_and_a_normal_one_is_not():
    rng = np.random.default_rng(1)
    heavy = fit_gain_prior(_simulate(rng, 200, 3.0, 2.0))
    assert heavy.prior.candidate_df is not None and heavy.prior.candidate_df <= 3
    assert heavy.best_minus_normal > 1  # log Bayes factor (1.8 here: 48 episodes saturate large effects)
    assert 1.5 <= heavy.prior.candidate_scale <= 6
    narrow = fit_gain_prior(_simulate(rng, 200, 0.5, None))
    assert narrow.best_minus_normal < 0.5  # no case for heavy tails
    assert 0.25 <= narrow.prior.candidate_scale <= 1.0


def test_evaluations_are_summed_per_campaign_candidate_and_policy(tmp_path):
    one = [PairedEval("a", 10, 20, 5, 20, round=0), PairedEval("a", 12, 20, 6, 20, round=1),
           bs.ExecutionOutcome("a", 10, 0), PairedEval("a", 3, 20, 5, 20, policy="pi1")]
    summed = [PairedEval("a", 22, 40, 11, 40), PairedEval("a", 3, 20, 5, 20, policy="pi1")]
    grid = {"candidate_scales": [1.0, 2.0], "candidate_dfs": [2.0, None]}
    a, b = fit_gain_prior([one], **grid), fit_gain_prior([summed], **grid)
    assert a.effects == b.effects == 2
    assert a.log_evidence == pytest.approx(b.log_evidence)
    with bs.Ledger(tmp_path / "past.sqlite") as ledger:  # a ledger is a campaign too
        ledger.add_many(one)
        assert fit_gain_prior([ledger], **grid).log_evidence == pytest.approx(a.log_evidence)
    # the same candidate in two campaigns is two effects
    assert fit_gain_prior([one, one], **grid).effects == 4


def test_the_other_settings_of_the_base_prior_are_kept():
    base = GainPrior(baseline_scale=1.0, drift_scale=0.1, candidate_scale=0.7, fixed_scales=True)
    fit = fit_gain_prior(_simulate(np.random.default_rng(2), 30, 2.0, 2.0), base=base)
    assert fit.prior.baseline_scale == 1.0 and fit.prior.drift_scale == 0.1 and not fit.prior.fixed_scales
    assert (fit.prior.candidate_scale, fit.prior.candidate_df) == max(fit.log_evidence, key=fit.log_evidence.get)
    assert "team gain prior from 30 past effects" in fit.text()
    # saturated outcomes only say "large": the chosen scale is the largest searched, and says so
    huge = fit_gain_prior([[PairedEval("a", 48, 48, 0, 48)], [PairedEval("b", 0, 48, 48, 48)]],
                          candidate_scales=[0.5, 1.0, 2.0])
    assert huge.prior.candidate_scale == 2.0 and huge.at_grid_edge and "edge" in huge.text()
    assert not fit_gain_prior([[PairedEval("a", 40, 48, 20, 48)]], candidate_scales=[0.1, 1.0, 9.0]).at_grid_edge
    # the default grid stops at 4 logits, where NUTS still calibrates (see the module docstring)
    capped = fit_gain_prior([[PairedEval("a", 48, 48, 0, 48)], [PairedEval("b", 0, 48, 48, 48)]])
    assert capped.prior.candidate_scale == 4.0 and capped.at_grid_edge


@pytest.mark.parametrize("kwargs, field", [
    ({"histories": []}, "histories"),
    ({"histories": [[bs.ExecutionOutcome("a", 10, 0)]]}, "histories"),
    ({"histories": [PairedEval("a", 1, 2, 1, 2)]}, "histories[0]"),
    ({"histories": "ledger.sqlite"}, "histories"),
    ({"base": GainPrior(link="identity")}, "base.link"),
    ({"base": {"candidate_scale": 1.0}}, "base"),
    ({"candidate_scales": [0.0]}, "candidate_scales"),
    ({"candidate_scales": []}, "candidate_scales"),
    ({"candidate_dfs": [-1.0]}, "candidate_dfs"),
    ({"min_effects_for_loc": -1}, "min_effects_for_loc"),
    ({"candidate_skews": []}, "candidate_skews"),
    ({"candidate_skews": [float("nan")]}, "candidate_skews"),
    ({"candidate_skews": 1.0}, "candidate_skews"),
    ({"candidate_skews": [1.0], "candidate_dfs": [None, 1.0]}, "candidate_skews"),
])
def test_bad_input_is_refused_by_name(kwargs, field):
    args = {"histories": [[PairedEval("a", 1, 2, 1, 2)]], **kwargs}
    with pytest.raises(InputError) as err:
        fit_gain_prior(args.pop("histories"), **args)
    assert err.value.field == field


def test_the_effects_location_is_searched_when_asked():
    rng = np.random.default_rng(3)
    past = []
    for c in range(30):  # a team whose interventions mostly cost a little performance
        a, d = rng.normal(0.0, 0.3, 4), rng.normal(-0.6, 0.15, 4)
        past.append([bs.PairedEval(f"c{k}", int(rng.binomial(64, 1 / (1 + np.exp(-(a[k] + d[k]))))), 64,
                                   int(rng.binomial(64, 1 / (1 + np.exp(-a[k])))), 64) for k in range(4)])
    assert bs.fit_gain_prior(past).prior.gain_loc == bs.GainPrior().gain_loc  # not searched: the base's
    assert bs.fit_gain_prior(past, base=bs.GainPrior(gain_loc=0.2)).prior.gain_loc == 0.2
    assert bs.fit_gain_prior(past, gain_locs=DEFAULT_LOCS).prior.gain_loc == -0.5  # the lowest searched
    few = bs.fit_gain_prior(past[:2], gain_locs=DEFAULT_LOCS)  # 8 effects: too few to place the mean
    assert few.prior.gain_loc == bs.GainPrior().gain_loc
    assert bs.fit_gain_prior(past[:2], gain_locs=DEFAULT_LOCS, min_effects_for_loc=8).prior.gain_loc < 0
    fit = bs.fit_gain_prior(past, gain_locs=(-1.0, -0.6, 0.0, 0.3))
    assert fit.prior.gain_loc == -0.6
    with pytest.raises(bs.InputError, match="gain_locs"):
        bs.fit_gain_prior(past, gain_locs=())


@pytest.mark.parametrize("counts, scale, df", [((30, 48, 20, 48), 0.5, None), ((5, 5, 0, 5), 1.0, 2.0)])
def test_the_evidence_with_the_hierarchy_scaled_matches_monte_carlo(counts, scale, df):
    """δ = gain_loc + s_up·ζ + τ·ε: the upper levels' offset, scaled with the candidate level."""
    st, nt, sc, nc = counts
    base = GainPrior()
    fit = fit_gain_prior([[PairedEval("a", st, nt, sc, nc)]], candidate_scales=[scale], candidate_dfs=[df],
                         scale_hierarchy=True)
    up = scale / base.candidate_scale * np.sqrt(base.gain_scale**2 + base.method_scale**2 + base.group_scale**2)
    rng = np.random.default_rng(0)
    n = 2_000_000
    alpha = rng.normal(0.0, 1.5, n)
    eps = rng.normal(size=n) if df is None else rng.standard_t(df, n)
    delta = 0.3 + up * rng.normal(size=n) + scale * np.abs(rng.normal(size=n)) * eps
    from scipy.stats import binom

    mc = np.mean(binom.pmf(st, nt, expit(alpha + delta)) * binom.pmf(sc, nc, expit(alpha)))
    assert fit.log_evidence[(scale, df)] == pytest.approx(np.log(mc), abs=0.02)
    # the fitted prior carries the upper levels at the same ratio
    k = scale / base.candidate_scale
    assert (fit.prior.gain_scale, fit.prior.method_scale, fit.prior.group_scale) == pytest.approx(
        (base.gain_scale * k, base.method_scale * k, base.group_scale * k))


def test_scaling_the_hierarchy_narrows_the_prior_predictive_to_a_narrow_history():
    """On effects of scale 0.3 logits, fitting the candidate level alone leaves the upper levels'
    0.77 logits on top; sizing the hierarchy brings the whole spread near what was seen."""
    rng = np.random.default_rng(4)
    past = _simulate(rng, 300, 0.3, None)
    alone, whole = fit_gain_prior(past), fit_gain_prior(past, scale_hierarchy=True)

    def spread(p):  # prior sd of one effect in logits (E[τ²] = scale² for each half-normal level)
        return np.sqrt(p.gain_scale**2 + p.method_scale**2 + p.group_scale**2 + p.candidate_scale**2)

    assert spread(alone.prior) > 0.8
    assert spread(whole.prior) < 0.6
    with pytest.raises(InputError, match="scale_hierarchy"):
        fit_gain_prior(past, scale_hierarchy=1)


@pytest.mark.parametrize("counts, scale, df, skew", [((30, 48, 20, 48), 0.5, 3.0, 2.0), ((48, 48, 10, 48), 0.3, 2.0, 4.0),
                                                     ((5, 48, 20, 48), 1.0, 5.0, -1.0)])
def test_the_evidence_of_a_skewed_level_matches_monte_carlo(counts, scale, df, skew):
    st, nt, sc, nc = counts
    fit = fit_gain_prior([[PairedEval("a", st, nt, sc, nc)]], candidate_scales=[scale], candidate_dfs=[df],
                         candidate_skews=[skew])
    assert fit.prior.candidate_skew == skew and f"skew={skew:g}" in fit.text()
    rng = np.random.default_rng(0)
    n = 2_000_000
    alpha = rng.normal(0.0, 1.5, n)
    delta = 0.3 + scale * np.abs(rng.normal(size=n)) * _skewed(rng, n, df, skew)
    from scipy.stats import binom

    mc = np.mean(binom.pmf(st, nt, expit(alpha + delta)) * binom.pmf(sc, nc, expit(alpha)))
    assert fit.log_evidence[(scale, df)] == pytest.approx(np.log(mc), abs=0.02)


def test_a_skewed_history_is_recognised_and_a_symmetric_one_keeps_a_small_skew():
    rng = np.random.default_rng(5)
    grid = {"candidate_scales": [0.25, 0.5, 1.0], "candidate_dfs": [3.0, None]}  # small: a test, not a search
    skewed = fit_gain_prior(_simulate(rng, 300, 0.5, 3.0, skew=4.0), candidate_skews=DEFAULT_SKEWS, **grid)
    assert skewed.prior.candidate_skew >= 2.0
    symmetric = fit_gain_prior(_simulate(rng, 300, 0.5, 3.0), candidate_skews=DEFAULT_SKEWS, **grid)
    assert symmetric.prior.candidate_skew <= 0.5
    # searched only when asked, and then the normal level competes at skew 0
    assert fit_gain_prior(_simulate(rng, 30, 0.5, 3.0, skew=4.0), **grid).prior.candidate_skew == 0.0


METHODS = {"si": "SI", "ft": "FT", "dr": "DR"}
METHOD_GRID = {"candidate_scales": [0.3, 0.5, 1.0], "candidate_dfs": [None]}


def _two_methods(rng, campaigns: int, means=(("si", -0.3), ("ft", 1.5), ("dr", 0.3))):
    """Past campaigns with an SI candidate of mean effect -0.3, an FT one of mean 1.5 and a DR
    one of 0.3 (logits; or the `means` given)."""
    past = []
    for _ in range(campaigns):
        alpha = rng.normal(0.0, 1.0)
        delta = {name: rng.normal(m, 0.4) for name, m in means}
        past.append([PairedEval(name, int(rng.binomial(48, expit(alpha + d))), 48, int(rng.binomial(48, expit(alpha))), 48)
                     for name, d in delta.items()])
    return past


def _one_method(past, name):
    """The same campaigns with only `name`'s evaluations."""
    return [[r for r in c if r.candidate == name] for c in past]


def test_each_methods_mean_is_fitted_on_its_own_effects():
    past = _two_methods(np.random.default_rng(6), 20)
    methods, grid = METHODS, METHOD_GRID
    fit = fit_gain_prior(past, methods=methods, method_locs=DEFAULT_METHOD_LOCS, **grid)
    locs = dict(fit.prior.method_locs)
    assert locs["FT"] == 1.5 and locs["SI"] in (-0.5, -0.25) and locs["DR"] in (0.25, 0.5)
    assert "method means" in fit.text()
    # the evidence is the sum of each method's, each at its own mean (the same effects fitted apart)
    s = fit.prior.candidate_scale
    parts = [fit_gain_prior(_one_method(past, name), gain_locs=[locs[h]],
                            min_effects_for_loc=0, candidate_scales=[s], candidate_dfs=[None])
             for name, h in methods.items()]
    assert fit.log_evidence[(s, None)] == pytest.approx(sum(p.log_evidence[(s, None)] for p in parts), abs=1e-9)
    # contrasts only: the methods keep their differences and the overall mean stays gain_loc
    contrasts = fit_gain_prior(past, methods=methods, method_locs=DEFAULT_METHOD_LOCS, method_contrasts=True,
                               **grid)
    c = dict(contrasts.prior.method_locs)
    every = fit_gain_prior(past, methods={n: "all" for n in methods}, method_locs=DEFAULT_METHOD_LOCS,
                           candidate_scales=[contrasts.prior.candidate_scale], candidate_dfs=[None])
    shift = GainPrior().gain_loc - dict(every.prior.method_locs)["all"]
    assert c == pytest.approx({h: m + shift for h, m in dict(
        fit_gain_prior(past, methods=methods, method_locs=DEFAULT_METHOD_LOCS,
                       candidate_scales=[contrasts.prior.candidate_scale], candidate_dfs=[None]).prior.method_locs).items()})
    assert c["FT"] - c["SI"] == pytest.approx(locs["FT"] - locs["SI"])
    with pytest.raises(InputError, match="method_contrasts"):
        fit_gain_prior(past, methods=methods, method_locs=DEFAULT_METHOD_LOCS, method_contrasts=1)
    # a method with too few effects keeps gain_loc; without method_locs nothing is fitted per method
    few = fit_gain_prior(past[:8], methods=methods, method_locs=DEFAULT_METHOD_LOCS, **grid)
    assert few.prior.method_locs == ()
    assert fit_gain_prior(past, methods=methods, **grid).prior.method_locs == ()
    # only the named candidates count for their method
    assert set(dict(fit_gain_prior(past, methods={"ft": "FT"}, method_locs=DEFAULT_METHOD_LOCS,
                                   **grid).prior.method_locs)) == {"FT"}


def test_the_bases_method_means_hold_in_the_evidence_and_are_kept():
    past = _two_methods(np.random.default_rng(7), 12)
    methods = METHODS
    grid = {"candidate_scales": [0.5], "candidate_dfs": [None]}
    base = GainPrior(method_locs={"FT": 1.5, "DA": 0.7})  # DA: no past effects
    fit = fit_gain_prior(past, base=base, methods=methods, **grid)
    assert dict(fit.prior.method_locs) == {"FT": 1.5, "DA": 0.7}
    alone = [fit_gain_prior(_one_method(past, name), min_effects_for_loc=0,
                            gain_locs=[1.5 if name == "ft" else base.gain_loc], **grid) for name in methods]
    assert fit.log_evidence[(0.5, None)] == pytest.approx(sum(a.log_evidence[(0.5, None)] for a in alone), abs=1e-9)
    # a method fitted here replaces base's mean for it; the others are kept
    searched = fit_gain_prior(past, base=base, methods={"si": "SI"}, method_locs=DEFAULT_METHOD_LOCS, **grid)
    assert set(dict(searched.prior.method_locs)) == {"SI", "FT", "DA"}
    assert dict(searched.prior.method_locs)["FT"] == 1.5
    with pytest.raises(InputError) as err:  # without the methods the evidence cannot place them
        fit_gain_prior(past, base=base, **grid)
    assert err.value.field == "methods"


@pytest.mark.parametrize("kwargs, field", [({"method_locs": [1.0]}, "methods"),
                                           ({"method_locs": [1.0], "methods": {"a": 1}}, "methods"),
                                           ({"method_locs": [], "methods": {"a": "FT"}}, "method_locs"),
                                           ({"method_locs": [float("inf")], "methods": {"a": "FT"}}, "method_locs")])
def test_bad_method_arguments_are_refused_by_name(kwargs, field):
    with pytest.raises(InputError) as err:
        fit_gain_prior([[PairedEval("a", 1, 2, 1, 2)]], **kwargs)
    assert err.value.field == field



def test_shrunk_method_means_match_the_integral_over_each_methods_mean():
    past = _two_methods(np.random.default_rng(8), 12)
    methods = METHODS
    grid = {"candidate_scales": [0.5], "candidate_dfs": [None]}
    spread, loc = 0.5, GainPrior().gain_loc
    fit = fit_gain_prior(past, methods=methods, method_spreads=[spread], **grid)
    assert fit.method_spread == spread
    # reference: each method's evidence at its mean m from the one-mean fit of its effects alone,
    # integrated against N(m; gain_loc, spread²) by the trapezoid rule on a dense grid
    m = np.linspace(loc - 4 * spread, loc + 4 * spread, 97)
    density = np.exp(-0.5 * ((m - loc) / spread) ** 2) / (spread * np.sqrt(2 * np.pi))
    total = 0.0
    for name, h in methods.items():
        ll = np.array([fit_gain_prior(_one_method(past, name), gain_locs=[x], min_effects_for_loc=0,
                                      **grid).log_evidence[(0.5, None)] for x in m])
        weight = np.exp(ll - ll.max()) * density
        total += ll.max() + np.log(np.trapezoid(weight, m))
        assert dict(fit.prior.method_locs)[h] == pytest.approx(np.trapezoid(weight * m, m) / np.trapezoid(weight, m),
                                                               abs=0.01)
    assert fit.log_evidence[(0.5, None)] == pytest.approx(total, abs=0.02)


def test_methods_that_differ_are_kept_apart_and_methods_that_do_not_share_one_mean():
    past = _two_methods(np.random.default_rng(6), 20)
    methods, grid = METHODS, METHOD_GRID
    fit = fit_gain_prior(past, methods=methods, method_spreads=DEFAULT_METHOD_SPREADS, **grid)
    shrunk = dict(fit.prior.method_locs)
    alone = dict(fit_gain_prior(past, methods=methods, method_locs=np.arange(-1.0, 2.5, 0.05).round(2),
                                candidate_scales=[fit.prior.candidate_scale], candidate_dfs=[None]).prior.method_locs)
    assert fit.method_spread > 0 and shrunk["FT"] > shrunk["DR"] > shrunk["SI"]
    for h, m in shrunk.items():  # each mean lies between gain_loc and its own fit
        assert min(alone[h], 0.3) <= m <= max(alone[h], 0.3)
    assert "shrunk to gain_loc" in fit.text()
    # one distribution for every method: the evidence chooses one mean, and the fit is the pooled one
    same = _two_methods(np.random.default_rng(9), 20, means=[(name, 0.3) for name in methods])
    pooled = fit_gain_prior(same, **grid)
    one = fit_gain_prior(same, methods=methods, method_spreads=DEFAULT_METHOD_SPREADS, **grid)
    assert one.method_spread == 0.0 and one.prior == pooled.prior and "one mean for all" in one.text()
    assert one.log_evidence == pytest.approx(pooled.log_evidence, abs=1e-9)
    # too few effects to size the spread: one mean for all
    assert fit_gain_prior(past[:2], methods=methods, method_spreads=DEFAULT_METHOD_SPREADS,
                          **grid).prior.method_locs == ()


def test_integrated_spread_averages_each_spreads_means_by_its_posterior():
    past = _two_methods(np.random.default_rng(8), 12)
    grid, spreads = {"candidate_scales": [0.5], "candidate_dfs": [None]}, (0.0, 0.25, 0.5, 1.0)
    fit = fit_gain_prior(past, methods=METHODS, method_spreads=spreads, integrate_method_spread=True, **grid)
    # reference: one fit per spread, each spread's evidence times its HalfCauchy(method_scale) weight
    # (trapezoid rule on the spreads), normalised; a spread of 0 leaves every method at gain_loc
    alone = [fit_gain_prior(past, methods=METHODS, method_spreads=[w], **grid) for w in spreads]
    evidence = np.array([a.log_evidence[(0.5, None)] for a in alone])
    weight = stats.halfcauchy.pdf(spreads, scale=GainPrior().method_scale) * np.array([0.125, 0.25, 0.375, 0.25])
    post = np.exp(evidence - evidence.max()) * weight
    post /= post.sum()
    for h in METHODS.values():
        means = [dict(a.prior.method_locs).get(h, GainPrior().gain_loc) for a in alone]
        assert dict(fit.prior.method_locs)[h] == pytest.approx(post @ means, abs=1e-9)
    assert fit.method_spread == pytest.approx(post @ np.array(spreads), abs=1e-9)
    assert fit.log_evidence[(0.5, None)] == pytest.approx(
        evidence.max() + np.log(np.exp(evidence - evidence.max()) @ (weight / weight.sum())), abs=1e-9)


def test_integrated_spread_pulls_each_method_toward_gain_loc_and_keeps_a_real_difference():
    rng = np.random.default_rng(3)
    grid, loc = {"candidate_scales": [0.3], "candidate_dfs": [None]}, GainPrior().gain_loc
    own_grid = np.arange(-1.0, 2.5, 0.05).round(2)
    for past, apart in [(_two_methods(rng, 12, means=[(name, 0.3) for name in METHODS]), False),
                        (_two_methods(rng, 12), True)]:
        whole = dict(fit_gain_prior(past, methods=METHODS, method_spreads=DEFAULT_METHOD_SPREADS,
                                    integrate_method_spread=True, **grid).prior.method_locs)
        own = dict(fit_gain_prior(past, methods=METHODS, method_locs=own_grid, **grid).prior.method_locs)
        for h, m in whole.items():  # an average of shrunk means, each between gain_loc and the method's own fit
            assert min(own[h], loc) - 0.03 <= m <= max(own[h], loc) + 0.03
        if apart:  # a method that is usually the fix stays well apart
            assert whole["FT"] > whole["DR"] + 0.7 and whole["FT"] > whole["SI"] + 0.7
        else:  # alike methods sit closer together than their own fits
            assert max(whole.values()) - min(whole.values()) < 0.5 * (max(own.values()) - min(own.values()))


@pytest.mark.parametrize("kwargs, field", [({"method_spreads": [0.5]}, "methods"),
                                           ({"method_spreads": [-0.5], "methods": {"a": "FT"}}, "method_spreads"),
                                           ({"method_spreads": [], "methods": {"a": "FT"}}, "method_spreads"),
                                           ({"method_spreads": [0.5], "method_locs": [1.0], "methods": {"a": "FT"}},
                                            "method_spreads"),
                                           ({"method_spreads": [0.5], "method_contrasts": True, "methods": {"a": "FT"}},
                                            "method_contrasts"),
                                           ({"integrate_method_spread": True, "methods": {"a": "FT"}},
                                            "integrate_method_spread"),
                                           ({"method_spreads": [0.5], "integrate_method_spread": 1, "methods": {"a": "FT"}},
                                            "integrate_method_spread")])
def test_bad_spreads_are_refused_by_name(kwargs, field):
    with pytest.raises(InputError) as err:
        fit_gain_prior([[PairedEval("a", 1, 2, 1, 2)]], **kwargs)
    assert err.value.field == field


def _with_shared_offset(rng, campaigns: int, shared_sd: float, names=("a", "b", "c", "d")):
    """Past campaigns whose candidates' effects share a campaign offset N(0, shared_sd²)."""
    past = []
    for _ in range(campaigns):
        alpha, offset = rng.normal(0.0, 1.0), rng.normal(0.0, shared_sd)
        past.append([PairedEval(n, int(rng.binomial(48, expit(alpha + 0.3 + offset + rng.normal(0, 0.4)))), 48,
                                int(rng.binomial(48, expit(alpha))), 48) for n in names])
    return past


def _evidence_curve(effect, grid):
    """One effect's log evidence at each prior mean of `grid` (scale 0.5, normal level)."""
    return np.array([fit_gain_prior([[effect]], gain_locs=[m], min_effects_for_loc=0, candidate_scales=[0.5],
                                    candidate_dfs=[None]).log_evidence[(0.5, None)] for m in grid])


def _log_trapezoid(ll, x, sd):
    """log ∫ exp(ll(x)) N(x; 0, sd²) dx on the grid x."""
    w = np.exp(ll - ll.max()) * np.exp(-0.5 * (x / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
    return ll.max() + np.log(np.trapezoid(w, x))


@pytest.mark.parametrize("with_methods", [False, True])
def test_the_shared_levels_evidence_matches_nested_integrals(with_methods):
    past = _two_methods(np.random.default_rng(11), 3)
    base, k, loc = GainPrior(), 1.0, GainPrior().gain_loc
    fit = fit_gain_prior(past, shared_scales=[k], candidate_scales=[0.5], candidate_dfs=[None],
                         **({"methods": METHODS} if with_methods else {}))
    # reference: each effect's evidence as a function of its mean (fits of it alone), integrated
    # over the campaign offset a and, with methods, each method's offset b, by the trapezoid rule
    sd_a, sd_b = k * base.gain_scale, k * base.method_scale
    a = np.linspace(-5 * sd_a, 5 * sd_a, 121)
    b = np.linspace(-5 * sd_b, 5 * sd_b, 121)
    m = loc + np.linspace(-5.0, 5.0, 201)  # each effect's evidence on a dense grid of its mean
    total = 0.0
    for campaign in past:
        curves = [_evidence_curve(e, m) for e in campaign]
        if with_methods:  # each candidate is its own method here: b integrates per effect
            inner = sum(np.array([_log_trapezoid(np.interp(loc + x + b, m, c), b, sd_b) for x in a]) for c in curves)
        else:
            inner = sum(np.interp(loc + a, m, c) for c in curves)
        total += _log_trapezoid(inner, a, sd_a)
    assert fit.shared_log_evidence[(0.5, k)] == pytest.approx(total, abs=0.02)


def test_shared_levels_are_sized_by_how_much_a_campaigns_effects_move_together():
    grid = {"candidate_scales": [0.25, 0.5, 1.0], "candidate_dfs": [None]}
    together = fit_gain_prior(_with_shared_offset(np.random.default_rng(3), 30, 1.0), shared_scales=(0.0, 0.5, 1.0, 2.0),
                              **grid)
    apart = fit_gain_prior(_with_shared_offset(np.random.default_rng(4), 30, 0.0), shared_scales=(0.0, 0.5, 1.0, 2.0),
                           **grid)
    assert together.shared_scale >= 1.0 and apart.shared_scale <= 0.5
    assert together.prior.gain_scale == pytest.approx(GainPrior().gain_scale * together.shared_scale)
    assert "shared levels" in together.text()
    # k = 0 is the independent evidence: the same prior as without shared levels, levels at 0
    none = fit_gain_prior(_with_shared_offset(np.random.default_rng(4), 30, 0.0), shared_scales=[0.0], **grid)
    plain = fit_gain_prior(_with_shared_offset(np.random.default_rng(4), 30, 0.0), **grid)
    assert none.prior.candidate_scale == plain.prior.candidate_scale
    assert (none.prior.gain_scale, none.prior.method_scale, none.prior.group_scale) == (0.0, 0.0, 0.0)
    assert none.shared_log_evidence[(plain.prior.candidate_scale, 0.0)] == pytest.approx(
        plain.log_evidence[(plain.prior.candidate_scale, None)], abs=0.01)


@pytest.mark.parametrize("kwargs, field", [({"shared_scales": [-1.0]}, "shared_scales"),
                                           ({"shared_scales": []}, "shared_scales"),
                                           ({"shared_scales": [0.5], "scale_hierarchy": True}, "shared_scales")])
def test_bad_shared_scales_are_refused_by_name(kwargs, field):
    with pytest.raises(InputError) as err:
        fit_gain_prior([[PairedEval("a", 1, 2, 1, 2)]], **kwargs)
    assert err.value.field == field


def _started_at(rng, campaigns: int, loc: float, scale: float, episodes: int = 200):
    """Past campaigns whose starting policies' logits are N(loc, scale²): two paired evaluations
    from the start in round 0, and a later one from an adopted policy that is much better."""
    out = []
    for _ in range(campaigns):
        j = expit(rng.normal(loc, scale))
        out.append([PairedEval("a", int(rng.binomial(episodes, j)), episodes, int(rng.binomial(episodes, j)), episodes,
                               policy="start", round=0),
                    PairedEval("b", int(rng.binomial(episodes, j)), episodes, int(rng.binomial(episodes, j)), episodes,
                               policy="start", round=0),
                    PairedEval("c", 199, 200, 198, 200, policy="adopted", round=1)])
    return out


def test_the_starting_level_is_the_marginal_likelihood_maximum():
    from scipy import optimize, stats

    from bayes_s2r.belief.team_prior import fit_baseline_level, start_arms

    past = _started_at(np.random.default_rng(0), 8, 1.2, 0.5)
    arms = start_arms(past)
    assert arms.shape == (8, 2) and (arms[:, 1] == 400).all()  # the start's two control arms, not the adopted one
    z = np.linspace(-8.0, 8.0, 8001)  # the integral over the standardized level, by the trapezoid rule

    def minus_log_evidence(x):
        loc, scale = x[0], np.exp(x[1])
        pmf = stats.binom.pmf(arms[:, :1], arms[:, 1:], expit(loc + scale * z))
        return -np.log(np.trapezoid(pmf * stats.norm.pdf(z), z, axis=1)).sum()

    exact = optimize.minimize(minus_log_evidence, [0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-3}).x
    loc, scale = fit_baseline_level(arms)
    assert loc == pytest.approx(exact[0], abs=0.05)
    assert scale == pytest.approx(np.exp(exact[1]), rel=0.12)


def test_a_team_prior_can_place_the_starting_policies_where_past_campaigns_started():
    past = _started_at(np.random.default_rng(1), 30, 1.5, 0.4)
    small = {"candidate_scales": (0.5, 1.0), "candidate_dfs": (None,)}  # only the starting level is looked at
    fit = fit_gain_prior(past, baseline_level=True, **small)
    assert fit.prior.baseline_loc == pytest.approx(1.5, abs=0.25)
    assert 0.25 <= fit.prior.baseline_scale <= 0.7
    assert "starting policies at" in fit.text()
    # without it, or with fewer past campaigns than MIN_CAMPAIGNS_FOR_BASELINE, the base prior's level stays
    assert fit_gain_prior(past, **small).prior.baseline_loc == GainPrior().baseline_loc
    few = fit_gain_prior(iter(past[:4]), baseline_level=True, **small).prior
    assert (few.baseline_loc, few.baseline_scale) == (GainPrior().baseline_loc, GainPrior().baseline_scale)
    with pytest.raises(InputError) as err:
        fit_gain_prior(past, baseline_level=1, **small)
    assert err.value.field == "baseline_level"
