"""The Student-t candidate level (`GainPrior(candidate_df=ν)`) against independent answers:
its prior marginal, a posterior computed by quadrature, and simulation-based calibration."""

import math

import jax
import numpy as np
import pytest
import sbc_gains
from scipy import integrate, stats

from bayes_s2r import Candidate, GainPrior, InputError, PairedReturns, fit_gains

FIT = {"num_warmup": 500, "num_samples": 1000, "num_chains": 2}


def test_the_prior_marginal_of_a_gain_is_student_t():
    # identity link, fixed scales, an almost fixed mean effect: ΔJ_m = 0.05 + 0.1·t_2
    prior = GainPrior(link="identity", gain_loc=0.05, gain_scale=1e-4, method_scale=0.0, group_scale=0.0,
                      candidate_scale=0.1, candidate_df=2.0, fixed_scales=True)
    cands, eps = sbc_gains.design(num_methods=1, lenses=1, per_group=3, episodes=(0, 10, 20))
    gains, _, _ = sbc_gains.prior_draws(jax.random.key(0), cands, eps, 4000, prior)
    ks = stats.kstest(gains.ravel(), stats.t(2.0, loc=0.05, scale=0.1).cdf)
    assert ks.pvalue > 1e-3, ks
    # and not the normal of the same scale: the tails are what the option adds
    assert stats.kstest(gains.ravel(), stats.norm(0.05, 0.1).cdf).pvalue < 1e-6


def test_the_posterior_matches_quadrature():
    # one candidate, known return noise: p(δ | d̄) ∝ t_ν(δ; m0, s) · N(d̄; δ, σ/√n)
    nu, m0, s, sigma = 1.5, 0.0, 0.05, 0.3
    prior = GainPrior(link="identity", gain_loc=m0, gain_scale=1e-4, candidate_scale=s, candidate_df=nu,
                      fixed_scales=True, returns_noise_sd=sigma)
    rng = np.random.default_rng(4)
    treated = rng.normal(0.25, sigma, 30)  # far out in the prior's tail: the t prior lets it through
    ev = [PairedReturns("da", tuple(treated), tuple(np.zeros(30)), id="r")]
    b = fit_gains(ev, [Candidate("da", "adaptation", "representation", method="DA")], prior=prior, seed=2, **FIT)
    se = sigma / math.sqrt(treated.size)

    def dens(x):
        return stats.t.pdf(x, nu, m0, s) * stats.norm.pdf(treated.mean(), x, se)

    lo, hi = treated.mean() - 8 * se, treated.mean() + 8 * se
    z = integrate.quad(dens, -1, 1, points=[m0, treated.mean()], limit=200)[0]
    mean = integrate.quad(lambda x: x * dens(x), -1, 1, points=[m0, treated.mean()], limit=200)[0] / z
    sd = math.sqrt(integrate.quad(lambda x: (x - mean) ** 2 * dens(x), -1, 1, points=[m0, treated.mean()],
                                  limit=200)[0] / z)
    draws = b.column("da")
    assert b.diagnostics["ok"], b.diagnostics
    assert lo < mean < hi
    assert abs(draws.mean() - mean) < 5 * sd / math.sqrt(b.diagnostics["ess_bulk_min"]) + 1e-3
    assert draws.std() == pytest.approx(sd, rel=0.15)
    # a normal prior of the same scale would hold the estimate near the prior mean
    shrink = (treated.size / sigma**2) / (1 / s**2 + treated.size / sigma**2)
    assert mean > shrink * treated.mean() + sd


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), True, "2"])
def test_candidate_df_is_checked(value):
    with pytest.raises(InputError, match="prior.candidate_df"):
        GainPrior(candidate_df=value)


def test_sbc_of_the_student_t_level():
    cands, eps = sbc_gains.design(num_methods=2, lenses=1, per_group=3, episodes=(0, 15, 60))
    res = sbc_gains.run_sbc(16, seed=21, cands=cands, eps=eps, num_warmup=200, num_samples=200, num_chains=1,
                            thin=2, prior=GainPrior(candidate_df=2.0))
    low, high = sbc_gains.coverage_band(res.covered.size, 0.9)
    assert low <= float(res.covered.mean()) <= high
    assert sbc_gains.rank_uniformity(res.ranks, res.num_ranked, bins=4)["p_value"] > 1e-3
    assert int(np.sum(res.divergences > 0)) <= 2
