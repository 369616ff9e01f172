"""fit_gains: known answers, pooling, sensitivity link, policy conditioning, diagnostics."""

import math

import numpy as np
import pytest

from bayes_s2r import Candidate, GainPrior, PairedEval, PairedReturns, SensitivityTrial, fit_gains
from bayes_s2r.belief import fit as fit_module

FIT = {"num_warmup": 500, "num_samples": 500, "num_chains": 2}   # as in conftest.FIT


def test_conjugate_gaussian_matches_closed_form():
    # identity link, fixed scales, one candidate: prior N(m0, v0), d̄ ~ N(δ, σ²/n)
    prior = GainPrior(link="identity", gain_loc=0.05, gain_scale=0.1, candidate_scale=0.05,
                      fixed_scales=True, returns_noise_sd=0.3)
    rng = np.random.default_rng(1)
    treated = rng.normal(0.12, 0.3, 40)
    control = np.zeros(40)
    ev = [PairedReturns("si", tuple(treated[:25]), tuple(control[:25]), id="r1"),
          PairedReturns("si", tuple(treated[25:]), tuple(control[25:]), id="r2")]
    cands = [Candidate("si", "adaptation", "model", method="SI")]
    b = fit_gains(ev, cands, prior=prior, seed=3, **FIT)
    v0 = 0.1**2 + 0.05**2
    prec = 1 / v0 + 40 / 0.3**2
    mean = (0.05 / v0 + treated.sum() / 0.3**2) / prec
    sd = prec**-0.5
    draws = b.column("si")
    ess = b.diagnostics["ess_bulk_min"]
    assert b.diagnostics["ok"], b.diagnostics
    assert abs(draws.mean() - mean) < 4 * sd / math.sqrt(ess)
    assert draws.std() == pytest.approx(sd, rel=0.12)


def test_pooling_shrinks_data_poor_candidate_toward_group(pooled_fits):
    b = pooled_fits[400]
    m = b.mean()
    # d saw no gain on 10 episodes; its siblings gain about 0.2: d is pulled up, not to 0.2
    assert 0.03 < m["d"] < m[["a", "b", "c"]].mean()
    # (the scale τ_cand of four candidates mixes slowly: R-hat near 1.01 with 2 x 500 draws)
    assert b.diagnostics["rhat_max"] < 1.05 and b.diagnostics["divergences"] == 0
    assert set(b.names) == set("abcde")


def test_unseen_candidate_gets_group_predictive_and_tightens(pooled_fits):
    few, many = pooled_fits[20], pooled_fits[400]
    # the unseen candidate's mean follows its siblings' ...
    assert many.mean()["e"] == pytest.approx(many.mean()[["a", "b", "c"]].mean(), abs=0.06)
    # ... and its sd shrinks as they gather evidence
    assert many.sd()["e"] < 0.85 * few.sd()["e"]
    assert "baseline" in many.extra and 0.4 < many.extra["baseline"] < 0.6


def test_same_seed_same_draws_and_no_retrace(pooled_fits, gains_kit):
    pooled_evidence, pooled_candidates = gains_kit.evidence, gains_kit.candidates
    before = fit_module._nuts_compiled.cache_info().misses
    again = fit_gains(pooled_evidence(400), pooled_candidates(), seed=0, **FIT)
    assert fit_module._nuts_compiled.cache_info().misses == before  # same shape: compiled sampler reused
    np.testing.assert_array_equal(again.draws, pooled_fits[400].draws)
    other = fit_gains(pooled_evidence(400), pooled_candidates(), seed=1, **FIT)
    assert not np.array_equal(other.draws, again.draws)


def test_inference_data_groups_work_with_arviz(pooled_fits):
    import arviz as az

    idata = pooled_fits[400].to_inference_data()
    for group in ("posterior", "observed_data", "sample_stats"):
        assert group in idata.groups()
    s = az.summary(idata, var_names=["gain"])
    assert len(s) == 5 and s["r_hat"].max() < 1.05
    assert int(idata.sample_stats["diverging"].sum()) == pooled_fits[400].diagnostics["divergences"]


def test_starved_fit_is_flagged(gains_kit):
    pooled_evidence, pooled_candidates = gains_kit.evidence, gains_kit.candidates
    b = fit_gains(pooled_evidence(20), pooled_candidates(), seed=0, num_warmup=4, num_samples=300,
                  num_chains=2, max_tree_depth=1)
    assert not b.diagnostics["ok"]
    assert b.diagnostics["reason"]


def _sens_evidence(s_hat_large: bool):
    lo = 12 if s_hat_large else 44
    return [
        PairedEval("lat_fix", 26, 50, 25, 50, id="p1"),
        PairedEval("dr_wide", 27, 50, 25, 50, id="p2"),
        SensitivityTrial("latency", 0.0, 45, 50, tier="direct", id="s0"),
        SensitivityTrial("latency", 1.0, lo, 50, tier="direct", id="s1"),
    ]


def test_sensitivity_evidence_moves_targeting_candidates():
    cands = [Candidate("lat_fix", "adaptation", "model", method="SI", targets="latency"),
             Candidate("dr_wide", "adaptation", "data", method="DR"),
             Candidate("probe", "diagnosis", "model", observes="sensitivity:latency")]
    big = fit_gains(_sens_evidence(True), cands, seed=0, **FIT)
    small = fit_gains(_sens_evidence(False), cands, seed=0, **FIT)
    assert big.names == ("lat_fix", "dr_wide", "sensitivity:latency")
    assert big.mean()["sensitivity:latency"] > 0.5 > small.mean()["sensitivity:latency"]
    # (the posterior difference is about 0.05; 0.03 leaves room for Monte Carlo error)
    assert big.mean()["lat_fix"] > small.mean()["lat_fix"] + 0.03
    assert abs(big.mean()["dr_wide"] - small.mean()["dr_wide"]) < 0.05
    # joint draws: the targeting candidate's gain rises with Ŝ within one posterior
    assert np.corrcoef(big.column("lat_fix"), big.column("sensitivity:latency"))[0, 1] > 0


def test_old_policy_evidence_is_discounted():
    cands = [Candidate(n, "adaptation", "data", method="DR") for n in ("x", "z")] + [
        Candidate("y", "adaptation", "optimization", method="FT")]
    ev = [PairedEval("x", 140, 200, 100, 200, round=0, policy="p0", id="x0"),
          PairedEval("z", 140, 200, 100, 200, round=1, policy="p1", id="z1"),
          PairedEval("y", 110, 200, 100, 200, round=1, policy="p1", id="y1")]
    b = fit_gains(ev, cands, seed=0, lineage={"p1": ["y"]}, **FIT)
    assert b.extra["current_policy"] == "p1"
    assert b.sd()["x"] > 1.2 * b.sd()["z"]
    assert b.mean()["x"] > 0.05       # still informative, not ignored
    assert "order" in b.to_inference_data().posterior
