"""Execution risk and deployment risk: exact and posterior upper bounds on unsafe rates.

Execution risk P_exec(unsafe | m) gates candidates that touch the robot; deployment risk
P_deploy(unsafe | π) gates the terminal policy. They are different events: execution
outcomes and deployment evaluations are never pooled.

Pooling (see `bayes_s2r.models.risk`): within a method group, p_m ~ Beta(μκ, (1 − μ)κ)
with a hyperprior on (μ, κ). The two hyperparameters of each group are integrated by
quadrature on an adaptive grid rather than plugged in by empirical Bayes: with few
candidates and no unsafe events the marginal-likelihood maximum sits at μ = 0, which would
call a never-run candidate safe; integrating keeps that candidate's bound honest, is exact
up to the grid, deterministic and takes milliseconds. `method="nuts"` samples the same
posterior with NumPyro instead (a cross-check). Either way p_m's posterior is a mixture of
Betas, whose quantile is found by bisection.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special

from bayes_s2r.belief.sensitivity import _records
from bayes_s2r.errors import InputError, require_int, require_int_nonneg, require_probability
from bayes_s2r.evidence.records import DeploymentEval, ExecutionOutcome
from bayes_s2r.models.risk import RiskPrior, exec_risk_model
from bayes_s2r.vocab import Candidate, validate_candidates

__all__ = [
    "DeploymentRisk",
    "RiskBelief",
    "RiskPrior",
    "beta_mixture_quantile",
    "clopper_pearson_ucb",
    "fit_deploy_risk",
    "fit_exec_risk",
]

BOUNDS = ("clopper-pearson", "posterior")
_NO_METHOD = "(none)"


def _delta(delta: Any) -> float:
    return require_probability("delta", delta)


def clopper_pearson_ucb(unsafe: int, executions: int, delta: float) -> float:
    """Exact one-sided Clopper–Pearson upper bound on a binomial rate at level 1 − δ.

    The bound u solves P(Binomial(n, u) <= x) = δ, i.e. u = Beta⁻¹(1 − δ; x + 1, n − x);
    it is 1 when x = n (including n = 0: no data bounds nothing).

    Example:
        >>> round(clopper_pearson_ucb(0, 59, 0.05), 4)   # the "rule of three" region
        0.0495
    """
    x = require_int_nonneg("unsafe", unsafe)
    n = require_int_nonneg("executions", executions)
    if x > n:
        raise InputError("unsafe", unsafe, f"at most executions={n}")
    d = _delta(delta)
    if x == n:
        return 1.0
    return float(special.betaincinv(x + 1, n - x, 1.0 - d))  # the Beta(x+1, n−x) quantile


def beta_mixture_quantile(weights: np.ndarray, a: np.ndarray, b: np.ndarray, q: float) -> float:
    """The q-quantile of Σ_i w_i Beta(a_i, b_i): root of the mixture CDF (Brent's method)."""
    w = np.asarray(weights, np.float64)
    w = w / w.sum()

    def excess(x: float) -> float:
        return float(w @ special.betainc(a, b, x)) - q

    return float(optimize.brentq(excess, 0.0, 1.0, xtol=1e-13, rtol=1e-12))


def _group_grid(n: np.ndarray, y: np.ndarray, prior: RiskPrior):
    """Hyperposterior of one group on an adaptive (logit μ, log κ) grid: (w, α, β)."""
    def logpost(lm, lk):
        mu, kappa = special.expit(lm), np.exp(lk)
        alpha, beta = (mu * kappa)[..., None], ((1.0 - mu) * kappa)[..., None]
        loglik = (special.betaln(alpha + y, beta + n - y) - special.betaln(alpha, beta)).sum(-1)
        # Beta(mu_a, mu_b) on μ with the Jacobian of logit; Normal on log κ
        lp = (prior.mu_a * np.log(mu) + prior.mu_b * np.log1p(-mu)
              - 0.5 * ((lk - prior.log_kappa_loc) / prior.log_kappa_sd) ** 2)
        return lp + loglik, alpha[..., 0], beta[..., 0]

    k0, ks = prior.log_kappa_loc, prior.log_kappa_sd
    box = (-16.0, 12.0, k0 - 6.0 * ks, k0 + 6.0 * ks)
    for size in ((120, 90), (160, 120)):          # coarse pass, then zoom on the mass
        lm = np.linspace(box[0], box[1], size[0])
        lk = np.linspace(box[2], box[3], size[1])
        LM, LK = np.meshgrid(lm, lk, indexing="ij")
        lp, alpha, beta = logpost(LM, LK)
        keep = lp > lp.max() - 30.0
        dm, dk = lm[1] - lm[0], lk[1] - lk[0]
        box = (LM[keep].min() - dm, LM[keep].max() + dm, LK[keep].min() - dk, LK[keep].max() + dk)
    w = np.exp(lp - lp.max()).ravel()
    keep = w > 1e-12
    return w[keep] / w[keep].sum(), alpha.ravel()[keep], beta.ravel()[keep]


class RiskBelief:
    """Belief over P_exec(unsafe | m) for a candidate set.

    Attributes:
        names: candidate names (all candidates, robot-touching or not).
        bound: "clopper-pearson" (exact bound from a candidate's own runs; the pooled
            posterior only for candidates never run) or "posterior" (the pooled posterior
            quantile for every robot-touching candidate).
        executions, unsafe: dict name -> summed counts.
        touches_robot: dict name -> bool.
        group: dict name -> method group of a robot-touching candidate.
        mixtures: dict name -> (weights, a, b): p_m's posterior Σ w Beta(a, b).
        ignored: names in the execution records that are not candidates here.
        sim_prior: dict name -> (unsafe, executions) in simulation: for these candidates the
            posterior is Beta(1 + unsafe + y, 1 + executions − unsafe + n − y) on real counts
            (y of n), and before any real execution the gate's bound is its 1 − δ quantile
            (bound kind "sim-prior"). Real executions then bound the rate on their own.
    """

    def __init__(self, candidates: Sequence[Candidate], counts: dict[str, tuple[int, int]],
                 mixtures: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], bound: str,
                 method: str, ignored: Sequence[str] = (), sim_prior: Mapping[str, tuple[float, float]] | None = None):
        self.names = tuple(c.name for c in candidates)
        self.touches_robot = {c.name: c.touches_robot for c in candidates}
        self.group = {c.name: c.method or _NO_METHOD for c in candidates if c.touches_robot}
        self.executions = {c.name: counts.get(c.name, (0, 0))[0] for c in candidates}
        self.unsafe = {c.name: counts.get(c.name, (0, 0))[1] for c in candidates}
        self.mixtures = mixtures
        self.bound = bound
        self.method = method
        self.ignored = tuple(ignored)
        self.sim_prior = dict(sim_prior or {})
        self._cache: dict[tuple[str, float], float] = {}

    def _name(self, name: str) -> str:
        if name not in self.touches_robot:
            raise InputError("candidate", name, f"one of {list(self.names)}")
        return name

    def pooled_mean(self, name: str) -> float:
        """Posterior mean of P_exec(unsafe | name) under pooling (0 off the robot)."""
        if not self.touches_robot[self._name(name)]:
            return 0.0
        w, a, b = self.mixtures[name]
        return float(w @ (a / (a + b)))

    def bound_kind(self, name: str) -> str:
        """Which bound `ucb` uses for this candidate."""
        if not self.touches_robot[self._name(name)]:
            return "not-robot"
        if self.executions[name] == 0:
            return "sim-prior" if name in self.sim_prior else "pooled-prior"
        return self.bound

    def ucb(self, name: str, delta: float) -> float:
        """UCB_{1−δ}[P_exec(unsafe | name)]; 0 for candidates that do not touch the robot."""
        d = _delta(delta)
        kind = self.bound_kind(name)
        if kind == "not-robot":
            return 0.0
        if kind == "clopper-pearson":
            return clopper_pearson_ucb(self.unsafe[name], self.executions[name], d)
        if (name, d) not in self._cache:
            self._cache[(name, d)] = beta_mixture_quantile(*self.mixtures[name], 1.0 - d)
        return self._cache[(name, d)]

    def table(self, delta: float = 0.05) -> pd.DataFrame:
        """One row per candidate: executions, unsafe, rate, pooled_mean, ucb, touches_robot,
        bound, group. `rate` is the raw unsafe share (NaN without executions)."""
        d = _delta(delta)
        rows = []
        for n in self.names:
            e, u = self.executions[n], self.unsafe[n]
            rows.append({"executions": e, "unsafe": u, "rate": u / e if e else math.nan,
                         "pooled_mean": self.pooled_mean(n), "ucb": self.ucb(n, d),
                         "touches_robot": self.touches_robot[n], "bound": self.bound_kind(n),
                         "group": self.group.get(n)})
        return pd.DataFrame(rows, index=pd.Index(self.names, name="candidate"))

    def __repr__(self) -> str:
        return f"RiskBelief({len(self.names)} candidates, bound={self.bound!r})"


