"""Reservation values (Weitzman's index) against closed forms, and the adopt functional
against exact binomial and Monte-Carlo references."""

import jax
import numpy as np
import pytest
from scipy import optimize, stats

from bayes_s2r.decision.index import (
    gaussian_reservation,
    reservation_shape,
    reservation_values,
    shape_kept,
    shape_reservation,
)
from bayes_s2r.decision.utility import adopt_moment, adopt_shape, adoption_probability
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


def _fix_or_not(num_draws=4000, seed=0):
    """[S, 3] a rare large fix among near-zero effects, a Gaussian, and a constant."""
    rng = np.random.default_rng(seed)
    fix = rng.random(num_draws) < 0.2
    return np.stack([np.where(fix, rng.normal(0.6, 0.1, num_draws), rng.normal(0.0, 0.02, num_draws)),
                     rng.normal(0.1, 0.2, num_draws), np.full(num_draws, 0.05)], axis=1)


@pytest.mark.parametrize("cost", [[0.03, 0.01, 0.02], [0.0, 0.0, 0.0], [5.0, 1e-6, 0.3]])
def test_shape_reservation_with_the_draws_own_moments_is_the_exact_index(jit_mode, cost):
    x = _fix_or_not()
    z = jax.jit(shape_reservation)(reservation_shape(x), x.mean(0), x.std(0), np.asarray(cost))
    np.testing.assert_allclose(np.asarray(z), reservation_values(x, cost), rtol=1e-4, atol=1e-4)


def test_shape_reservation_moves_the_shape_to_a_new_mean_and_sd(jit_mode):
    """z of mean + sd·Z is the exact index of the draws moved there; a rare fix has a higher
    index than a Gaussian of its mean and sd, and a Gaussian shape gives the Gaussian index."""
    x = _fix_or_not()
    std = (x - x.mean(0)) / np.where(x.std(0) > 0, x.std(0), 1.0)
    mean, sd, cost = np.array([0.1, -0.05, 0.2]), np.array([0.3, 0.1, 0.0]), np.array([0.05, 0.02, 0.01])
    z = np.asarray(jax.jit(shape_reservation)(reservation_shape(x), mean, sd, cost))
    np.testing.assert_allclose(z[:2], reservation_values(mean[:2] + sd[:2] * std[:, :2], cost[:2]),
                               rtol=1e-4, atol=1e-4)
    assert z[2] == pytest.approx(0.19, abs=1e-6)  # no spread: mean − cost
    gauss = np.asarray(gaussian_reservation(mean, sd, cost))
    assert z[0] > gauss[0] + 0.05
    assert z[1] == pytest.approx(gauss[1], abs=0.01)


def _many_shapes(num_draws=4000, seed=1):
    """[S, 6] a Gaussian, a rare fix, a harmful tail, a lognormal, a t(2) and two separated modes."""
    rng = np.random.default_rng(seed)
    u = rng.random(num_draws)
    return np.stack([rng.normal(0.1, 0.2, num_draws),
                     np.where(u < 0.02, rng.normal(0.4, 0.05, num_draws), rng.normal(0.0, 0.01, num_draws)),
                     np.where(u < 0.1, rng.normal(-0.3, 0.05, num_draws), rng.normal(0.02, 0.02, num_draws)),
                     rng.lognormal(0.0, 1.0, num_draws), rng.standard_t(2, num_draws),
                     np.where(u < 0.5, -1.0, 1.0) + 0.05 * rng.normal(size=num_draws)], axis=1)


def test_shape_kept_is_the_quantile_value_of_any_shape_moved_anywhere(jit_mode):
    """The interpolated table against E[X·Φ(X/σe)] over the shape's quantiles, for beliefs moved
    far from the draws' own moments and evaluations from noiseless to far noisier than the belief."""
    x = _many_shapes()
    shape = jax.jit(reservation_shape)(x)
    std = (x - x.mean(0)) / x.std(0)
    q = -np.sort(-std, axis=0)[((np.arange(256) + 0.5) * len(x) / 256).astype(int)]
    grid = np.array(np.meshgrid(np.linspace(-1.0, 1.0, 41), [0.02, 0.1, 0.3, 1.0], [0.0, 0.01, 0.05, 0.3, 1.0],
                                indexing="ij")).reshape(3, -1)
    mean, sd, noise = (np.repeat(v[:, None], x.shape[1], axis=1) for v in grid)
    got = np.asarray(jax.jit(shape_kept)(shape, mean, sd, noise))
    exact = np.stack([adopt_shape(q, mean[k], sd[k], noise[k]) for k in range(len(mean))])
    np.testing.assert_array_less(np.abs(got - exact), 0.01 * sd + 1e-5)
    # the shape matters: a rare fix 1 to 3 sd below 0 keeps more than a Gaussian of its mean and sd
    rare = (mean[:, 1] <= -sd[:, 1]) & (mean[:, 1] >= -3 * sd[:, 1]) & (noise[:, 1] == 0.0)
    assert rare.sum() >= 5
    assert (got[rare, 1] > adopt_moment(mean[rare, 1], sd[rare, 1], 0.0) + 0.01 * sd[rare, 1]).all()
    # a belief without spread keeps what its Gaussian form does
    flat = np.asarray(shape_kept(shape, np.full(6, 0.2), np.zeros(6), np.full(6, 0.1)))
    np.testing.assert_allclose(flat, adopt_moment(0.2, 0.0, 0.1), rtol=1e-5)


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
