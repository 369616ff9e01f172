"""The look-ahead's parts alone: the outcome models' parameter form against each model's own
`log_likelihood` and `simulate`, the decision functional, the importance weights and the
moment-matched update against closed forms."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import bayes_s2r as bs
from bayes_s2r import outcomes
from bayes_s2r.decision import lookahead as la
from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.problem import build_problem
from bayes_s2r.decision.utility import (
    Utility,
    adoption_probability,
    evaluation_noise,
    shows_improvement,
)

MODELS = [bs.GaussianOutcome(0.05), bs.BinomialPairedOutcome(episodes=30, baseline=0.4), outcomes.NoOutcome()]
THETA = np.linspace(-0.3, 0.4, 9, dtype=np.float32)


def _params(models):
    kind, a, b = (np.array(x) for x in zip(*(m.params() for m in models)))
    return jnp.asarray(kind, jnp.int32), jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)


@pytest.mark.parametrize("y", [0.0, 0.1, 7.0, 12.0])
def test_parameter_form_log_likelihood_is_each_models_own(y):
    kind, a, b = _params(MODELS)
    theta = jnp.tile(jnp.asarray(THETA)[None, :], (len(MODELS), 1))
    got = np.asarray(outcomes.log_likelihood_params(jnp.full(len(MODELS), y, jnp.float32), theta, kind, a, b))
    for i, model in enumerate(MODELS):
        want = np.asarray(model.log_likelihood(y, THETA), np.float64)
        np.testing.assert_allclose(got[i], want, atol=2e-4, rtol=1e-5, err_msg=type(model).__name__)


def test_parameter_form_simulation_follows_each_models_distribution():
    kind, a, b = _params(MODELS)
    theta = jnp.asarray([0.1, 0.2, 0.3], jnp.float32)
    k = 20000
    uni = jax.random.uniform(jax.random.key(1), (2, k), minval=1e-7, maxval=1 - 1e-7)
    sim = jax.vmap(outcomes.simulate_params, in_axes=(0, 0, None, None, None, None, None))
    y = np.asarray(sim(jax.scipy.special.ndtri(uni[0]), uni[1], theta, kind, a, b, outcomes.log_choose_table(a, 32)))
    assert abs(y[:, 0].mean() - 0.1) < 4 * 0.05 / np.sqrt(k) and y[:, 0].std() == pytest.approx(0.05, rel=0.03)
    p = 0.4 + 0.2
    assert abs(y[:, 1].mean() - 30 * p) < 4 * np.sqrt(30 * p * (1 - p) / k)
    assert y[:, 1].var() == pytest.approx(stats.binom.var(30, p), rel=0.05)
    assert np.all(y[:, 2] == 0.0)


def test_moment_observation_reads_a_binomial_count_as_a_rate_difference():
    kind, a, b = _params(MODELS[:2])
    theta_hat, r = outcomes.moment_observation(jnp.asarray([0.07, 18.0]), kind, a, b)
    assert float(theta_hat[0]) == pytest.approx(0.07) and float(r[0]) == pytest.approx(0.05**2)
    p_hat = 18.5 / 31
    assert float(theta_hat[1]) == pytest.approx(p_hat - 0.4, rel=1e-6)
    assert float(r[1]) == pytest.approx(p_hat * (1 - p_hat) / 30, rel=1e-5)


def test_utility_of_a_config_and_its_forms():
    assert DecideConfig(utility="mean", utility_level=0.2).functional == Utility("mean", 0.0)
    lcb = DecideConfig(utility="lcb", utility_level=0.2).functional
    assert lcb.kappa == pytest.approx(stats.norm.ppf(0.2)) and lcb.label == "lcb(0.2)"
    cvar = Utility("cvar", 0.1)
    x = stats.norm.ppf(np.linspace(0.0005, 0.0995, 100))  # the worst 10% of N(0, 1), midpoints
    assert float(cvar.of_moments(0.0, 1.0)) == pytest.approx(x.mean(), rel=1e-3)
    adopt = Utility("adopt")
    assert adopt.adopts and adopt.exact_on_draws and not Utility("lcb").exact_on_draws
    assert adopt.keeps(False) is False and Utility("mean").keeps(False) is True
    with pytest.raises(ValueError, match="moments"):
        Utility("mean").of_draws(np.zeros(3), 0, 0.0, 0.0)


def test_adoption_probability_is_the_evaluations_chance_above_its_threshold():
    theta = np.array([-0.05, 0.0, 0.03, 0.1])
    sd, thr = evaluation_noise(theta, 2, 40.0, 0.5)
    np.testing.assert_allclose(adoption_probability(theta, 2, 40.0, 0.5), stats.norm.cdf((theta - thr) / sd))
    np.testing.assert_allclose(adoption_probability(theta, 0, 0.0, 0.0), theta > 0)
    # a simulated count shows an improvement only above the control's expected count
    assert list(shows_improvement(np.array([20.0, 21.0, 0.01, -0.01]), np.array([2, 2, 1, 1]),
                                  np.array([40.0, 40.0, 0.1, 0.1]), np.full(4, 0.5))) == [False, True, True, False]


def _arrays(mu, sd, noise, num_draws=4000):
    """Gaussian gains and, for each, a Gaussian measurement of it."""
    names = [f"g{i}" for i in range(len(mu))]
    belief = bs.GainBelief.from_gaussian(names, mu, sd, num_draws=num_draws, seed=3)
    cands = [bs.Candidate(n, "adaptation", "data", outcome=bs.GaussianOutcome(noise)) for n in names]
    prob = build_problem(belief, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(), risk=None,
                                              config=DecideConfig(), reference=None, current_J=0.5, done=())
    return la.lookahead_arrays(prob, 8)


def test_importance_weights_are_the_likelihood_of_the_outcome():
    arr = _arrays([0.05, 0.1], [0.03, 0.05], 0.02)
    moments = la.draw_moments(arr, 1)
    y, coef_a, coef_b, shift = la.simulate_outcome(moments, arr, (jnp.int32(5), jnp.float32(0.3), jnp.float32(0.5)))
    w = np.asarray(la.importance_weights(moments, coef_a, coef_b, shift))[:2]
    for m in range(2):
        ll = stats.norm.logpdf(float(y[m]), np.asarray(arr.observed[m]), 0.02)
        np.testing.assert_allclose(w[m], np.exp(ll - ll[5]), rtol=2e-3, atol=1e-30)
    assert w[0, 5] == pytest.approx(1.0)  # relative to the draw that generated y


def test_gaussian_update_is_the_conjugate_posterior():
    arr = _arrays([0.05, 0.1], [0.03, 0.05], 0.02, num_draws=20000)
    moments = la.draw_moments(arr, 1)
    mean, var = (np.asarray(x)[:2, :2] for x in la.gaussian_update(moments, arr, jnp.asarray([0.09, 0.0] + [0.0] * 6)))
    s2, r = float(moments.gain_var[0]), 0.02**2
    m0 = float(moments.gain_mean[0])
    assert mean[0, 0] == pytest.approx(m0 + s2 / (s2 + r) * (0.09 - m0), rel=1e-4)
    assert var[0, 0] == pytest.approx(s2 * r / (s2 + r), rel=1e-3)
    # independent gains: measuring g0 says nothing about g1
    assert mean[0, 1] == pytest.approx(float(moments.gain_mean[1]), abs=2e-3)
