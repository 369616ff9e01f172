"""Outcome models of an experiment, used by the look-ahead: pure, jittable, key first.

They belong to the vocabulary (a `Candidate`'s `outcome=`), so the evidence files can read
and write them; `bayes_s2r.belief` re-exports them. JAX is imported when this module is.

An outcome model says what running a candidate's experiment would show, given the gain θ
it measures: `simulate(rng_key, theta) -> y` and `log_likelihood(y, theta) -> float`.
Both work on scalar θ and broadcast over arrays of θ (posterior draws).

Every model also reduces to the same three numbers, `(kind, a, b)` from `params()`, so
that one vectorised computation can run over candidates whose models differ: the
parameter form (`simulate_params`, `likelihood_statistics` and `likelihood_coefficients`,
`moment_observation`) is what the look-ahead uses, and a test checks it against each
model's own `simulate` and `log_likelihood`.
"""

from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType

import jax
import jax.numpy as jnp
from jax.scipy import stats
from jax.scipy.special import gammaln

from bayes_s2r.errors import InputError

__all__ = [
    "OUTCOME_KINDS",
    "BinomialPairedOutcome",
    "GaussianOutcome",
    "NoOutcome",
    "SafetyProbe",
    "likelihood_coefficients",
    "likelihood_statistics",
    "log_choose_table",
    "log_likelihood_params",
    "moment_observation",
    "outcome_from_mapping",
    "simulate_params",
]

_EPS = 1e-6
OUTCOME_KINDS = MappingProxyType({"none": 0, "gaussian": 1, "binomial_paired": 2, "safety_probe": 3})


def _binomial_treated_p(theta, baseline):
    return jnp.clip(baseline + theta, _EPS, 1.0 - _EPS)


@dataclasses.dataclass(frozen=True)
class BinomialPairedOutcome:
    """Paired binomial evaluation: `episodes` matched episodes per arm.

    The control arm runs the current policy with success probability `baseline` (the
    current J); the treated arm succeeds with probability `baseline + θ`. Only the treated
    count depends on θ, so y is the treated success count.

    Example:
        >>> import jax
        >>> o = BinomialPairedOutcome(episodes=50, baseline=0.6)
        >>> y = o.simulate(jax.random.key(0), 0.2)
        >>> 0 <= int(y) <= 50
        True
    """

    episodes: int = 50
    baseline: float = 0.5

    def __post_init__(self):
        if isinstance(self.episodes, bool) or not isinstance(self.episodes, int) or self.episodes < 1:
            raise InputError("outcome.episodes", self.episodes, "a whole number >= 1")
        if not isinstance(self.baseline, (int, float)) or not 0.0 <= self.baseline <= 1.0:
            raise InputError("outcome.baseline", self.baseline, "a probability in [0, 1]")

    def simulate(self, rng_key, theta):
        p = _binomial_treated_p(jnp.asarray(theta, jnp.float32), self.baseline)
        return jax.random.binomial(rng_key, self.episodes, p).astype(jnp.float32)

    def log_likelihood(self, y, theta):
        p = _binomial_treated_p(jnp.asarray(theta, jnp.float32), self.baseline)
        return stats.binom.logpmf(y, self.episodes, p)

    def params(self) -> tuple[int, float, float]:
        return OUTCOME_KINDS["binomial_paired"], float(self.episodes), float(self.baseline)

    def with_baseline(self, baseline: float) -> BinomialPairedOutcome:
        return dataclasses.replace(self, baseline=float(min(max(baseline, 0.0), 1.0)))


@dataclasses.dataclass(frozen=True)
class GaussianOutcome:
    """A noisy measurement of the gain: y = θ + noise_sd · ε.

    Example:
        >>> ll = float(GaussianOutcome(noise_sd=1.0).log_likelihood(0.0, 0.0))  # float32
        >>> math.isclose(ll, -0.5 * math.log(2 * math.pi), rel_tol=1e-6)
        True
    """

    noise_sd: float = 0.1

    def __post_init__(self):
        if not isinstance(self.noise_sd, (int, float)) or not (
            math.isfinite(self.noise_sd) and self.noise_sd > 0
        ):
            raise InputError("outcome.noise_sd", self.noise_sd, "a finite number > 0")

    def simulate(self, rng_key, theta):
        theta = jnp.asarray(theta, jnp.float32)
        return theta + self.noise_sd * jax.random.normal(rng_key, jnp.shape(theta))

    def log_likelihood(self, y, theta):
        return stats.norm.logpdf(y, theta, self.noise_sd)

    def params(self) -> tuple[int, float, float]:
        return OUTCOME_KINDS["gaussian"], float(self.noise_sd), 0.0


