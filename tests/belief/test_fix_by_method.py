"""A fix per method (`GainPrior.fix_unit="method"`): each method works in a campaign with its
probability, and then every candidate of it is a fix. The gains model's posterior against
quadrature, its prior draws, and `fit_gain_prior`'s evidence for it against Monte-Carlo
integration and on histories simulated with fixes by method and by candidate."""

import dataclasses

import jax
import numpy as np
import pytest
from numpyro.infer import Predictive
from scipy import special, stats

import bayes_s2r as bs
from bayes_s2r import GainPrior, InputError, PairedEval, fit_gain_prior
from bayes_s2r.belief.data import prepare_gains
from bayes_s2r.belief.team_prior import DEFAULT_FIX_PROBS
from bayes_s2r.models.gains import gains_model

# a and b are variants of one method, c of another: each N(0, 1) unless a fix, N(3, 1)
PRIOR = GainPrior(gain_loc=0.0, gain_scale=0.0, candidate_scale=1.0, fixed_scales=True,
                  fix_prob=0.3, fix_loc=3.0, fix_scale=1.0, fix_unit="method")
METHODS = {"a": "DR", "b": "DR", "c": "SI"}
ARM, CONTROL = (21, 48), (20, 48)  # a measured about nothing


def _candidates(methods=METHODS):
    return [bs.Candidate(n, "adaptation", "data", method=h) for n, h in methods.items()]


def _log_binom(s, n, eta):
    return s * special.log_expit(eta) + (n - s) * special.log_expit(-eta)


def _exact(q=PRIOR.fix_prob):
    """P(DR works | a's arm) and E[ΔJ_b | a's arm] by quadrature over α and a's effect."""
    alpha, x = np.linspace(-8, 8, 801), np.linspace(-15, 15, 3001)
    dx = x[1] - x[0]
    log_a = stats.norm.logpdf(alpha, PRIOR.baseline_loc, PRIOR.baseline_scale) + _log_binom(*CONTROL, alpha)
    w = np.exp(log_a - log_a.max())
    dens = {0: stats.norm.pdf(x, 0.0, 1.0), 1: stats.norm.pdf(x, 3.0, 1.0)}
    like = np.exp(_log_binom(*ARM, alpha[:, None] + x[None, :]))
    gain = special.expit(alpha[:, None] + x[None, :]) - special.expit(alpha)[:, None]
    lik = {f: (like * dens[f]).sum(1) * dx for f in (0, 1)}       # a's evidence at each α
    g_b = {f: (gain * dens[f]).sum(1) * dx for f in (0, 1)}       # b's mean gain at each α
    on, off = q * (w * lik[1]).sum(), (1 - q) * (w * lik[0]).sum()
    works = on / (on + off)
    gain_b = (q * (w * lik[1] * g_b[1]).sum() + (1 - q) * (w * lik[0] * g_b[0]).sum()) / (on + off)
    return works, gain_b


def test_a_sibling_that_measured_nothing_takes_its_methods_chance_and_the_gains_match_quadrature():
    ev = [PairedEval("a", *ARM, *CONTROL)]
    belief = bs.fit_gains(ev, _candidates(), prior=PRIOR, seed=2,
                          inference=bs.NUTS(num_warmup=500, num_samples=2000, num_chains=2))
    works, gain_b = _exact()
    assert belief.diagnostics["ok"], belief.diagnostics
    got = belief.extra["fix_probability"]
    assert got["a"] == got["b"] == pytest.approx(works, abs=0.01) and works < 0.05  # from 0.3 before
    assert got["c"] == pytest.approx(PRIOR.fix_prob, abs=1e-6)                      # another method: untouched
    assert belief.mean()["b"] == pytest.approx(gain_b, abs=0.01)
    # in every draw the two siblings are fixes together or not at all
    fixes = np.asarray(belief.to_inference_data().posterior["fixes"]).reshape(-1, 3)
    assert (fixes[:, 0] == fixes[:, 1]).all()
    # under one fix per campaign the same arm leaves b its chance (it even rises)
    one = bs.fit_gains(ev, _candidates(), prior=dataclasses.replace(PRIOR, fix_unit="candidate"), seed=2,
                       inference=bs.NUTS(num_warmup=500, num_samples=2000, num_chains=2))
    assert one.extra["fix_probability"]["b"] > PRIOR.fix_prob


