"""The one-fix structure (`GainPrior.fix_prob`): at most one candidate of a campaign is the fix.
The gains model's posterior of which one, and of the gains, against quadrature; its prior
draws; and `fit_gain_prior`'s evidence for it against Monte-Carlo integration and on histories
simulated with and without one fix per campaign."""

import dataclasses
import json

import jax
import numpy as np
import pytest
from numpyro.infer import Predictive
from scipy import special, stats

import bayes_s2r as bs
from bayes_s2r import GainPrior, InputError, PairedEval, fit_gain_prior
from bayes_s2r.belief.data import prepare_gains
from bayes_s2r.belief.team_prior import DEFAULT_FIX_PROBS, DEFAULT_METHOD_FIX_CONCENTRATIONS
from bayes_s2r.models.gains import gains_model

# two candidates, each N(0, 1) around the current policy unless it is the fix, N(3, 1)
PRIOR = GainPrior(gain_loc=0.0, gain_scale=0.0, candidate_scale=1.0, fixed_scales=True,
                  fix_prob=0.3, fix_loc=3.0, fix_scale=1.0)
ARMS = {"a": (40, 48), "b": (22, 48)}
CONTROL = (20, 48)


def _log_binom(s, n, eta):
    return s * special.log_expit(eta) + (n - s) * special.log_expit(-eta)


def _exact(q=PRIOR.fix_prob):
    """P(k | data) and E[ΔJ_m | data] by quadrature: α on a grid, each candidate's effect
    integrated on a grid against its level and against the fix's effect."""
    alpha, x = np.linspace(-8, 8, 801), np.linspace(-15, 15, 3001)
    dx = x[1] - x[0]
    log_a = stats.norm.logpdf(alpha, PRIOR.baseline_loc, PRIOR.baseline_scale) + 2 * _log_binom(*CONTROL, alpha)
    w_a = np.exp(log_a - log_a.max())
    dens = {0: stats.norm.pdf(x, 0.0, 1.0), 1: stats.norm.pdf(x, 3.0, 1.0)}
    gain = special.expit(alpha[:, None] + x[None, :]) - special.expit(alpha)[:, None]
    lik, gl = {}, {}
    for m, (s, n) in ARMS.items():
        like = np.exp(_log_binom(s, n, alpha[:, None] + x[None, :]))
        for f in (0, 1):
            lik[m, f] = (like * dens[f]).sum(1) * dx
            gl[m, f] = (like * dens[f] * gain).sum(1) * dx
    p_k = {"none": 1 - 2 * q, "a": q, "b": q}
    fix_of = {"none": (0, 0), "a": (1, 0), "b": (0, 1)}
    z = sum((w_a * p * lik["a", fix_of[k][0]] * lik["b", fix_of[k][1]]).sum() for k, p in p_k.items())
    post = {k: float((w_a * p * lik["a", fix_of[k][0]] * lik["b", fix_of[k][1]]).sum() / z) for k, p in p_k.items()}
    gains = {}
    for i, m in enumerate("ab"):
        o = "ba"[i]
        gains[m] = float(sum((w_a * p * gl[m, fix_of[k][i]] * lik[o, fix_of[k][1 - i]]).sum()
                             for k, p in p_k.items()) / z)
    return post, gains


def _candidates(names="ab"):
    return [bs.Candidate(n, "adaptation", "data") for n in names]


def test_which_candidate_is_the_fix_and_the_gains_match_quadrature():
    ev = [PairedEval(m, s, n, *CONTROL) for m, (s, n) in ARMS.items()]
    belief = bs.fit_gains(ev, _candidates(), prior=PRIOR, seed=2,
                          inference=bs.NUTS(num_warmup=500, num_samples=2000, num_chains=2))
    post, gains = _exact()
    assert belief.diagnostics["ok"], belief.diagnostics
    got = belief.extra["fix_probability"]
    assert got["a"] == pytest.approx(post["a"], abs=0.05) and got["b"] == pytest.approx(post["b"], abs=0.01)
    assert belief.extra["no_fix_probability"] == pytest.approx(post["none"], abs=0.05)
    for m, g in belief.mean().items():
        assert g == pytest.approx(gains[m], abs=0.01), m
    # each draw names one fix or none, and the draws where a is the fix give it the larger gains
    fix = np.asarray(belief.to_inference_data().posterior["fix"]).ravel()
    draws = np.asarray(belief.draws)
    assert set(np.unique(fix)) <= {0, 1, 2}
    assert draws[fix == 1, 0].mean() > draws[fix == 0, 0].mean() + 0.05


