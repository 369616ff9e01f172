"""Reservation values: the index of Weitzman's Pandora's-box rule.

When tries are independent, a tried policy is kept only if it is better and each try has a
priced cost c, the optimal order of tries is by the reservation value z solving
E[(X − z)^+] = c, and the search stops once the best value found is above every remaining
z (Weitzman, Econometrica 1979). Here X is a candidate's gain ΔJ over the deployed policy,
so the prize in hand is 0 and a try is worth making while its z is above 0.

`reservation_values` solves the equation exactly over posterior draws (the `pandora`
strategy); `gaussian_reservation` solves it for a Gaussian belief; `shape_reservation` solves it
in JAX for a belief of a given shape moved to a new mean and sd, for the rollout planner's base
policy, whose beliefs move by Gaussian updates while a candidate's shape (a rare fix among
near-zero effects, a heavy tail) is what its index mostly depends on. `shape_kept` values a
try of such a belief by what its noisy evaluation keeps, on the same scale.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import norm

from bayes_s2r.decision.utility import adopt_moment, adopt_shape
from bayes_s2r.errors import InputError

__all__ = ["ReservationShape", "gaussian_reservation", "reservation_shape", "reservation_values",
           "shape_kept", "shape_reservation"]


def reservation_values(draws, cost) -> np.ndarray:
    """z per column with mean_s max(draws[s] − z, 0) = cost, exactly over the draws.

    f(z) = mean(max(X − z, 0)) is piecewise linear and decreasing: with the draws sorted
    from the largest, it is (Σ_{i≤k} x_(i) − k·z)/S between x_(k+1) and x_(k), so each piece
    gives one candidate root and exactly one of them lies on its piece.

    Args:
        draws: [S, M] draws of each candidate's gain.
        cost: [M] priced costs C_λ ≥ 0.

    Returns:
        z [M]; the largest draw where the cost is 0.

    Example:
        >>> x = np.linspace(0.0, 1.0, 100_001)[:, None]   # X ~ U(0, 1): (1 − z)²/2 = c
        >>> round(float(reservation_values(x, [0.02])[0]), 3)
        0.8
    """
    x = np.asarray(draws, np.float64)
    c = np.asarray(cost, np.float64)
    if x.ndim != 2 or c.shape != (x.shape[1],) or x.shape[0] < 1:
        raise InputError("draws, cost", (x.shape, c.shape), "draws [S, M] and costs [M]")
    if not (np.isfinite(x).all() and np.isfinite(c).all()) or (c < 0).any():
        raise InputError("cost", c, "finite costs >= 0 and finite draws")
    s = x.shape[0]
    srt = -np.sort(-x, axis=0)  # descending
    k = np.arange(1, s + 1, dtype=np.float64)[:, None]
    z = (np.cumsum(srt, axis=0) - s * c[None, :]) / k
    below = np.vstack([srt[1:], np.full((1, x.shape[1]), -np.inf)])
    on_piece = (z <= srt + 1e-12) & (z >= below - 1e-12)
    first = np.argmax(on_piece, axis=0)  # the first piece that holds its own root
    return z[first, np.arange(x.shape[1])]


def _excess(u):
    """E[(Z − u)^+] for Z ~ N(0, 1): φ(u) − u·Φ(−u), decreasing in u."""
    return norm.pdf(u) - u * norm.cdf(-u)


def gaussian_reservation(mean, sd, cost, *, iterations: int = 48):
    """z with E[(X − z)^+] = cost for X ~ N(mean, sd²) (JAX; broadcasts).

    z = mean + sd·u where E[(Z − u)^+] = cost/sd = r, found by bisection on u ∈ [−r − 1, 8]:
    the excess is above −u, so the root is above −r, and at 8 it is below 1e-16. A belief
    with sd 0 gives z = mean − cost.

    Example:
        >>> z = gaussian_reservation(0.0, 1.0, 0.0833)
        >>> round(float(z), 2)   # E[(Z − 1)^+] = 0.0833
        1.0
    """
    mean, sd, cost = (jnp.asarray(v, jnp.float32) for v in (mean, sd, cost))
    wide = sd > 1e-9
    safe = jnp.where(wide, sd, 1.0)
    r = cost / safe
    lo, hi = -r - 1.0, jnp.full_like(r, 8.0)

    def halve(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        above = _excess(mid) > r  # the root lies to the right
        return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

    lo, hi = jax.lax.fori_loop(0, iterations, halve, (lo, hi))
    return jnp.where(wide, mean + safe * 0.5 * (lo + hi), mean - cost)


class ReservationShape(NamedTuple):
    """Each candidate's standardized draws Z = (X − mean)/sd, sorted from the largest.

    Attributes:
        cumsum: [S, M] cumulative sums C_k of z_(1) ≥ z_(2) ≥ … per column (0 for a column
            without spread).
        excess: [S, M] E[(Z − z_(k))^+] = (C_k − k·z_(k))/S, nondecreasing in k.
        kept_span: [M] the reach L of each column's `kept` grid in standardized means.
        kept: [M, A, B] the shape's excess over a Gaussian in what a noisy evaluation keeps,
            d(m, ρ) = E[(m + Z)·Φ((m + Z)/ρ)] − E[(m + N)·Φ((m + N)/ρ)], N ~ N(0, 1), on a grid
            of standardized means m (`_kept_means`) and noise ratios ρ = t/(1 − t), t evenly
            spaced in [0, 1] (d = 0 at t = 1).
    """

    cumsum: jax.Array
    excess: jax.Array
    kept_span: jax.Array
    kept: jax.Array


# The `kept` grid: A standardized means spaced as sinh (dense near 0, where the kept value bends),
# B noise ratios. The means reach L + 4ρ (L: past every quantile used), as a noise of ratio ρ
# blurs the shape over a few ρ. 97 x 25 keeps the table within 0.01 sd of the 256-quantile
# value on Gaussian, rare-fix, harmful-tail, bimodal, lognormal and t(2) shapes.
_KEPT_MEANS, _KEPT_RATIOS, _KEPT_STRETCH, _KEPT_BLUR = 97, 25, 3.0, 4.0


def _kept_means(span, rho, v):
    """The standardized mean at grid coordinate v ∈ [−1, 1] for reach `span` and noise ratio ρ."""
    return (span + _KEPT_BLUR * rho) * jnp.sinh(_KEPT_STRETCH * v) / math.sinh(_KEPT_STRETCH)


def reservation_shape(draws, num_quantiles: int = 256) -> ReservationShape:
    """The `ReservationShape` of [S, M] draws (JAX); its `kept` table is computed over
    ≤ `num_quantiles` evenly spaced order statistics of the standardized draws."""
    x = jnp.asarray(draws, jnp.float32)
    s = x.shape[0]
    sd = x.std(0)
    wide = sd > 1e-9
    z = jnp.where(wide, (x - x.mean(0)) / jnp.where(wide, sd, 1.0), 0.0)
    srt = -jnp.sort(-z, axis=0)
    cum = jnp.cumsum(srt, axis=0)
    k = jnp.arange(1, s + 1, dtype=jnp.float32)[:, None]
    excess = jax.lax.cummax((cum - k * srt) / s, axis=0)  # rounding must not break the order
    q = min(s, num_quantiles)
    quantiles = srt[((jnp.arange(q) + 0.5) * s / q).astype(jnp.int32)]
    span = jnp.maximum(3.0, jnp.abs(quantiles).max(0)) + 1.0
    t = jnp.linspace(0.0, 1.0, _KEPT_RATIOS)[:-1]
    rho = (t / (1.0 - t))[None, :, None]
    m = _kept_means(span[None, None, :], rho, jnp.linspace(-1.0, 1.0, _KEPT_MEANS)[:, None, None])  # [A, B-1, M]
    d = adopt_shape(quantiles[:, None, None, :], m, 1.0, rho, jnp) - adopt_moment(m, 1.0, rho, jnp)
    d = jnp.concatenate([d, jnp.zeros_like(d[:, :1])], axis=1)
    return ReservationShape(cum, excess, span, jnp.moveaxis(d, -1, 0))


def shape_kept(shape: ReservationShape, mean, sd, noise_sd):
    """E[X·Φ(X/σe)] for X = mean + sd·Z, Z the shape's standardized draws (JAX; [..., M]): what a
    try's evaluation of noise sd σe keeps (`utility.adopt_shape` over the table's quantiles, by
    bilinear interpolation of `kept` added to the Gaussian `adopt_moment`). A belief with sd 0
    keeps what its Gaussian form does."""
    mean, sd, noise_sd = (jnp.asarray(v, jnp.float32) for v in (mean, sd, noise_sd))
    wide = sd > 1e-9
    safe = jnp.where(wide, sd, 1.0)
    m, rho = mean / safe, noise_sd / safe
    num_m, num_t = _KEPT_MEANS, _KEPT_RATIOS
    # invert `_kept_means`; past the grid the excess is held at its edge (it vanishes far out)
    v = jnp.arcsinh(m / (shape.kept_span + _KEPT_BLUR * rho) * math.sinh(_KEPT_STRETCH)) / _KEPT_STRETCH
    fi = (jnp.clip(v, -1.0, 1.0) + 1.0) * 0.5 * (num_m - 1)
    ft = rho / (1.0 + rho) * (num_t - 1)
    i = jnp.clip(jnp.floor(fi), 0, num_m - 2).astype(jnp.int32)
    j = jnp.clip(jnp.floor(ft), 0, num_t - 2).astype(jnp.int32)
    a, b = fi - i, ft - j
    col = jnp.broadcast_to(jnp.arange(m.shape[-1]), m.shape)
    tab = shape.kept
    d = ((1 - a) * (1 - b) * tab[col, i, j] + a * (1 - b) * tab[col, i + 1, j]
         + (1 - a) * b * tab[col, i, j + 1] + a * b * tab[col, i + 1, j + 1])
    return adopt_moment(mean, sd, noise_sd, jnp) + jnp.where(wide, sd * d, 0.0)


def shape_reservation(shape: ReservationShape, mean, sd, cost):
    """z [M] with E[(X − z)^+] = cost for X = mean + sd·Z, Z the shape's standardized draws
    (JAX; mean, sd, cost [M]).

    z = mean + sd·u where E[(Z − u)^+] = cost/sd = r: on the piece u ∈ [z_(k+1), z_(k)] the
    excess is (C_k − k·u)/S, so u = (C_k − S·r)/k with k the number of breakpoints whose excess
    is at most r (below every draw, E[(Z − u)^+] = −u, which is the same formula at k = S).
    With the draws' own mean and sd this is `reservation_values` of the draws; a belief with sd
    0 gives z = mean − cost.
    """
    mean, sd, cost = (jnp.asarray(v, jnp.float32) for v in (mean, sd, cost))
    s = shape.cumsum.shape[0]
    wide = sd > 1e-9
    r = cost / jnp.where(wide, sd, 1.0)
    count = jax.vmap(functools.partial(jnp.searchsorted, side="right"), in_axes=(1, 0))(shape.excess, r)
    k = jnp.clip(count, 1, s)
    c_k = jnp.take_along_axis(shape.cumsum, (k - 1)[None, :], axis=0)[0]
    u = (c_k - s * r) / k.astype(jnp.float32)
    return jnp.where(wide, mean + sd * u, mean - cost)