def test_prior_draws_make_each_method_a_fix_with_its_probability():
    # a and b of DR (0.3), c of SI (0.5), d without a method (0.3): units DR, SI, d
    cands = _candidates({"a": "DR", "b": "DR", "c": "SI", "d": None})
    prior = dataclasses.replace(PRIOR, method_fix_probs={"SI": 0.5})
    template = prepare_gains([], cands, prior=prior)
    np.testing.assert_array_equal(np.asarray(template.data.cand_fix_unit), [0, 0, 1, 2])
    data = template.data._replace(treated_successes=None, control_successes=None, cand_est=None, cand_info=None)
    pred = Predictive(lambda d: gains_model(d, template.spec), num_samples=20_000, return_sites=["fixes", "gain"])
    out = jax.device_get(jax.jit(pred)(jax.random.key(0), data))
    fixes = np.asarray(out["fixes"])
    np.testing.assert_allclose(fixes.mean(0), [0.3, 0.3, 0.5, 0.3], atol=0.015)
    assert (fixes[:, 0] == fixes[:, 1]).all()
    assert abs(np.corrcoef(fixes[:, 2], fixes[:, 3])[0, 1]) < 0.03  # the units work independently
    # probabilities that sum above 1 are fine: several methods may work at once
    prepare_gains([], _candidates({n: n.upper() for n in "abcd"}), prior=dataclasses.replace(PRIOR, fix_prob=0.5))


def test_an_unknown_unit_is_refused_by_name():
    with pytest.raises(InputError, match="prior.fix_unit"):
        GainPrior(fix_prob=0.1, fix_unit="group")


# ---- fit_gain_prior ----------------------------------------------------------------------------

NAMES = {"a": "DR", "b": "DR", "c": "SI", "d": "SI", "e": "DA"}


def _history(rng, campaigns: int, *, by_method: bool, fix_lift=4.0):
    """Past campaigns of five candidates near 0.3 logits with fixes of `fix_lift` logits: each
    method works with probability 0.3 and then all its candidates are fixes (`by_method`), or
    one candidate at random is the fix in 80% of the campaigns."""
    past = []
    for _ in range(campaigns):
        alpha = rng.normal(-1.0, 1.0)
        lift = 0.3 + 0.3 * rng.normal(size=len(NAMES))
        if by_method:
            works = {h: rng.random() < 0.3 for h in set(NAMES.values())}
            fix = np.asarray([works[h] for h in NAMES.values()])
        else:
            fix = np.arange(len(NAMES)) == (rng.integers(len(NAMES)) if rng.random() < 0.8 else -1)
        lift = np.where(fix, fix_lift + 0.5 * rng.normal(size=len(NAMES)), lift)
        past.append([PairedEval(n, int(rng.binomial(48, special.expit(alpha + d))), 48,
                                int(rng.binomial(48, special.expit(alpha))), 48) for n, d in zip(NAMES, lift)])
    return past


GRID = {"candidate_scales": [0.25, 0.5, 1.0, 2.0], "candidate_dfs": [2.0, None], "fix_probs": DEFAULT_FIX_PROBS,
        "methods": NAMES, "fix_units": ("candidate", "method")}


def test_fixes_by_method_are_recognised_and_one_fix_by_candidate_is_kept():
    found = fit_gain_prior(_history(np.random.default_rng(3), 30, by_method=True), **GRID)
    assert found.prior.fix_unit == "method" and 0.2 <= found.prior.fix_prob <= 0.3
    assert found.fix_unit_log_evidence["method"] > found.fix_unit_log_evidence["candidate"] + 5.0
    assert "each method works with probability" in found.text()
    one = fit_gain_prior(_history(np.random.default_rng(4), 30, by_method=False), **GRID)
    assert one.prior.fix_unit == "candidate" and 0.1 <= one.prior.fix_prob <= 0.2
    assert one.fix_unit_log_evidence["candidate"] > one.fix_unit_log_evidence["method"]
    # the one-fix search alone is what it was: the same prior as without fix_units
    alone = fit_gain_prior(_history(np.random.default_rng(4), 30, by_method=False),
                           **{k: v for k, v in GRID.items() if k != "fix_units"})
    assert alone.prior == one.prior and alone.fix_unit_log_evidence is None