def _check_prior(prior: Any) -> RiskPrior:
    if prior is None:
        return RiskPrior()
    if not isinstance(prior, RiskPrior):
        raise InputError("prior", prior, "a RiskPrior")
    for f in ("mu_a", "mu_b", "log_kappa_sd"):
        v = getattr(prior, f)
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise InputError(f"prior.{f}", v, "a finite number > 0")
    if not math.isfinite(prior.log_kappa_loc):
        raise InputError("prior.log_kappa_loc", prior.log_kappa_loc, "a finite number")
    return prior


def _nuts_hyper(gidx, n, y, num_groups, prior, seed, num_samples):
    """Draws of (α_g, β_g) [S, G] from the NumPyro model."""
    import jax
    from numpyro.infer import MCMC, NUTS

    mcmc = MCMC(NUTS(exec_risk_model), num_warmup=num_samples // 2, num_samples=num_samples,
                num_chains=1, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), gidx, n, y, num_groups, prior)
    s = mcmc.get_samples()
    mu, kappa = np.asarray(s["risk_mu"], np.float64), np.exp(np.asarray(s["risk_log_kappa"],
                                                                        np.float64))
    return mu * kappa, (1.0 - mu) * kappa


def fit_exec_risk(evidence: Any, candidates: Sequence[Candidate], bound: str = "clopper-pearson",
                  *, method: str = "quadrature", prior: RiskPrior | None = None, seed: int = 0,
                  num_samples: int = 2000, sim_prior: Mapping[str, Any] | None = None) -> RiskBelief:
    """Pool execution outcomes by method group and bound each candidate's unsafe rate.

    Args:
        evidence: records or a Ledger; only `ExecutionOutcome` records are used (deployment
            evaluations are a different event and are never pooled in).
        candidates: the candidate set. Only robot-touching candidates enter the pools;
            the others have P_exec(unsafe) = 0 by definition.
        bound: "clopper-pearson" or "posterior" (see `RiskBelief`).
        method: "quadrature" (exact hyperparameter integration) or "nuts" (NumPyro).
        prior: hyperprior of each group (default `RiskPrior()`).
        seed, num_samples: for method="nuts" only.
        sim_prior: a simulation-based risk prior: candidate name -> (unsafe, executions)
            counted in simulation under the candidate's execution protocol. Counts may be
            fractional: (u·w, n·w) counts a simulated run as w of a real one, the margin for
            the sim-to-real gap. It replaces the pooled prior of that candidate and, until
            the robot has run it, gives the gate its bound (see `RiskBelief`). Execution
            risk only: deployment risk is never taken from it.

    Returns:
        RiskBelief.

    Example:
        >>> from bayes_s2r.vocab import Candidate
        >>> from bayes_s2r.evidence.records import ExecutionOutcome
        >>> c = [Candidate("ft", "adaptation", "data", method="FT", touches_robot=True)]
        >>> rb = fit_exec_risk([ExecutionOutcome("ft", 120, 0)], c)
        >>> round(rb.ucb("ft", 0.05), 4)
        0.0247
    """
    cands = validate_candidates(candidates)
    if bound not in BOUNDS:
        raise InputError("bound", bound, f"one of {BOUNDS}")
    if method not in ("quadrature", "nuts"):
        raise InputError("method", method, "'quadrature' or 'nuts'")
    prior = _check_prior(prior)
    require_int("num_samples", num_samples, 10)
    known = {c.name for c in cands}
    sims = _check_sim_prior(sim_prior, cands)
    counts: dict[str, tuple[int, int]] = {}
    ignored: list[str] = []
    for r in _records(evidence):
        if not isinstance(r, ExecutionOutcome):
            continue
        if r.candidate not in known:
            ignored.append(r.candidate)
            continue
        e, u = counts.get(r.candidate, (0, 0))
        counts[r.candidate] = (e + r.executions, u + r.unsafe)
    robot = [c for c in cands if c.touches_robot]
    groups = sorted({c.method or _NO_METHOD for c in robot})
    gidx = np.array([groups.index(c.method or _NO_METHOD) for c in robot], np.int64)
    n = np.array([counts.get(c.name, (0, 0))[0] for c in robot], np.float64)
    y = np.array([counts.get(c.name, (0, 0))[1] for c in robot], np.float64)
    mixtures = {}
    if robot and method == "nuts":
        alpha, beta = _nuts_hyper(gidx, n.astype(np.int32), y.astype(np.int32), len(groups),
                                  prior, seed, num_samples)
        w = np.full(alpha.shape[0], 1.0 / alpha.shape[0])
        for m, c in enumerate(robot):
            g = gidx[m]
            mixtures[c.name] = (w, alpha[:, g] + y[m], beta[:, g] + n[m] - y[m])
    elif robot:
        for g in range(len(groups)):
            members = np.flatnonzero(gidx == g)
            w, alpha, beta = _group_grid(n[members], y[members], prior)
            for m in members:
                mixtures[robot[m].name] = (w, alpha + y[m], beta + n[m] - y[m])
    for name, (su, sn) in sims.items():
        e, u = counts.get(name, (0, 0))
        mixtures[name] = (np.ones(1), np.array([1.0 + su + u]), np.array([1.0 + sn - su + e - u]))
    return RiskBelief(cands, counts, mixtures, bound, method, sorted(set(ignored)), sims)