def test_svi_carries_the_fix_too():
    """The mean-field fit is more sure of which candidate is the fix than the posterior (0.89
    against 0.71 here), but finds the same one and the gains."""
    ev = [PairedEval(m, s, n, *CONTROL) for m, (s, n) in ARMS.items()]
    belief = bs.fit_gains(ev, _candidates(), prior=PRIOR, method="svi", seed=0)
    _, gains = _exact()
    got = belief.extra["fix_probability"]
    assert got["a"] > 0.5 > got["b"] and sum(got.values()) + belief.extra["no_fix_probability"] == pytest.approx(1.0)
    for m, g in belief.mean().items():
        assert g == pytest.approx(gains[m], abs=0.03), m


@pytest.mark.parametrize("by_method, expected", [({}, [0.4, 0.2, 0.2, 0.2]),
                                                 ({"FT": 0.35, "SI": 0.0}, [0.45, 0.0, 0.35, 0.2])])
def test_prior_draws_hold_one_fix_at_most_with_probability_q_each(by_method, expected):
    # a of method SI, b of FT, c without a method (the common q)
    cands = [bs.Candidate(n, "adaptation", "data", method=h) for n, h in zip("abc", ("SI", "FT", None))]
    prior = dataclasses.replace(PRIOR, fix_prob=0.2, method_fix_probs=by_method)
    template = prepare_gains([], cands, prior=prior)
    data = template.data._replace(treated_successes=None, control_successes=None, cand_est=None, cand_info=None)
    pred = Predictive(lambda d: gains_model(d, template.spec), num_samples=20_000, return_sites=["fix", "gain"])
    out = jax.device_get(jax.jit(pred)(jax.random.key(0), data))
    k = np.asarray(out["fix"])
    freq = np.bincount(k, minlength=4) / k.size
    np.testing.assert_allclose(freq, expected, atol=0.015)
    gain = np.asarray(out["gain"])
    # a fix's gain moves the policy's level α ~ N(0, 1.5²) by φ ~ N(3, 1); the others' by N(0, 1)
    rng = np.random.default_rng(0)
    alpha = rng.normal(0.0, 1.5, 200_000)
    for shift, chosen in ((rng.normal(3.0, 1.0, alpha.size), k == 2), (rng.normal(0.0, 1.0, alpha.size), k != 2)):
        expected = np.mean(special.expit(alpha + shift) - special.expit(alpha))
        assert gain[chosen, 1].mean() == pytest.approx(expected, abs=0.01)  # b's


def test_a_fix_probability_the_candidates_cannot_hold_is_refused_by_name():
    with pytest.raises(InputError, match="prior.fix_prob"):
        GainPrior(fix_prob=1.0)
    with pytest.raises(InputError, match="prior.fix_prob"):
        GainPrior(fix_prob=-0.1)
    with pytest.raises(InputError, match="prior.fix_scale"):
        GainPrior(fix_prob=0.1, fix_scale=0.0)
    with pytest.raises(InputError, match=r"prior.fix_prob.*sum below 1 over the 4 candidates"):
        prepare_gains([], _candidates("abcd"), prior=dataclasses.replace(PRIOR, fix_prob=0.25))
    with pytest.raises(InputError, match="prior.method_fix_probs"):
        GainPrior(method_fix_probs={"FT": 1.0})
    with pytest.raises(InputError, match="prior.method_fix_probs"):
        GainPrior(method_fix_probs={"FT": "0.5"})
    ft = [bs.Candidate(n, "adaptation", "data", method="FT") for n in "ab"]
    with pytest.raises(InputError, match=r"prior.method_fix_probs.*they sum to 1"):
        prepare_gains([], ft, prior=dataclasses.replace(PRIOR, fix_prob=0.1, method_fix_probs={"FT": 0.5}))