@dataclasses.dataclass(frozen=True)
class NoOutcome:
    """An experiment that shows nothing about the gain (its likelihood is flat)."""

    def simulate(self, rng_key, theta):
        return jnp.zeros(jnp.shape(theta), jnp.float32)

    def log_likelihood(self, y, theta):
        return jnp.zeros(jnp.broadcast_shapes(jnp.shape(y), jnp.shape(theta)), jnp.float32)

    def params(self) -> tuple[int, float, float]:
        return OUTCOME_KINDS["none"], 0.0, 0.0


@dataclasses.dataclass(frozen=True)
class SafetyProbe:
    """A safety probe: `executions` short runs of a robot-touching candidate under a
    conservative protocol, counting unsafe events. θ is that candidate's unsafe rate
    P_exec(unsafe); y is the unsafe count, recorded as an `ExecutionOutcome` of the candidate
    the probe observes (`observes="safety:<name>"`).

    The probe touches the robot under its own protocol (an operator at the stop button,
    reduced speed, a short horizon), whose execution risk is known: `risk_bound` is the
    upper bound the gate uses for the probe itself while the probe has no execution record
    of its own.

    Example:
        >>> import jax
        >>> probe = SafetyProbe(executions=60, risk_bound=0.01)
        >>> y = probe.simulate(jax.random.key(0), 0.0)
        >>> int(y), probe.params()[0] == OUTCOME_KINDS["safety_probe"]
        (0, True)
    """

    executions: int = 60
    risk_bound: float = 0.01

    def __post_init__(self):
        if isinstance(self.executions, bool) or not isinstance(self.executions, int) or self.executions < 1:
            raise InputError("outcome.executions", self.executions, "a whole number >= 1")
        if isinstance(self.risk_bound, bool) or not isinstance(self.risk_bound, (int, float)) or not (
                0.0 <= self.risk_bound <= 1.0):
            raise InputError("outcome.risk_bound", self.risk_bound, "a probability in [0, 1]")

    def simulate(self, rng_key, theta):
        p = jnp.clip(jnp.asarray(theta, jnp.float32), 0.0, 1.0)
        return jax.random.binomial(rng_key, self.executions, p).astype(jnp.float32)

    def log_likelihood(self, y, theta):
        return stats.binom.logpmf(y, self.executions, jnp.clip(jnp.asarray(theta, jnp.float32), _EPS, 1 - _EPS))

    def params(self) -> tuple[int, float, float]:
        return OUTCOME_KINDS["safety_probe"], float(self.executions), float(self.risk_bound)


# The parameter form: every model reduces to `params() == (kind, a, b)`, so one vectorised
# computation runs over candidates whose models differ (kind may be traced). The look-ahead
# draws its outcomes and weighs its posterior draws with these.


def log_choose_table(a, n_cap: int):
    """log C(n, k) for every candidate's count n = max(a, 1) and k = 0..n_cap: [M, n_cap + 1]
    (the binomial's normaliser, reused by every outcome `simulate_params` draws)."""
    n = jnp.maximum(a, 1.0)[:, None]
    ks = jnp.arange(n_cap + 1, dtype=jnp.float32)[None, :]
    return gammaln(n + 1.0) - gammaln(ks + 1.0) - gammaln(jnp.maximum(n - ks, 0.0) + 1.0)


def simulate_params(normal, uniform, theta, kind, a, b, log_choose):
    """One outcome y [M] for each candidate's drawn θ [M], from a shared standard normal and a
    shared uniform (common random numbers across candidates).

    Binomial counts are drawn by inverting their CDF over 0..n_cap (`log_choose` from
    `log_choose_table`), which compiles in a fraction of a second where `jax.random.binomial`
    with a traced count takes tens of seconds; the distribution is the same. A model that
    measures no gain (none, a safety probe) gives 0.
    """
    gauss = theta + a * normal
    n = jnp.maximum(a, 1.0)[:, None]
    p = _binomial_treated_p(theta, b)[:, None]
    ks = jnp.arange(log_choose.shape[1], dtype=jnp.float32)[None, :]
    pmf = jnp.where(ks <= n, jnp.exp(log_choose + ks * jnp.log(p) + (n - ks) * jnp.log1p(-p)), 0.0)
    cdf = jnp.cumsum(pmf, axis=1)
    count = jnp.minimum(jnp.sum(cdf < uniform * cdf[:, -1:], axis=1).astype(jnp.float32), n[:, 0])
    return jnp.select([kind == 1, kind == 2], [gauss, count], jnp.zeros_like(theta))


