"""Sensitivity sub-model: logit-linear response of J to controlled mismatch perturbations.

For a cell c (one design point: levels ℓ of every direction, one evidence tier t, one
policy p) with s_c successes out of n_c episodes::

    s_c ~ Binomial(n_c, sigmoid(η_c))
    η_c = a_p + α_t + Σ_k (b_k + β_tk) ℓ_ck + Σ_(k,l) (c_kl + γ_t,kl) ℓ_ck ℓ_cl + σ_t ε_c

- a_p: nominal logit of policy p (direct scale); α_t: the tier's offset of the nominal
  level (a simulator's nominal success differs from the robot's); α_direct = 0.
- b_k: the true (direct) slope of direction k; c_kl: the pair term of an observed pair.
- β_tk ~ N(0, τ_t²), γ_t,kl ~ N(0, τ_t²): the tier's bias of slopes and pair terms,
  zero for direct evidence. This is the discount: proxy evidence pins down b_k + β_tk,
  so it tells about b_k only up to τ_t, and counts less than direct evidence.
- σ_t ε_c: per-cell extra noise (over-dispersion of a condition), one sd per tier.

Non-centred throughout. Recoverable performance Ŝ_k = J0 − J(ℓ_k = 1) and the synergy
J_k + J_l − J_kl − J0 (= ΔJ(k,l) − ΔJ(k,0) − ΔJ(0,l)) are computed at the reference
policy's direct nominal logit a_ref. All sites are prefixed ``sens_`` so the block can sit
inside another model.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

__all__ = ["SensitivityPrior", "sensitivity_block", "sensitivity_model"]


class SensitivityPrior(NamedTuple):
    """Prior scales of the sensitivity model (logit scale unless stated).

    Attributes:
        loc_a: prior mean of the nominal logit a_p.
        scale_a: prior sd of a_p.
        scale_b: prior sd of a direction's slope b_k (per unit level).
        scale_c: prior sd of a pair term c_kl.
        scale_tier_shift: prior sd of a tier's nominal offset α_t (proxy, ablation).
        bias_scale: half-normal scales of τ_t for (proxy, ablation): the slope bias sd.
        cell_scale: half-normal scale of the per-cell noise sd σ_t, for every tier.
    """

    loc_a: float = 1.0
    scale_a: float = 1.5
    scale_b: float = 2.5
    scale_c: float = 1.5
    scale_tier_shift: float = 1.0
    bias_scale: tuple[float, float] = (0.5, 0.75)
    cell_scale: float = 0.25


def _normal(name, shape, scale=1.0, loc=0.0):
    return numpyro.sample(name, dist.Normal(loc, scale).expand(shape).to_event(len(shape)))


def sensitivity_block(data, prior: SensitivityPrior | None = None) -> jnp.ndarray:
    """Sample the sensitivity parameters, add the likelihood, return Ŝ of shape [K].

    Args:
        data: a `bayes_s2r.belief.sensitivity.SensitivityData` (from `prepare_sensitivity`).
        prior: prior scales (default `SensitivityPrior()`).

    Returns:
        jnp.ndarray [K]: Ŝ_k = J0 − J(ℓ_k = 1) for `data.directions`, J scale.

    Deterministic sites: ``sens_S`` [K], ``sens_J0`` [], ``sens_synergy`` [P] (J scale)
    and ``sens_J`` [C] (each cell's success probability without its cell noise).
    """
    prior = SensitivityPrior() if prior is None else prior
    num_cells, k = data.levels.shape
    p = data.products.shape[1]
    num_pol = len(data.policies)
    a = _normal("sens_a", (num_pol,), prior.scale_a, prior.loc_a)
    b = _normal("sens_b", (k,), prior.scale_b)
    c = _normal("sens_c", (p,), prior.scale_c)
    shift = _normal("sens_tier_shift", (2,), prior.scale_tier_shift)
    tau = numpyro.sample(
        "sens_bias_sd", dist.HalfNormal(jnp.asarray(prior.bias_scale, jnp.float32)).to_event(1))
    zb = _normal("sens_bias_b_z", (2, k))
    zc = _normal("sens_bias_c_z", (2, p))
    sigma = numpyro.sample(
        "sens_cell_sd", dist.HalfNormal(prior.cell_scale).expand((3,)).to_event(1))
    zcell = _normal("sens_cell_z", (num_cells,))

    zeros_k, zeros_p = jnp.zeros((1, k)), jnp.zeros((1, p))
    slopes = b[None, :] + jnp.concatenate([zeros_k, tau[:, None] * zb])        # [3, K]
    pair_terms = c[None, :] + jnp.concatenate([zeros_p, tau[:, None] * zc])    # [3, P]
    offsets = jnp.concatenate([jnp.zeros(1), shift])                           # [3]
    t = data.tier
    mean_logit = (a[data.policy] + offsets[t]
                  + jnp.sum(data.levels * slopes[t], axis=-1)
                  + jnp.sum(data.products * pair_terms[t], axis=-1))
    numpyro.deterministic("sens_J", jax.nn.sigmoid(mean_logit))
    logit = mean_logit + sigma[t] * zcell
    numpyro.sample("sens_obs", dist.Binomial(data.episodes, logits=logit).to_event(1),
                   obs=data.successes)

    a_ref = a[data.ref_policy]
    j0 = jax.nn.sigmoid(a_ref)
    j_single = jax.nn.sigmoid(a_ref + b)
    s_hat = numpyro.deterministic("sens_S", j0 - j_single)
    numpyro.deterministic("sens_J0", j0)
    if p:
        i, j = data.pair_index[:, 0], data.pair_index[:, 1]
        j_pair = jax.nn.sigmoid(a_ref + b[i] + b[j] + c)
        numpyro.deterministic("sens_synergy", j_single[i] + j_single[j] - j_pair - j0)
    else:
        numpyro.deterministic("sens_synergy", jnp.zeros((0,)))
    return s_hat


def sensitivity_model(data, prior: SensitivityPrior | None = None) -> None:
    """The standalone sensitivity model: just `sensitivity_block`."""
    sensitivity_block(data, prior)