# ---- fit_gain_prior ----------------------------------------------------------------------------

def _one_fix_history(rng, campaigns: int, *, fix_chance: float, names="abcde", fix_lift=4.0, fix_at=None):
    """Past campaigns of five candidates near 0.3 logits where, with `fix_chance`, one of them
    (at random, or the one at index `fix_at`) is a fix of `fix_lift` logits."""
    past = []
    for _ in range(campaigns):
        alpha = rng.normal(-1.0, 1.0)
        fix = (rng.integers(len(names)) if fix_at is None else fix_at) if rng.random() < fix_chance else -1
        lift = 0.3 + 0.3 * rng.normal(size=len(names))
        if fix >= 0:
            lift[fix] = fix_lift + 0.5 * rng.normal()
        past.append([PairedEval(n, int(rng.binomial(48, special.expit(alpha + d))), 48,
                                int(rng.binomial(48, special.expit(alpha))), 48) for n, d in zip(names, lift)])
    return past


def test_the_one_fix_evidence_matches_monte_carlo():
    campaign = [PairedEval("a", 44, 48, 10, 48), PairedEval("b", 12, 48, 10, 48)]
    q, loc, sd, scale = 0.2, 3.0, 1.0, 0.5
    fit = fit_gain_prior([campaign], candidate_scales=[scale], candidate_dfs=[None], fix_probs=[q],
                         fix_locs=[loc], fix_scales=[sd])
    rng = np.random.default_rng(0)
    n = 2_000_000
    # each effect has its own control arm, so its own policy level α
    alpha = rng.normal(0.0, 1.5, size=(2, n))
    level = 0.3 + scale * np.abs(rng.normal(size=(2, n))) * rng.normal(size=(2, n))
    fix = rng.normal(loc, sd, size=(2, n))
    control = stats.binom.pmf(10, 48, special.expit(alpha))
    like = {(m, f): stats.binom.pmf(e.successes_treated, 48, special.expit(alpha[i] + (fix if f else level)[i]))
            * control[i] for i, (m, e) in enumerate(zip("ab", campaign)) for f in (0, 1)}
    mc = np.mean((1 - 2 * q) * like["a", 0] * like["b", 0]
                 + q * like["a", 1] * like["b", 0] + q * like["a", 0] * like["b", 1])
    assert fit.fix_log_evidence[(q, loc, sd)] == pytest.approx(np.log(mc), abs=0.03)
    # q = 0 is the evidence without the structure
    assert fit.fix_log_evidence[(0.0, GainPrior.fix_loc, GainPrior.fix_scale)] == pytest.approx(
        fit.log_evidence[(scale, None)], abs=1e-9)


def test_one_fix_per_campaign_is_recognised_and_no_fix_is_not():
    grid = {"candidate_scales": [0.25, 0.5, 1.0, 2.0], "candidate_dfs": [2.0, None], "fix_probs": DEFAULT_FIX_PROBS}
    found = fit_gain_prior(_one_fix_history(np.random.default_rng(5), 30, fix_chance=0.8), **grid)
    assert 0.1 <= found.prior.fix_prob <= 0.2        # 0.8 / 5 = 0.16 per candidate
    assert 3.0 <= found.prior.fix_loc <= 5.0
    assert found.prior.candidate_scale <= 1.0         # the level no longer has to hold the fixes
    assert "one fix" in found.text()
    none = fit_gain_prior(_one_fix_history(np.random.default_rng(6), 30, fix_chance=0.0), **grid)
    assert none.prior.fix_prob <= 0.02
    # without fix_probs nothing of the structure is searched or set
    plain = fit_gain_prior(_one_fix_history(np.random.default_rng(5), 30, fix_chance=0.8),
                           **{k: v for k, v in grid.items() if k != "fix_probs"})
    assert plain.prior.fix_prob == 0.0 and plain.fix_log_evidence is None


