"""Reservation values (Weitzman's index) against closed forms, and the adopt functional
against exact binomial and Monte-Carlo references."""

import numpy as np
import pytest
from scipy import optimize, stats

from bayes_s2r.decision.index import gaussian_reservation, reservation_values
from bayes_s2r.decision.utility import adopt_moment, adoption_probability
from bayes_s2r.errors import InputError


def _gaussian_root(mean, sd, cost):
    def excess(z):
        u = (mean - z) / sd
        return (mean - z) * stats.norm.cdf(u) + sd * stats.norm.pdf(u) - cost
    return optimize.brentq(excess, mean - cost - 50 * sd - 1, mean + 50 * sd + 1, xtol=1e-12)


@pytest.mark.parametrize("mean,sd,cost", [(0.1, 0.05, 0.01), (-0.2, 0.3, 0.05), (0.0, 1.0, 2.0),
                                          (0.3, 0.2, 1e-6)])
def test_gaussian_reservation_solves_the_index_equation(jit_mode, mean, sd, cost):
    z = float(gaussian_reservation(mean, sd, cost))
    assert z == pytest.approx(_gaussian_root(mean, sd, cost), abs=2e-5 * max(1.0, sd))


def test_gaussian_reservation_without_uncertainty_is_mean_minus_cost(jit_mode):
    assert float(gaussian_reservation(0.3, 0.0, 0.1)) == pytest.approx(0.2, abs=1e-6)


def test_reservation_values_match_closed_forms():
    u = np.linspace(0.0, 1.0, 200_001)[:, None]  # U(0, 1): (1 − z)²/2 = c
    assert reservation_values(u, [0.02])[0] == pytest.approx(0.8, abs=1e-4)
    assert reservation_values(u, [0.0])[0] == pytest.approx(1.0)
    assert reservation_values(u, [3.0])[0] == pytest.approx(0.5 - 3.0, abs=1e-6)  # below every draw
    g = stats.norm.ppf((np.arange(100_000) + 0.5) / 100_000, 0.1, 0.2)[:, None]
    assert reservation_values(g, [0.03])[0] == pytest.approx(_gaussian_root(0.1, 0.2, 0.03), abs=2e-3)


def test_reservation_values_reject_bad_input():
    with pytest.raises(InputError, match="cost"):
        reservation_values(np.zeros((3, 2)), [0.1, -1.0])
    with pytest.raises(InputError, match="draws"):
        reservation_values(np.zeros(3), [0.1])


def _exact_adoption(theta, n, j):
    """P(Binomial(n, j + θ) > Binomial(n, j)) by convolution."""
    k = np.arange(n + 1)
    treated, control = stats.binom.pmf(k, n, j + theta), stats.binom.pmf(k, n, j)
    return float(sum(treated[t] * control[:t].sum() for t in range(n + 1)))


@pytest.mark.parametrize("theta", [-0.1, 0.0, 0.03, 0.1, 0.3])
def test_adoption_probability_matches_the_exact_binomial_comparison(theta):
    p = float(adoption_probability(np.array(theta), np.array(2), np.array(48.0), np.array(0.5)))
    assert p == pytest.approx(_exact_adoption(theta, 48, 0.5), abs=0.02)


def test_adoption_of_a_small_gain_is_a_coin_flip_not_a_certainty():
    """The reason the functional exists: 48 episodes per arm cannot see a gain of 0.02."""
    p = float(adoption_probability(np.array(0.02), np.array(2), np.array(48.0), np.array(0.5)))
    assert 0.4 < p < 0.65
    noiseless = float(adoption_probability(np.array(0.02), np.array(0), np.array(0.0), np.array(0.0)))
    assert noiseless == 1.0


@pytest.mark.parametrize("mean,sd,noise", [(0.0, 0.1, 0.1), (0.05, 0.02, 0.1), (-0.1, 0.2, 0.05), (0.1, 0.1, 0.0)])
def test_adopt_moment_matches_monte_carlo(mean, sd, noise):
    x = np.random.default_rng(0).normal(mean, sd, 2_000_000)
    keep = stats.norm.cdf(x / noise) if noise > 0 else (x > 0)
    assert float(adopt_moment(mean, sd, noise)) == pytest.approx(float((x * keep).mean()), abs=3e-4)