def likelihood_statistics(theta, kind, a, b):
    """(U(θ), V(θ)) with log p(y | θ) = A(y)·U(θ) + B(y)·V(θ) + c(y): θ and θ² for a Gaussian,
    log p and log(1 − p) for a paired binomial, zeros otherwise. `theta` is [M, S], the rest [M]."""
    gauss, binom = (kind == 1)[:, None], (kind == 2)[:, None]
    p = _binomial_treated_p(theta, b[:, None])
    return (jnp.where(gauss, theta, jnp.where(binom, jnp.log(p), 0.0)),
            jnp.where(gauss, theta**2, jnp.where(binom, jnp.log1p(-p), 0.0)))


def likelihood_coefficients(y, kind, a):
    """(A(y), B(y)) of `likelihood_statistics`: y/σ² and −1/(2σ²) for a Gaussian, y and n − y
    for a paired binomial, zeros otherwise."""
    gauss, binom = kind == 1, kind == 2
    inv_var = jnp.where(gauss, 1.0 / jnp.where(gauss, a, 1.0) ** 2, 0.0)
    return (jnp.where(gauss, y * inv_var, jnp.where(binom, y, 0.0)),
            jnp.where(gauss, -0.5 * inv_var, jnp.where(binom, jnp.maximum(a, 1.0) - y, 0.0)))


def log_likelihood_params(y, theta, kind, a, b):
    """`log_likelihood` of the model with `params() == (kind, a, b)`, from the same
    A(y)·U(θ) + B(y)·V(θ) form the look-ahead weighs its draws with, plus c(y). `y`, `kind`,
    `a`, `b` are [M]; `theta` is [M, S]; the result is [M, S]."""
    u, v = likelihood_statistics(theta, kind, a, b)
    coef_a, coef_b = likelihood_coefficients(y, kind, a)
    n, sd = jnp.maximum(a, 1.0), jnp.where(kind == 1, a, 1.0)
    c = jnp.select([kind == 1, kind == 2],
                   [-0.5 * (y / sd) ** 2 - jnp.log(sd) - 0.5 * math.log(2 * math.pi),
                    gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)], jnp.zeros_like(y))
    return coef_a[:, None] * u + coef_b[:, None] * v + c[:, None]


def moment_observation(y, kind, a, b):
    """A Gaussian reading of outcome y: (θ̂, R) with θ̂ ~ N(θ, R) approximately. The measured
    gain and σ² for a Gaussian; for a paired binomial the treated rate (with a half-count
    prior, kept off 0 and 1) minus the control's, and its binomial variance."""
    gauss = kind == 1
    n = jnp.maximum(a, 1.0)
    p_hat = jnp.clip((y + 0.5) / (n + 1.0), 1e-3, 1 - 1e-3)
    return jnp.where(gauss, y, p_hat - b), jnp.where(gauss, a**2, p_hat * (1 - p_hat) / n)


def outcome_from_mapping(spec, *, field: str = "outcome"):
    """Build an outcome model from `{"kind": "binomial_paired", "episodes": 50}` and the like."""
    if spec is None:
        return None
    if not isinstance(spec, dict) or "kind" not in spec:
        raise InputError(field, spec, "a table with kind = 'binomial_paired' | 'gaussian' | 'safety_probe' | 'none'")
    args = {k: v for k, v in spec.items() if k != "kind"}
    kinds = {"binomial_paired": BinomialPairedOutcome, "gaussian": GaussianOutcome, "none": NoOutcome,
             "safety_probe": SafetyProbe}
    if spec["kind"] not in kinds:
        raise InputError(f"{field}.kind", spec["kind"], f"one of {sorted(kinds)}")
    cls = kinds[spec["kind"]]
    allowed = {f.name for f in dataclasses.fields(cls)}
    for k, v in args.items():
        if k not in allowed:
            raise InputError(f"{field}.{k}", v, f"a field among {sorted(allowed)}")
    return cls(**args)