def _check_sim_prior(sim_prior: Any, cands: Sequence[Candidate]) -> dict[str, tuple[float, float]]:
    if sim_prior is None:
        return {}
    if not isinstance(sim_prior, Mapping):
        raise InputError("sim_prior", sim_prior, "a mapping candidate name -> (unsafe, executions)")
    robot = {c.name for c in cands if c.touches_robot}
    out = {}
    for name, value in sim_prior.items():
        if name not in robot:
            raise InputError("sim_prior", name, f"a robot-touching candidate (have {sorted(robot)})")
        ok = isinstance(value, (tuple, list)) and len(value) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in value)
        if not ok or value[0] > value[1]:
            raise InputError(f"sim_prior[{name!r}]", value, "(unsafe, executions) with 0 <= unsafe <= executions")
        out[name] = (float(value[0]), float(value[1]))
    return out


class DeploymentRisk:
    """Bound on P_deploy(unsafe | policy) from `DeploymentEval` records of that policy only.

    Attributes:
        policy: the policy name.
        episodes, unsafe: summed deployment-evaluation counts.
        bound: "clopper-pearson" or "posterior" (Beta(prior_a + y, prior_b + n − y)).
        prior: (a, b) of the Beta prior used by the posterior bound.
    """

    def __init__(self, policy: str, episodes: int, unsafe: int, bound: str,
                 prior: tuple[float, float]):
        self.policy, self.episodes, self.unsafe = policy, episodes, unsafe
        self.bound, self.prior = bound, prior

    @property
    def rate(self) -> float:
        return self.unsafe / self.episodes if self.episodes else math.nan

    def ucb(self, delta: float) -> float:
        """UCB_{1−δ}[P_deploy(unsafe | policy)] (1 without evaluations for Clopper–Pearson)."""
        d = _delta(delta)
        if self.bound == "clopper-pearson":
            return clopper_pearson_ucb(self.unsafe, self.episodes, d)
        a, b = self.prior
        return float(special.betaincinv(a + self.unsafe, b + self.episodes - self.unsafe, 1.0 - d))

    def passes(self, alpha_deploy: float, delta: float) -> bool:
        """Whether UCB_{1−δ} <= α_deploy."""
        if isinstance(alpha_deploy, bool) or not isinstance(alpha_deploy, (int, float)) or not (
                0 <= alpha_deploy <= 1):
            raise InputError("alpha_deploy", alpha_deploy, "a probability in [0, 1]")
        return self.ucb(delta) <= alpha_deploy

    def __repr__(self) -> str:
        return (f"DeploymentRisk({self.policy!r}, {self.unsafe}/{self.episodes} unsafe, "
                f"bound={self.bound!r})")


def fit_deploy_risk(evidence: Any, policy: str, bound: str = "clopper-pearson", *,
                    prior: tuple[float, float] = (1.0, 1.0)) -> DeploymentRisk:
    """Sum the `DeploymentEval` records of `policy` (execution outcomes are not used).

    Example:
        >>> from bayes_s2r.evidence.records import DeploymentEval
        >>> r = fit_deploy_risk([DeploymentEval("pi_3", 200, 180, 1)], "pi_3")
        >>> r.passes(alpha_deploy=0.05, delta=0.05)
        True
    """
    if not isinstance(policy, str) or not policy:
        raise InputError("policy", policy, "a policy name")
    if bound not in BOUNDS:
        raise InputError("bound", bound, f"one of {BOUNDS}")
    if (not isinstance(prior, tuple) or len(prior) != 2 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
            for v in prior)):
        raise InputError("prior", prior, "a pair (a, b) of finite numbers > 0")
    episodes = unsafe = 0
    for r in _records(evidence):
        if isinstance(r, DeploymentEval) and r.policy == policy:
            episodes += r.episodes
            unsafe += r.unsafe
    return DeploymentRisk(policy, episodes, unsafe, bound, (float(prior[0]), float(prior[1])))