def test_the_fix_follows_the_method_that_usually_holds_it():
    """Past campaigns whose fix, when there is one (60%), is always the fine-tuning: FT's own q
    is found well above the others', with more evidence than one q for all."""
    methods = {"a": "DR", "b": "DR", "c": "SI", "d": "DA", "e": "FT"}
    past = _one_fix_history(np.random.default_rng(7), 30, fix_chance=0.6, fix_at=4)
    fit = fit_gain_prior(past, candidate_scales=[0.25, 0.5, 1.0, 2.0], candidate_dfs=[2.0, None], methods=methods,
                         fix_probs=DEFAULT_FIX_PROBS, method_fix_concentrations=DEFAULT_METHOD_FIX_CONCENTRATIONS)
    own = dict(fit.prior.method_fix_probs)
    assert set(own) == {"DR", "SI", "DA", "FT"} and np.isfinite(fit.method_fix_concentration)
    assert own["FT"] >= 0.4 and max(own["DR"], own["SI"], own["DA"]) <= 0.05
    assert fit.method_fix_log_evidence > max(fit.fix_log_evidence.values()) + 2.0
    assert "FT 0." in fit.text()
    # the belief fitted with it gives each candidate its method's q
    cands = [bs.Candidate(n, "adaptation", "data", method=h) for n, h in methods.items()]
    data = prepare_gains([], cands, prior=fit.prior).data
    np.testing.assert_allclose(np.asarray(data.cand_fix_prob), [own[h] for h in methods.values()], rtol=1e-6)
    # where the fix is any candidate, one q for all is kept
    spread = fit_gain_prior(_one_fix_history(np.random.default_rng(5), 30, fix_chance=0.8), methods=methods,
                            candidate_scales=[0.25, 0.5, 1.0, 2.0], candidate_dfs=[2.0, None], fix_probs=DEFAULT_FIX_PROBS,
                            method_fix_concentrations=DEFAULT_METHOD_FIX_CONCENTRATIONS)
    assert spread.method_fix_concentration == np.inf and spread.prior.method_fix_probs == ()


def _beta_moment(q, kappa, n):
    a, b = kappa * q, kappa * (1 - q)
    return np.prod([(a + i) / (a + b + i) for i in range(n)])


