"""The skewed candidate level (`GainPrior(candidate_skew=κ)`): its prior marginal against direct
simulation of the variance-mean mixture, its mean kept at `gain_loc`, and simulation-based
calibration of the posterior."""

import jax
import numpy as np
import pytest
import sbc_gains
from scipy import integrate, stats

from bayes_s2r import GainPrior, InputError
from bayes_s2r.models.gains import mixing_sd_mean


def _mixture(rng, n, loc, scale, df, skew):
    """δ = loc + scale·(κ(w − c_ν) + w·z), w = λ^-½, λ ~ Gamma(ν/2, rate ν/2), drawn directly."""
    w = 1.0 / np.sqrt(rng.gamma(df / 2, 2 / df, n))
    return loc + scale * (skew * (w - mixing_sd_mean(df)) + w * rng.normal(size=n))


@pytest.mark.parametrize("df", [1.5, 2.0, 5.0, 30.0])
def test_the_mixing_mean_is_the_mean_scale_of_the_student_t_level(df):
    lam = stats.gamma(df / 2, scale=2 / df)
    assert mixing_sd_mean(df) == pytest.approx(integrate.quad(lambda x: x**-0.5 * lam.pdf(x), 0, np.inf)[0],
                                               rel=1e-6)


def test_the_prior_marginal_of_a_skewed_gain_is_the_variance_mean_mixture():
    # identity link, fixed scales, an almost fixed mean effect: ΔJ_m = δ_m exactly
    prior = GainPrior(link="identity", gain_loc=0.05, gain_scale=1e-4, method_scale=0.0, group_scale=0.0,
                      candidate_scale=0.1, candidate_df=5.0, candidate_skew=1.5, fixed_scales=True)
    cands, eps = sbc_gains.design(num_methods=1, lenses=1, per_group=3, episodes=(0, 10, 20))
    gains, _, _ = sbc_gains.prior_draws(jax.random.key(0), cands, eps, 4000, prior)
    gains = np.asarray(gains).ravel()
    direct = _mixture(np.random.default_rng(1), 200_000, 0.05, 0.1, 5.0, 1.5)
    assert stats.ks_2samp(gains, direct).pvalue > 1e-3
    # the mean stays gain_loc while the median falls below it and the right tail grows
    assert gains.mean() == pytest.approx(0.05, abs=0.01)
    assert np.median(gains) < 0.05 - 0.02
    assert stats.skew(direct) > 1 and stats.skew(gains) > 1
    symmetric = _mixture(np.random.default_rng(1), 200_000, 0.05, 0.1, 5.0, 0.0)
    assert stats.ks_2samp(gains, symmetric).pvalue < 1e-6


@pytest.mark.parametrize("kwargs", [{"candidate_skew": 1.0}, {"candidate_skew": 1.0, "candidate_df": 1.0},
                                    {"candidate_skew": float("nan"), "candidate_df": 3.0},
                                    {"candidate_skew": "1", "candidate_df": 3.0}])
def test_candidate_skew_is_checked(kwargs):
    with pytest.raises(InputError, match="prior.candidate_skew"):
        GainPrior(**kwargs)


def test_sbc_of_the_skewed_level():
    cands, eps = sbc_gains.design(num_methods=2, lenses=1, per_group=3, episodes=(0, 15, 60))
    res = sbc_gains.run_sbc(16, seed=22, cands=cands, eps=eps, num_warmup=200, num_samples=200, num_chains=1,
                            thin=2, prior=GainPrior(candidate_scale=0.5, candidate_df=3.0, candidate_skew=2.0))
    low, high = sbc_gains.coverage_band(res.covered.size, 0.9)
    assert low <= float(res.covered.mean()) <= high
    assert sbc_gains.rank_uniformity(res.ranks, res.num_ranked, bins=4)["p_value"] > 1e-3
    assert int(np.sum(res.divergences > 0)) <= 2