def test_the_evidence_of_a_fix_per_method_matches_monte_carlo():
    """One past campaign: a and b of DR, c of SI. DR works or not, SI works or not, each
    with q: the evidence is Π over the two methods of (1 − q)·L0 + q·L1 of their effects."""
    campaign = [PairedEval("a", 40, 48, 10, 48), PairedEval("b", 38, 48, 10, 48), PairedEval("c", 12, 48, 10, 48)]
    q, loc, sd, scale = 0.2, 3.0, 1.0, 0.5
    fit = fit_gain_prior([campaign], candidate_scales=[scale], candidate_dfs=[None], fix_probs=[q], fix_locs=[loc],
                         fix_scales=[sd], methods={"a": "DR", "b": "DR", "c": "SI"}, fix_units=("method",))
    rng = np.random.default_rng(0)
    n = 2_000_000
    like = {}
    for m, e in zip("abc", campaign):  # each effect has its own control arm, so its own policy level α
        alpha = rng.normal(0.0, 1.5, size=n)
        level = 0.3 + scale * np.abs(rng.normal(size=n)) * rng.normal(size=n)
        control = stats.binom.pmf(e.successes_control, 48, special.expit(alpha))
        for f, x in ((0, level), (1, rng.normal(loc, sd, size=n))):
            like[m, f] = np.mean(stats.binom.pmf(e.successes_treated, 48, special.expit(alpha + x)) * control)
    dr = (1 - q) * like["a", 0] * like["b", 0] + q * like["a", 1] * like["b", 1]
    si = (1 - q) * like["c", 0] + q * like["c", 1]
    assert fit.fix_log_evidence[(q, loc, sd)] == pytest.approx(np.log(dr * si), abs=0.03)
    assert fit.prior.fix_unit == "method"


@pytest.mark.parametrize("kwargs", [{"fix_units": ("method",)}, {"fix_units": ("candidate", "method"),
                                                                "fix_probs": [0.1]},
                                    {"fix_units": ("group",), "fix_probs": [0.1], "methods": {"a": "DR"}},
                                    {"fix_units": (), "fix_probs": [0.1]},
                                    {"fix_units": "method", "fix_probs": [0.1], "methods": {"a": "DR"}}])
def test_bad_fix_units_are_refused_by_name(kwargs):
    with pytest.raises(InputError, match="fix_units"):
        fit_gain_prior([[PairedEval("a", 30, 48, 20, 48)]], **kwargs)


def test_the_prior_command_searches_a_fix_per_method_when_asked(tmp_path):
    """`bayes-s2r prior --fix-per-method --candidates`: past ledgers whose methods work or fail
    as a whole; the written prior holds the method unit and reaches the fit."""
    import json

    from typer.testing import CliRunner

    from bayes_s2r.cli import app
    from bayes_s2r.cli_decide import _read_prior
    from bayes_s2r.evidence.ledger import Ledger

    toml = tmp_path / "candidates.toml"
    toml.write_text("".join(f'[[candidate]]\nname = "{n}"\nrole = "adaptation"\nlens = "data"\nmethod = "{h}"\n\n'
                            for n, h in NAMES.items()))
    past = []
    for i, campaign in enumerate(_history(np.random.default_rng(3), 30, by_method=True)):
        path = tmp_path / f"past{i}.sqlite"
        with Ledger(path) as ledger:
            ledger.add_many(campaign)
        past.append(str(path))
    out = tmp_path / "prior.json"
    runner = CliRunner()
    result = runner.invoke(app, ["prior", *past, "--fix-per-method", "--candidates", str(toml), "--json",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["prior"]["fix_unit"] == "method"
    assert printed["fix_unit_log_evidence"]["method"] > printed["fix_unit_log_evidence"]["candidate"]
    assert _read_prior(out).fix_unit == "method"
    refused = runner.invoke(app, ["prior", *past[:2], "--fix-per-method"])
    assert refused.exit_code != 0 and "--fix-per-method" in refused.output


def test_a_fix_per_method_needs_more_than_the_margin_to_be_chosen():
    past = _history(np.random.default_rng(3), 30, by_method=True)
    found = fit_gain_prior(past, **GRID)
    lead = found.fix_unit_log_evidence["method"] - found.fix_unit_log_evidence["candidate"]
    kept = fit_gain_prior(past, **GRID, fix_unit_margin=lead + 0.1)
    assert kept.prior.fix_unit == "candidate" and kept.fix_unit_log_evidence == found.fix_unit_log_evidence
    assert f"log Bayes factor {-lead:+.2f} against a fix per method" in kept.text()  # the evidence it overrode
    assert kept.prior == fit_gain_prior(past, **{k: v for k, v in GRID.items() if k != "fix_units"}).prior
    assert fit_gain_prior(past, **GRID, fix_unit_margin=lead - 0.1).prior == found.prior
    with pytest.raises(InputError, match="fix_unit_margin"):
        fit_gain_prior(past, **GRID, fix_unit_margin=-1.0)