def test_the_methods_fix_evidence_matches_beta_moments():
    """Two past campaigns of a (DR) and b (FT), q of each method ~ Beta(κq, κ(1 − q)): each
    campaign's evidence is linear in (q_a, q_b), so the integral over them is a sum of Beta
    moments times the effects' evidence as the fix or not, each by Monte Carlo."""
    campaigns = [[PairedEval("a", 44, 48, 10, 48), PairedEval("b", 12, 48, 10, 48)],
                 [PairedEval("a", 40, 48, 12, 48), PairedEval("b", 14, 48, 12, 48)]]
    q, kappa, loc, sd, scale = 0.1, 10.0, 3.0, 1.0, 0.5
    fit = fit_gain_prior(campaigns, candidate_scales=[scale], candidate_dfs=[None], fix_probs=[q], fix_locs=[loc],
                         fix_scales=[sd], methods={"a": "DR", "b": "FT"}, method_fix_concentrations=[kappa],
                         min_effects_for_loc=1)
    assert fit.method_fix_concentration == kappa  # a was the fix twice: DR's own q earns its place
    rng = np.random.default_rng(0)
    n = 1_000_000
    terms = []  # per campaign (A, B, C): evidence A + B·q_a + C·q_b
    for campaign in campaigns:
        like = {}
        for m, e in zip("ab", campaign):
            alpha = rng.normal(0.0, 1.5, size=n)
            level = 0.3 + scale * np.abs(rng.normal(size=n)) * rng.normal(size=n)
            control = stats.binom.pmf(e.successes_control, 48, special.expit(alpha))
            for f, x in ((0, level), (1, rng.normal(loc, sd, size=n))):
                like[m, f] = np.mean(stats.binom.pmf(e.successes_treated, 48, special.expit(alpha + x)) * control)
        base = like["a", 0] * like["b", 0]
        terms.append((base, like["a", 1] * like["b", 0] - base, like["a", 0] * like["b", 1] - base))
    (a1, b1, c1), (a2, b2, c2) = terms
    m1, m2, m3 = (_beta_moment(q, kappa, k) for k in (1, 2, 3))
    evidence = a1 * a2 + (a1 * b2 + a2 * b1 + a1 * c2 + a2 * c1) * m1 + (b1 * b2 + c1 * c2) * m2 + (b1 * c2 + c1 * b2) * m1**2
    assert fit.method_fix_log_evidence == pytest.approx(np.log(evidence), abs=0.03)
    # DR's posterior mean: E[q_a · f1 · f2] / E[f1 · f2]
    q_a = (a1 * a2 * m1 + (a1 * b2 + a2 * b1) * m2 + (a1 * c2 + a2 * c1) * m1**2 + b1 * b2 * m3
           + c1 * c2 * m1 * m2 + (b1 * c2 + c1 * b2) * m2 * m1) / evidence
    assert dict(fit.prior.method_fix_probs)["DR"] == pytest.approx(q_a, rel=0.03)


@pytest.mark.parametrize("kwargs, field", [({"fix_probs": [1.0]}, "fix_probs"), ({"fix_probs": []}, "fix_probs"),
                                           ({"method_fix_concentrations": [10.0]}, "method_fix_concentrations"),
                                           ({"fix_probs": [0.1], "method_fix_concentrations": [0.0],
                                             "methods": {"a": "DR"}}, "method_fix_concentrations"),
                                           ({"fix_probs": [0.1], "fix_scales": [0.0]}, "fix_scales"),
                                           ({"fix_probs": [0.1], "fix_locs": []}, "fix_locs"),
                                           ({"fix_probs": [0.1], "shared_scales": [0.5]}, "fix_probs")])
def test_bad_fix_settings_are_refused_by_name(kwargs, field):
    with pytest.raises(InputError, match=field):
        fit_gain_prior([[PairedEval("a", 30, 48, 20, 48)]], **kwargs)


def test_the_prior_command_gives_each_method_its_fix_probability(tmp_path):
    """`bayes-s2r prior --one-fix --candidates`: past ledgers whose fix, when there is one, is the
    fine-tuning; the written prior holds FT's own fix probability and reaches the fit."""
    from typer.testing import CliRunner

    from bayes_s2r.cli import app
    from bayes_s2r.cli_decide import _read_prior
    from bayes_s2r.evidence.ledger import Ledger

    methods = {"a": "DR", "b": "DR", "c": "SI", "d": "DA", "e": "FT"}
    toml = tmp_path / "candidates.toml"
    toml.write_text("".join(f'[[candidate]]\nname = "{n}"\nrole = "adaptation"\nlens = "data"\nmethod = "{h}"\n\n'
                            for n, h in methods.items()))
    past = []
    for i, campaign in enumerate(_one_fix_history(np.random.default_rng(7), 30, fix_chance=0.6, fix_at=4)):
        path = tmp_path / f"past{i}.sqlite"
        with Ledger(path) as ledger:
            ledger.add_many(campaign)
        past.append(str(path))
    out = tmp_path / "prior.json"
    result = CliRunner().invoke(app, ["prior", *past, "--one-fix", "--candidates", str(toml), "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    own = dict(printed["prior"]["method_fix_probs"])
    assert printed["method_fix_concentration"] > 0 and own["FT"] > 3 * max(own["DR"], own["SI"], own["DA"])
    assert dict(_read_prior(out).method_fix_probs) == own
