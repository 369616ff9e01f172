"""Execution-risk model: Beta-Binomial pooling of unsafe-event rates within method groups.

For candidate m in method group g(m), with y_m unsafe runs out of n_m executions::

    μ_g ~ Beta(mu_a, mu_b)                   mean unsafe rate of the method
    log κ_g ~ Normal(log_kappa_loc, log_kappa_sd)   how alike the method's candidates are
    p_m ~ Beta(μ_g κ_g, (1 − μ_g) κ_g)
    y_m ~ Binomial(n_m, p_m)

p_m is integrated out (y_m ~ BetaBinomial), so the sampler sees two dimensions per group;
p_m | μ, κ, y is Beta(μκ + y_m, (1 − μ)κ + n_m − y_m) and is drawn afterwards (or kept as
a mixture of Betas). `bayes_s2r.belief.risk` integrates the same posterior by quadrature;
this NumPyro form is the independent cross-check.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

__all__ = ["RiskPrior", "exec_risk_model"]


class RiskPrior(NamedTuple):
    """Hyperprior of a method group's unsafe-rate distribution.

    Attributes:
        mu_a, mu_b: Beta prior of the group mean rate μ. The default Beta(1, 1) says
            nothing about safety, so a candidate of a method never run on the robot gets a
            high bound (it fails any small α).
        log_kappa_loc, log_kappa_sd: Normal prior of log κ (κ = prior "sample size").
    """

    mu_a: float = 1.0
    mu_b: float = 1.0
    log_kappa_loc: float = math.log(10.0)
    log_kappa_sd: float = 1.5


def exec_risk_model(group, executions, unsafe, num_groups: int,
                    prior: RiskPrior | None = None) -> None:
    """Hierarchical Beta-Binomial over method groups, with p_m integrated out.

    Args:
        group: int [M] group index of each robot-touching candidate.
        executions: int [M] executions n_m.
        unsafe: int [M] unsafe runs y_m.
        num_groups: number of method groups G.
        prior: the hyperprior (default `RiskPrior()`).

    Sites: ``risk_mu`` [G], ``risk_log_kappa`` [G], ``risk_obs`` (observed).
    """
    prior = RiskPrior() if prior is None else prior
    mu = numpyro.sample("risk_mu", dist.Beta(prior.mu_a, prior.mu_b).expand((num_groups,))
                        .to_event(1))
    log_kappa = numpyro.sample(
        "risk_log_kappa",
        dist.Normal(prior.log_kappa_loc, prior.log_kappa_sd).expand((num_groups,)).to_event(1))
    kappa = jnp.exp(log_kappa)
    alpha, beta = mu[group] * kappa[group], (1.0 - mu[group]) * kappa[group]
    numpyro.sample("risk_obs", dist.BetaBinomial(alpha, beta, executions).to_event(1), obs=unsafe)
