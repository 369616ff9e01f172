"""The gains model: a NumPyro model of ΔJ(m | π_t) for every adaptation candidate.

The model is a plain function of its data, `gains_model(data, spec, sens=None)`. `data` is a
`GainData` NamedTuple of arrays (sufficient statistics, built by
`bayes_s2r.belief.data.prepare_gains`), `spec` a hashable `GainSpec` of static sizes and
switches, `sens` the sensitivity block's data (or None).

Parameterisation (η-scale = logit for `link="logit"`, the J scale for `link="identity"`):

* Policies. Policy p has a control level α_p ~ N(baseline_loc, baseline_scale); J(π_p) =
  sigmoid(α_p). Index 0 is the current policy π_t; `baseline` = sigmoid(α_0).
* Candidates. Group g = (method, lens); method h. For a candidate m with normalised batch
  b̃ (batch / median batch of its method; 1 when it has none)
      B_h  = μ_A + o_h + τ_method·ε_h,   A_g = B_h + τ_group·ε_g,   μ_A ~ N(gain_loc, gain_scale)
  (o_h = method_locs[h] − gain_loc for a method with its own prior mean, else 0)
  (the method level only with several methods, the group level only when some method has
  several lens groups: otherwise the levels are not identifiable and only add a ridge)
      f_m  = b̃(1 + κ_g) / (b̃ + κ_g),                    log κ_g ~ N(kappa_loc, kappa_scale)
      δ_m  = A_g·f_m + τ_cand·ε_m                         (the effect on the current policy)
  with ε ~ N(0, 1); with `candidate_df` = ν the candidate level is Student-t instead,
  ε_m = ε'_m / sqrt(λ_m), λ_m ~ Gamma(ν/2, ν/2) (a scale mixture of normals, so each
  candidate keeps a Gaussian level of scale τ_cand/sqrt(λ_m) given λ_m). With a skew κ
  (`candidate_skew`) the mixture moves the mean too, δ_m = A_g·f_m + τ_cand·(κ·(λ_m^-½ − c_ν)
  + λ_m^-½·ε'_m) with c_ν = E[λ^-½]: the prior mean is unchanged, and the candidates whose
  effects are spread wide are also shifted up (κ > 0: most effects a little below the mean, a
  few large gains) or down (κ < 0). Each level is sampled in a data-centred form: for an element
  x ~ N(loc, τ²) whose evidence gives a rough estimate ŷ with information I (a Gaussian
  approximation), the conditional posterior given τ and loc is about N(m, s²) with
  w = Iτ²/(1 + Iτ²), m = w·ŷ + (1 − w)·loc, s = τ·sqrt(1 − w); the sampler sees
  u = (x − m)/s, whose prior is exactly N(w·(loc − ŷ)/s, 1/(1 − w)). u is near N(0, 1) a
  posteriori whatever τ is: non-centred where the data say little (w → 0), centred on the
  data where they pin the element down (w → 1), so neither funnel appears. ŷ and I come
  from `prepare_gains` (`cand_est`, `cand_info`) and are pooled upwards with the sampled
  scales (Σ 1/(1/I + τ²) for groups and methods). They only shape the geometry: the model
  and its posterior are those of the plain hierarchy for any ŷ and I.
* Sensitivity link. A candidate that targets direction k (with sensitivity evidence) centres
  its effect on efficacy · Ŝ_k instead:
      eff_m = 1 − (1 − sigmoid(e_g))^f_m ∈ [0, 1],   e_g ~ N(efficacy_loc, efficacy_scale)
      J*    = 1 − (1 − J_0)·exp(−eff_m·Ŝ_k / (1 − J_0))   (≈ J_0 + eff_m·Ŝ_k, capped below 1)
      δ_m   = logit(J*) − α_0 + τ_cand·z_m                 (identity link: eff_m·Ŝ_k + τ_cand·z_m)
  Ŝ_k comes from `sensitivity_block(sens)`, which adds its own sites and likelihood.
* Evidence under other policies. A (candidate m, policy p) cell sees the effect
      δ_mp = δ_m + Σ_h' (L_ph' − L_0h')·γ[h', h_m] + drift_scale·sqrt(age_p)·η_mp,
  where L_ph' counts the adaptations of method h' in p's lineage, γ[h', h] ~ N(0, order_scale)
  is the pooled "method h' applied before method h" effect shared by all candidates, age_p the
  rounds between p's latest evidence and the current round (≥ 1 for p ≠ π_t) and η_mp ~ N(0, 1).
  Old evidence is thus discounted (it cannot pin δ_m tighter than the drift allows), and the
  logit link supplies headroom: the same δ is worth less on the J scale near J = 1.
* One fix (`fix_prob` = q > 0, or `method_fix_probs`). A campaign has at most one fix:
  k ∈ {none, 1..C} with P(k = m) = q_m (q, or its method's q_h) and P(none) = 1 − Σ_m q_m,
  and the fix's effect replaces its level,
      δ_m ← φ_m when k = m,   φ_m ~ N(fix_loc, fix_scale²).
  k is summed out of the likelihood: the evidence factors over candidates, so with ℓ_m(x) the
  log-likelihood of m's cells at effect x it is Σ_m ℓ_m(δ_m) + log(1 − Σ_m q_m + Σ_m q_m·
  exp(ℓ_m(φ_m) − ℓ_m(δ_m))). Each draw then takes its k from its conditional given the rest
  (through a uniform whose posterior is its prior), so the gain draws hold one fix at most.
* A fix per method (`fix_unit="method"`). Each method u works in a campaign with probability
  q_u, independently of the others, and every candidate of a working method is a fix
  (δ_m ← φ_m); a candidate without a method is a unit of its own. The evidence factors over
  units: Σ_m ℓ_m(δ_m) + Σ_u log(1 − q_u + q_u·exp(Σ_{m∈u} ℓ_m(φ_m) − ℓ_m(δ_m))), and each
  draw takes each unit's state from its conditional given the rest. A sibling that measured
  nothing then says its method does not work, so its untried siblings lose their chance too.
* Gains: ΔJ_m = sigmoid(α_0 + δ_m) − sigmoid(α_0)   (identity link: δ_m).
* Alternatives. When every candidate is trained from one policy (policy 0 here) and the
  deployed policy is one of them, a (`GainData.deployed`), each candidate is worth what it
  adds over a: ΔJ_m = sigmoid(α_0 + δ_m) − sigmoid(α_0 + δ_a), and `baseline` is J(a).
  `prepare_gains(trained_from=...)` puts every treated arm on policy 0 and reads an arm of a
  deployed candidate's policy as a treated arm of that candidate.
* Likelihoods per cell: treated successes ~ Binomial(n_t, sigmoid(α_p + δ_mp)); control
  successes (all cells and deployment evaluations of p) ~ Binomial(n_c, sigmoid(α_p)); the
  mean paired return difference d̄ ~ StudentT(ν0 + n − 1, ΔJ_mp, sqrt((ν0·s0² + SS)/(n(ν0+n−1))))
  — the exact likelihood of the mean when the variance is integrated out under a
  scaled-inverse-χ²(ν0, s0²) prior — or N(ΔJ_mp, σ/√n) when `returns_noise_sd = σ` is known.
  Matched seeds make the arms dependent; with counts only they are treated as independent,
  which over-states the noise of the difference (conservative).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from bayes_s2r.errors import InputError, require_finite, require_finite_nonneg, require_positive

__all__ = ["GainData", "GainPrior", "GainSpec", "gains_model", "mixing_sd_mean"]

_J_EPS = 1e-4
#: What a fix probability is of (`GainPrior.fix_unit`).
FIX_UNITS = ("candidate", "method")


def _positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    return (require_finite_nonneg if allow_zero else require_positive)(f"prior.{name}", value)


@dataclasses.dataclass(frozen=True)
class GainPrior:
    """Prior settings of the gains model (values on the link scale unless said otherwise).

    Attributes:
        link: "logit" (default) or "identity" (additive on the J scale; useful for checks).
        gain_loc, gain_scale: prior of μ_A, the mean effect at the reference batch (shared by
            the candidates of one fit; gain_scale 0 holds it at gain_loc).
        method_locs: the prior mean effect of some methods' candidates instead of `gain_loc`,
            as {method: logits} (stored as sorted (method, logits) pairs): a team that knows
            that on its robot fine-tuning is usually what works says so here
            (`fit_gain_prior(..., methods=...)` fits them from past campaigns).
        method_scale, group_scale, candidate_scale: HalfNormal scales of τ_method, τ_group,
            τ_cand (the values themselves when `fixed_scales`). The candidate scale
            defaults to 2 (weakly informative on the logit scale): an intervention that
            removes a failure mechanism takes J from about 0.02 to about 0.97, some 7
            logits, and a narrower prior would call that impossible, so from a failing
            policy every candidate would look worthless.
        candidate_df: degrees of freedom ν of a Student-t candidate level (None: normal).
            A small ν says that most interventions move J little while a few fix or break
            the policy outright: one right intervention among several takes J from near 0
            to near 1. Under a normal level the gains look additive, and stacking two blind
            tries looks as good as finding the one that works. Take ν ≥ 2. With ν = 1
            (Cauchy) a gain whose evidence saturates J keeps tails so heavy that NUTS
            diverged on 3 of 100 calibration datasets (benchmarks/sbc_gains.py); ν = 2 had
            none and calibrated.
        candidate_skew: skew κ of the Student-t candidate level (0: symmetric; needs
            `candidate_df` > 1). κ > 0 says that a rare candidate is a large gain while most
            sit a little below the mean, the shape of a search for one fix among near-zero
            and harmful adaptations, which a symmetric level can only hold as large losses
            as likely as large gains. The mean effect stays `gain_loc`.
        fixed_scales: hold the three τ's at the given values (a Gaussian prior per candidate).
        baseline_loc, baseline_scale: prior of each policy's control level α_p.
        kappa_loc, kappa_scale: prior of log κ_g, the dose-response half-saturation constant
            (batch normalised by its method's median batch).
        efficacy_loc, efficacy_scale: prior of e_g, logit of the efficacy at the reference batch.
        drift_scale: sd per round of age of the effect drift between policies.
        order_scale: sd of the order effect γ of one method applied before another.
        returns_noise_sd: known sd of one paired return difference, or None (Student-t).
        returns_prior_df, returns_prior_sd: ν0 and s0 of the variance prior for returns.
        fix_prob: the prior probability q that a given candidate is the campaign's one fix
            (0: no fix structure). At most one candidate is the fix: with C candidates, none
            is with probability 1 − C·q, so C·q must stay below 1. The fix's effect replaces
            its hierarchy level (see "One fix" in the module docstring). Unlike a heavy-tailed
            level, a fix found says the others are not fixes, and a candidate that measured
            nothing leaves more room for the others to be it.
        method_fix_probs: the fix probability of some methods' candidates instead of
            `fix_prob`, as {method: q} (stored as sorted (method, q) pairs): where fine-tuning
            usually holds a campaign's fix, its candidates carry more of the fix's probability.
            The candidates' probabilities must sum below 1.
        fix_loc, fix_scale: the fix's effect φ ~ N(fix_loc, fix_scale²) (link scale).
        fix_unit: what a fix probability is of: "candidate" (the one-fix structure above) or
            "method": each method works in a campaign with its probability (`fix_prob`, or
            its `method_fix_probs`), independently of the others, and then every candidate of
            it is a fix (see "A fix per method" in the module docstring): variants of one
            method tend to work or fail together.
    """

    link: str = "logit"
    gain_loc: float = 0.3
    gain_scale: float = 0.5
    method_locs: tuple[tuple[str, float], ...] = ()
    method_scale: float = 0.5
    group_scale: float = 0.3
    candidate_scale: float = 2.0
    candidate_df: float | None = None
    candidate_skew: float = 0.0
    fixed_scales: bool = False
    baseline_loc: float = 0.0
    baseline_scale: float = 1.5
    kappa_loc: float = 0.0
    kappa_scale: float = 0.7
    efficacy_loc: float = 0.0
    efficacy_scale: float = 1.0
    drift_scale: float = 0.25
    order_scale: float = 0.3
    returns_noise_sd: float | None = None
    returns_prior_df: float = 1.0
    returns_prior_sd: float = 0.5
    fix_prob: float = 0.0
    method_fix_probs: tuple[tuple[str, float], ...] = ()
    fix_loc: float = 3.0
    fix_scale: float = 1.0
    fix_unit: str = "candidate"

    def __post_init__(self):
        if self.link not in ("logit", "identity"):
            raise InputError("prior.link", self.link, "'logit' or 'identity'")
        if self.fix_unit not in FIX_UNITS:
            raise InputError("prior.fix_unit", self.fix_unit, f"one of {list(FIX_UNITS)}")
        if not isinstance(self.fixed_scales, bool):
            raise InputError("prior.fixed_scales", self.fixed_scales, "True or False")
        for name in ("gain_loc", "baseline_loc", "kappa_loc", "efficacy_loc", "fix_loc"):
            object.__setattr__(self, name, require_finite(f"prior.{name}", getattr(self, name)))
        for name in ("baseline_scale", "kappa_scale", "efficacy_scale", "returns_prior_df", "returns_prior_sd",
                     "fix_scale"):
            object.__setattr__(self, name, _positive(name, getattr(self, name)))
        for name in ("gain_scale", "method_scale", "group_scale", "candidate_scale", "drift_scale", "order_scale"):
            object.__setattr__(self, name, _positive(name, getattr(self, name), allow_zero=True))
        if self.returns_noise_sd is not None:
            object.__setattr__(self, "returns_noise_sd", _positive("returns_noise_sd", self.returns_noise_sd))
        if self.candidate_df is not None:
            object.__setattr__(self, "candidate_df", _positive("candidate_df", self.candidate_df))
        object.__setattr__(self, "candidate_skew", require_finite("prior.candidate_skew", self.candidate_skew))
        object.__setattr__(self, "method_locs", _method_values(self.method_locs, "method_locs", "{method name: logits}"))
        fix = require_finite_nonneg("prior.fix_prob", self.fix_prob)
        if fix >= 1.0:
            raise InputError("prior.fix_prob", self.fix_prob, "a probability in [0, 1)")
        object.__setattr__(self, "fix_prob", fix)
        object.__setattr__(self, "method_fix_probs", _method_values(
            self.method_fix_probs, "method_fix_probs", "{method name: probability in [0, 1)}", _fix_probability))
        if self.candidate_skew != 0.0 and (self.candidate_df is None or self.candidate_df <= 1.0):
            raise InputError("prior.candidate_skew", self.candidate_skew,
                             f"0 unless candidate_df is a number > 1 (it is {self.candidate_df})")

    @property
    def has_fix(self) -> bool:
        """Whether the one-fix structure is on (some candidate may be the fix)."""
        return self.fix_prob > 0.0 or any(q > 0.0 for _, q in self.method_fix_probs)

    def fix_prob_of(self, method: str | None) -> float:
        """The prior probability that a candidate of `method` is its campaign's one fix (with
        `fix_unit="method"`: that `method` works in a campaign)."""
        return dict(self.method_fix_probs).get(method, self.fix_prob)


def _fix_probability(name: str, value: Any) -> float:
    q = require_finite_nonneg(name, value)
    if q >= 1.0:
        raise ValueError
    return q


def _method_values(value: Any, field: str, expected: str, check=require_finite) -> tuple[tuple[str, float], ...]:
    """{method: value} or (method, value) pairs as sorted pairs (hashable: the prior is static)."""
    pairs = value.items() if isinstance(value, Mapping) else value
    try:
        out = {}
        for method, x in pairs:
            if not isinstance(method, str) or not method or method in out:
                raise TypeError
            out[method] = check(f"prior.{field}[{method!r}]", x)
    except (TypeError, ValueError, InputError):
        raise InputError(f"prior.{field}", value, f"{expected}, each method once") from None
    return tuple(sorted(out.items()))


def mixing_sd_mean(df: float) -> float:
    """c_ν = E[λ^-½] for λ ~ Gamma(ν/2, rate ν/2), ν > 1: the mean scale of a Student-t level
    relative to its τ (the skewed level's shift is centred on it)."""
    return math.exp(math.lgamma((df - 1) / 2) - math.lgamma(df / 2)) * math.sqrt(df / 2)


class GainSpec(NamedTuple):
    """Static structure of one fit (hashable; a new spec means a new compilation).

    Attributes:
        num_candidates, num_groups, num_methods, num_policies, num_cells: array sizes
            (policies and cells are padded to buckets).
        num_directions: sensitivity directions (0 without the sensitivity block).
        has_batch: whether any candidate has a batch (else κ is not sampled).
        has_targets: whether any candidate targets a direction with sensitivity evidence.
        has_drift: whether any cell is under a policy other than the current one.
        has_order: whether lineages give order effects to estimate.
        has_returns: whether any cell carries paired returns.
        prior: the `GainPrior`.
        sensitivity_block: the sensitivity sub-model, or None.
        sensitivity_type: the block's data type, rebuilt from `sens` (a dict of its array
            fields) and `sensitivity_static` (its other fields, as (name, value) pairs).
        sensitivity_static: see `sensitivity_type`.
    """

    num_candidates: int
    num_groups: int
    num_methods: int
    num_policies: int
    num_cells: int
    num_directions: int
    has_batch: bool
    has_targets: bool
    has_drift: bool
    has_order: bool
    has_returns: bool
    prior: GainPrior
    sensitivity_block: Callable | None = None
    sensitivity_type: type | None = None
    sensitivity_static: tuple = ()


class GainData(NamedTuple):
    """Sufficient statistics of the gains evidence (all jnp arrays; see `prepare_gains`).

    Candidate arrays [C]: cand_group, cand_method (int), cand_dose (normalised batch, 1 when
    none), cand_target (direction index, -1 when none), cand_est and cand_info (a rough
    estimate of each candidate's effect and its information, for the data-centred
    parameterisation; None: every level non-centred). Method arrays [H]: method_offset, o_h of
    `GainPrior.method_locs` (None: 0). Group arrays [G]: group_method.
    Policy arrays [P] (index 0 = current; with `deployed`, the policy the alternatives are trained
    from): control_successes, control_episodes, age;
    order_diff [P, H] = L_p − L_0. `deployed` (a scalar index, or None): when the candidates
    are alternatives all trained from policy 0 and the deployed policy is candidate `deployed`,
    the gains and `baseline` refer to that candidate's policy (see "Alternatives" above).
    cand_fix_prob [C]: each candidate's prior probability of being the one fix (None without
    the one-fix structure); with `fix_unit="method"`, its unit's probability of working.
    cand_fix_unit [C]: with `fix_unit="method"`, each candidate's unit (its method's index, or
    an index of its own without a method), in [0, C); None otherwise.
    Cell arrays [Q] (one per candidate × policy): cell_cand, cell_policy, treated_successes,
    treated_episodes, returns_n, returns_mean, returns_ss. Padded entries have zero episodes
    and zero returns_n.
    """

    cand_group: Any
    cand_method: Any
    cand_dose: Any
    cand_target: Any
    group_method: Any
    control_successes: Any
    control_episodes: Any
    age: Any
    order_diff: Any
    cell_cand: Any
    cell_policy: Any
    treated_successes: Any
    treated_episodes: Any
    returns_n: Any
    returns_mean: Any
    returns_ss: Any
    cand_est: Any = None
    cand_info: Any = None
    method_offset: Any = None
    deployed: Any = None
    cand_fix_prob: Any = None
    cand_fix_unit: Any = None


def _scale(name: str, value: float, fixed: bool):
    if fixed or value == 0.0:
        return jnp.asarray(value)
    return numpyro.sample(name, dist.HalfNormal(value))


def _take(x, index, n: int):
    """x[index] as a one-hot product: its gradient is a matmul, not a scatter (which compiles
    slowly on CPU and appears in every leapfrog step of NUTS). Index -1 gives 0."""
    return jax.nn.one_hot(index, n, dtype=x.dtype) @ x


def _std_normal(name: str, n: int):
    return numpyro.sample(name, dist.Normal(0.0, 1.0).expand([n]).to_event(1))


def _level(name: str, loc, scale, est, info, n: int):
    """loc + scale·ε, ε ~ N(0, 1)^n, sampled data-centred (see the module docstring).

    `est`, `info`: rough estimate of each element and its information (None: non-centred).
    """
    if info is None:
        return loc + scale * _std_normal(name, n)
    pos = scale > 0
    safe = jnp.where(pos, scale, 1.0)
    keep = jnp.where(pos, 1.0 / (1.0 + info * safe**2), 1.0)      # 1 − w
    w = 1.0 - keep
    loc = jnp.broadcast_to(loc, (n,))
    m = w * est + keep * loc
    s = safe * jnp.sqrt(keep)
    u = numpyro.sample(name, dist.Normal(w * (loc - est) / s, 1.0 / jnp.sqrt(keep)).to_event(1))
    return jnp.where(pos, m + s * u, loc)


def _pooled(est, info, scale, index, n: int, factor=1.0):
    """Estimate and information of parents from their children's (est / factor, with variance
    (1/I + τ²) / factor²), as a precision-weighted mean. None when `info` is None."""
    if info is None:
        return None, None
    w = jnp.where(info > 0, factor**2 * info / (1.0 + info * scale**2), 0.0)
    onehot = jax.nn.one_hot(index, n, dtype=w.dtype).T
    info_p = onehot @ w
    est_p = (onehot @ (w * est / factor)) / jnp.maximum(info_p, 1e-12)
    return est_p, info_p


def _sensitivity_data(spec: GainSpec, sens):
    """Rebuild the sensitivity block's data from its array fields and the static ones."""
    if spec.sensitivity_type is None or not isinstance(sens, dict):
        return sens
    return spec.sensitivity_type(**sens, **dict(spec.sensitivity_static))


def _binomial(name: str, successes, episodes, *, logits=None, probs=None):
    """Binomial counts (cells with 0 episodes are padding). Observed counts enter as a factor
    s·log p + (n − s)·log(1 − p), the log-likelihood without its constant binomial coefficient
    (cheaper to compile and differentiate); `successes=None` samples them instead."""
    if successes is None:
        n = jnp.asarray(episodes).astype(jnp.int32)   # the sampler needs whole counts
        d = dist.Binomial(n, logits=logits) if logits is not None else dist.Binomial(n, probs=probs)
        return numpyro.sample(name, d.mask(episodes > 0).to_event(1))
    numpyro.factor(name, jnp.sum(_count_log_lik(successes, episodes, logits=logits, probs=probs)))
    return successes


def _count_log_lik(successes, episodes, *, logits=None, probs=None):
    """s·log p + (n − s)·log(1 − p) per element: binomial counts without their constant."""
    if logits is not None:
        log_p, log_q = jax.nn.log_sigmoid(logits), jax.nn.log_sigmoid(-logits)
    else:
        log_p, log_q = jnp.log(probs), jnp.log1p(-probs)
    return successes * log_p + (episodes - successes) * log_q


def gains_model(data: GainData, spec: GainSpec, sens: Any = None):
    """NumPyro model of the gains; see the module docstring for the parameterisation.

    Args:
        data: `GainData` arrays; observed fields may be None to sample them (prior predictive).
        spec: static `GainSpec`.
        sens: the sensitivity block's data (whatever `spec.sensitivity_block` takes), or None.
    """
    pr = spec.prior
    logit = pr.link == "logit"
    C, G, H, P, Q = (spec.num_candidates, spec.num_groups, spec.num_methods,
                     spec.num_policies, spec.num_cells)

    # policies: control levels
    alpha = numpyro.sample("alpha", dist.Normal(pr.baseline_loc, pr.baseline_scale).expand([P]).to_event(1))
    j_pol = jax.nn.sigmoid(alpha) if logit else jnp.clip(jax.nn.sigmoid(alpha), _J_EPS, 1 - _J_EPS)

    # hierarchy of effects on the current policy (data-centred levels)
    # a level is only sampled when it is identifiable: methods when there are several,
    # groups when some method has more than one lens group (else the sum is a ridge)
    tau_m = _scale("tau_method", pr.method_scale, pr.fixed_scales) if H > 1 else 0.0
    tau_g = _scale("tau_group", pr.group_scale, pr.fixed_scales) if G > H else 0.0
    tau_c = _scale("tau_cand", pr.candidate_scale, pr.fixed_scales)
    skew = 0.0
    if pr.candidate_df is not None:  # Student-t as a scale mixture: a normal level per λ_m
        nu = pr.candidate_df
        lam = numpyro.sample("cand_precision", dist.Gamma(nu / 2, nu / 2).expand([C]).to_event(1))
        tau_base, tau_c = tau_c, tau_c / jnp.sqrt(lam)
        if pr.candidate_skew:  # a variance-mean mixture: the widely spread candidates shift
            skew = pr.candidate_skew * (tau_c - tau_base * mixing_sd_mean(nu))
    if spec.has_batch:
        log_kappa = numpyro.sample(
            "log_kappa", dist.Normal(pr.kappa_loc, pr.kappa_scale).expand([G]).to_event(1))
        kappa = _take(jnp.exp(log_kappa), data.cand_group, G)
        dose = data.cand_dose * (1.0 + kappa) / (data.cand_dose + kappa)
    else:
        dose = jnp.ones(C)
    # rough estimates pooled upwards (candidates linked to a sensitivity say nothing of A_g)
    est_c, info_c = data.cand_est, data.cand_info
    linked_c = spec.has_targets and spec.sensitivity_block is not None and sens is not None
    info_up = None if info_c is None else (jnp.where(data.cand_target >= 0, 0.0, info_c)
                                           if linked_c else info_c)
    est_g, info_g = _pooled(est_c, info_up, tau_c, data.cand_group, G, factor=dose)
    est_h, info_h = _pooled(est_g, info_g, tau_g, data.group_method, H)
    offset = jnp.zeros(H) if data.method_offset is None else data.method_offset
    est_t, info_t = (_pooled(None if est_h is None else est_h - offset, info_h, tau_m, jnp.zeros(H, jnp.int32), 1)
                     if H > 1 else (None if est_h is None else est_h - offset, info_h))
    # then the levels, top down
    mu_a = numpyro.deterministic(
        "mu_gain", _level("z_mu", jnp.asarray(pr.gain_loc), jnp.asarray(pr.gain_scale), est_t, info_t, 1)[0])
    a_method = mu_a + offset
    if H > 1:
        a_method = _level("z_method", a_method, tau_m, est_h, info_h, H)
    a_group = _take(a_method, data.group_method, H)
    if G > H:
        a_group = _level("z_group", a_group, tau_g, est_g, info_g, G)
    centre = _take(a_group, data.cand_group, G) * dose

    s_hat = None
    if spec.sensitivity_block is not None and sens is not None:
        s_hat = numpyro.deterministic("sensitivity", spec.sensitivity_block(_sensitivity_data(spec, sens)))
    if spec.has_targets and s_hat is not None:
        e_g = numpyro.sample(
            "efficacy_logit", dist.Normal(pr.efficacy_loc, pr.efficacy_scale).expand([G]).to_event(1))
        eff = 1.0 - jnp.power(1.0 - jax.nn.sigmoid(_take(e_g, data.cand_group, G)), dose)
        s_m = _take(s_hat, data.cand_target, spec.num_directions)
        target_gain = eff * s_m
        if logit:
            room = 1.0 - j_pol[0]
            j_star = jnp.clip(1.0 - room * jnp.exp(-target_gain / room), _J_EPS, 1 - _J_EPS)
            linked = jnp.log(j_star) - jnp.log1p(-j_star) - alpha[0]
        else:
            linked = target_gain
        centre = jnp.where(data.cand_target >= 0, linked, centre)
    delta = _level("z_cand", centre + skew, tau_c, est_c, info_c, C)

    # evidence cells (candidate × policy): each cell's effect is its candidate's, moved by the
    # order effects and the drift of its policy
    moves = []
    if spec.has_order:
        gamma = numpyro.sample("order", dist.Normal(0.0, pr.order_scale).expand([H, H]).to_event(2))
        shift = data.order_diff @ gamma                     # [P, H]
        moves.append(jnp.sum(_take(shift, data.cell_policy, P) * jax.nn.one_hot(data.cand_method[data.cell_cand], H), -1))
    if spec.has_drift:
        eta = _std_normal("drift", Q)
        moves.append(pr.drift_scale * jnp.sqrt(data.age)[data.cell_policy] * eta)
    a_cell = _take(alpha, data.cell_policy, P)

    def cell_effect(effect):  # [C] -> [Q]
        d = _take(effect, data.cell_cand, C)
        for move in moves:
            d = d + move
        return d

    def gain_at(a, d):
        if logit:
            return jax.nn.sigmoid(a + d) - jax.nn.sigmoid(a)
        return d

    def treated_at(d_cell):  # the treated arms' success probability, as _binomial takes it
        if logit:
            return {"logits": a_cell + d_cell}
        return {"probs": jnp.clip(_take(j_pol, data.cell_policy, P) + d_cell, _J_EPS, 1 - _J_EPS)}

    def cell_log_lik(d_cell):  # [Q] treated counts and paired returns, given the cells' effects
        ll = _count_log_lik(data.treated_successes, data.treated_episodes, **treated_at(d_cell))
        if spec.has_returns:
            has = data.returns_n > 0
            ll = ll + jnp.where(has, _returns_dist(data, pr, gain_at(a_cell, d_cell)).log_prob(data.returns_mean), 0.0)
        return ll

    observed = data.treated_successes is not None
    mixture = pr.has_fix
    if mixture and pr.fix_unit == "method":
        delta = _fix_by_unit(data, pr, C, delta, observed, cell_effect, cell_log_lik)
    elif mixture:  # one fix or none: k = 0 none, k = m + 1 candidate m, summed out in the likelihood
        phi = numpyro.sample("fix_effect", dist.Normal(pr.fix_loc, pr.fix_scale).expand([C]).to_event(1))
        q = data.cand_fix_prob  # a candidate with q = 0 is never the fix: log 0 = -inf weighs nothing
        log_k = jnp.concatenate([jnp.log1p(-jnp.sum(q))[None], jnp.log(q)])
        if observed:
            plain = cell_log_lik(cell_effect(delta))
            as_fix = cell_log_lik(cell_effect(phi))
            log_k = log_k.at[1:].add(jax.nn.one_hot(data.cell_cand, C, dtype=plain.dtype).T @ (as_fix - plain))
            numpyro.factor("treated", plain.sum() + jax.nn.logsumexp(log_k))
        # each draw's k from its conditional given the rest: the uniform's posterior is its prior,
        # so the gains carry which candidate is the fix into every later use of the draws
        pick = numpyro.sample("fix_pick", dist.Uniform(0.0, 1.0))
        cum = jnp.cumsum(numpyro.deterministic("fix_weight", jax.nn.softmax(log_k)))
        k = numpyro.deterministic("fix", jnp.sum(cum[:-1] < pick * cum[-1]))
        delta = jnp.where(jnp.arange(C) == k - 1, phi, delta)

    if data.deployed is None:
        numpyro.deterministic("baseline", j_pol[0])
        numpyro.deterministic("gain", gain_at(alpha[0], delta))
    else:  # alternatives: the deployed policy is candidate `deployed` trained from policy 0
        lift = gain_at(alpha[0], delta)
        own = _take(lift, data.deployed, C)
        numpyro.deterministic("baseline", j_pol[0] + own)
        numpyro.deterministic("gain", lift - own)

    if logit:
        _binomial("control", data.control_successes, data.control_episodes, logits=alpha)
    else:
        _binomial("control", data.control_successes, data.control_episodes, probs=j_pol)
    if mixture and observed:
        return
    d_cell = cell_effect(delta)
    _binomial("treated", data.treated_successes, data.treated_episodes, **treated_at(d_cell))
    if spec.has_returns:
        obs_dist = _returns_dist(data, pr, gain_at(a_cell, d_cell))
        numpyro.sample("returns", obs_dist.mask(data.returns_n > 0).to_event(1), obs=data.returns_mean)


def _fix_by_unit(data: GainData, pr: GainPrior, C: int, delta, observed: bool, cell_effect, cell_log_lik):
    """The effects with every candidate of a working unit replaced by its fix effect, each unit
    working with its probability independently, summed out of the likelihood (module docstring,
    "A fix per method"). Sites: "fixes" [C] (1 where the candidate is a fix in the draw) and
    "fix_weight" [C + 1] (P(no candidate is a fix), then each candidate's P(fix), given the rest)."""
    phi = numpyro.sample("fix_effect", dist.Normal(pr.fix_loc, pr.fix_scale).expand([C]).to_event(1))
    onto = jax.nn.one_hot(data.cand_fix_unit, C, dtype=phi.dtype)  # [C candidates, C units]
    q = jnp.max(onto * data.cand_fix_prob[:, None], axis=0)        # [units]; 0 for an empty one
    log_on, log_off = jnp.log(q), jnp.log1p(-q)                     # log 0 = -inf: never works
    if observed:
        plain = cell_log_lik(cell_effect(delta))
        as_fix = cell_log_lik(cell_effect(phi))
        lift = jax.nn.one_hot(data.cell_cand, C, dtype=plain.dtype).T @ (as_fix - plain) @ onto  # [units]
        log_on = log_on + lift
        numpyro.factor("treated", plain.sum() + jnp.logaddexp(log_off, log_on).sum())
    works = jax.nn.sigmoid(log_on - log_off)  # each unit's P(works | the rest)
    numpyro.deterministic("fix_weight", jnp.concatenate([jnp.prod(1.0 - works)[None], onto @ works]))
    # each draw's state of each unit from its conditional: the uniforms' posterior is their prior
    pick = numpyro.sample("fix_pick", dist.Uniform(0.0, 1.0).expand([C]).to_event(1))
    fixes = numpyro.deterministic("fixes", onto @ (pick < works).astype(phi.dtype))
    return jnp.where(fixes > 0.5, phi, delta)


def _returns_dist(data: GainData, pr: GainPrior, loc):
    """The mean paired return difference of each cell around `loc` (see the module docstring)."""
    n_safe = jnp.where(data.returns_n > 0, data.returns_n, 1.0)
    if pr.returns_noise_sd is not None:
        return dist.Normal(loc, pr.returns_noise_sd / jnp.sqrt(n_safe))
    df = pr.returns_prior_df + n_safe - 1.0
    ss = pr.returns_prior_df * pr.returns_prior_sd**2 + data.returns_ss
    return dist.StudentT(df, loc, jnp.sqrt(ss / (n_safe * df)))
