"""Monte-Carlo one-step look-ahead: CVU(m) for every candidate in one compiled computation.

For candidate m and simulated outcome Y_j (from the posterior predictive of m's outcome
model), the belief is updated by importance-reweighting the one set of posterior draws,
w_s ∝ p(Y_j | θ_s), where θ_s is the draw of the quantity m observes. The updated mean
(and variance) of every candidate's gain is then one matrix product of the weights with
the gain draws. Where the weights collapse (effective sample size below
`collapse_ess`), a moment-matched Gaussian update is used instead: the joint Gaussian of
the draws' mean and covariance conditioned on a Gaussian approximation of the
observation. Next, G0(s^{m,Y_j}) = max(0, max_c U0(c | s^{m,Y_j})) on the deducted
budget's prices and feasible set, after the transition rule for an adaptation.

Both outcome models in use have log-likelihoods of the form A(y)·U(θ) + B(y)·V(θ) (up to
terms that cancel in the normalisation): Gaussian U = θ, V = θ²; paired binomial U = log p,
V = log(1 − p). The [candidates, outcomes, draws] log-weights are therefore two fused
multiply-adds per element, and the cost is dominated by one exponential and the matrix
product the reweighting needs anyway.

Two decisions ahead (`lookahead_depth=2`, `_two_step`), every next state s^{m,Y_j} is
carried by a resample of its weighted draws and gets a one-step look-ahead of its own, all
in the same compiled computation.

Randomness: the draw indices of the outcomes and their PRNG keys are drawn once and
shared by every candidate (common random numbers). Shapes: the candidate axis is padded
to a bucket (masks keep padded rows out), so a shrinking set reuses the compiled function;
outcomes run through `lax.map` in chunks that bound peak memory.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, ndtri

from bayes_s2r.decision.config import (
    DecideConfig,
    adopt_moment,
    adoption_probability,
    evaluation_sd,
    utility_constant,
)
from bayes_s2r.decision.problem import Problem
from bayes_s2r.decision.transition import repeat_share
from bayes_s2r.errors import InputError

__all__ = [
    "LookaheadArrays",
    "LookaheadResult",
    "SecondStepArrays",
    "binomial_cap",
    "block_outcomes",
    "bucket_size",
    "chunk_outcomes",
    "draw_outcomes",
    "lookahead",
    "lookahead_arrays",
    "second_step_arrays",
]

_P_EPS = 1e-6


class LookaheadArrays(NamedTuple):
    """The look-ahead's inputs, padded to a bucket of `Mb` candidates (float32 on device).

    Attributes:
        dg: [S, Mb] draws of each candidate's gain (zeros for non-adaptations and padding).
        theta_obs: [Mb, S] draws of the quantity each candidate's experiment observes.
        kind, a, b: [Mb] outcome-model parameters (kind 0: observes nothing).
        is_adapt: [Mb] the candidate is an adaptation (the transition rule applies).
        feas_now, cost_now: [Mb] feasible set and priced costs at s_t.
        feas_next, cost_next: [Mb, Mb] the same in the state after row m ran.
        valid: [Mb] real (not padded) candidates.
    """

    dg: jax.Array
    theta_obs: jax.Array
    kind: jax.Array
    a: jax.Array
    b: jax.Array
    is_adapt: jax.Array
    feas_now: jax.Array
    cost_now: jax.Array
    feas_next: jax.Array
    cost_next: jax.Array
    valid: jax.Array


class LookaheadResult(NamedTuple):
    """Per-candidate look-ahead results (NumPy, length M).

    Attributes:
        cvu: E_Y[G0(s^{m,Y})] − G0(s^∅).
        cvu_se: Monte-Carlo standard error of `cvu` (sd of G0(s^{m,Y_j}) over j / √K).
        ess: mean effective sample size of the importance weights over outcomes.
        ess_min: smallest effective sample size over outcomes.
        collapsed: share of outcomes that used the moment-matched Gaussian update.
        g0_null: G0(s^∅).
    """

    cvu: np.ndarray
    cvu_se: np.ndarray
    ess: np.ndarray
    ess_min: np.ndarray
    collapsed: np.ndarray
    g0_null: float


def bucket_size(m: int, bucket: int) -> int:
    """`bucket` · 2^k, the smallest such size ≥ m."""
    size = bucket
    while size < m:
        size *= 2
    return size


def lookahead_arrays(problem: Problem, bucket: int = 8) -> LookaheadArrays:
    """Pad the problem's candidate axis to `bucket_size` and move it to the device."""
    m = problem.size
    mb = bucket_size(m, bucket)
    s = problem.draws.shape[0]

    def pad(x, fill=0):
        out = np.full((mb,) + x.shape[1:], fill, dtype=x.dtype)
        out[:m] = x
        return out

    dg = np.zeros((s, mb), np.float32)
    adapt = problem.gain_col >= 0
    dg[:, :m][:, adapt] = problem.draws[:, problem.gain_col[adapt]]
    theta = np.zeros((mb, s), np.float32)
    seen = problem.obs_col >= 0
    theta[:m][seen] = (problem.draws[:, problem.obs_col[seen]] * problem.obs_sign[seen]).T
    feas_next = np.zeros((mb, mb), bool)
    feas_next[:m, :m] = problem.feas_next
    cost_next = np.zeros((mb, mb), np.float32)
    cost_next[:m, :m] = problem.cost_next
    return LookaheadArrays(
        dg=jnp.asarray(dg), theta_obs=jnp.asarray(theta),
        kind=jnp.asarray(pad(problem.kind.astype(np.int32))),
        a=jnp.asarray(pad(problem.a.astype(np.float32))),
        b=jnp.asarray(pad(problem.b.astype(np.float32))),
        is_adapt=jnp.asarray(pad(problem.is_adapt)), feas_now=jnp.asarray(pad(problem.feasible)),
        cost_now=jnp.asarray(pad(problem.c_lambda.astype(np.float32))),
        feas_next=jnp.asarray(feas_next), cost_next=jnp.asarray(cost_next),
        valid=jnp.asarray(pad(np.ones(m, bool))),
    )


def _log_choose(a, n_cap: int):
    """log C(n, k) for every candidate's count n = max(a, 1) and k = 0..n_cap: [Mb, n_cap + 1]."""
    n = jnp.maximum(a, 1.0)[:, None]
    ks = jnp.arange(n_cap + 1, dtype=jnp.float32)[None, :]
    return gammaln(n + 1.0) - gammaln(ks + 1.0) - gammaln(jnp.maximum(n - ks, 0.0) + 1.0)


def _simulate_one(eps, u, theta, kind, a, b, log_choose):
    """One outcome per candidate: y [Mb] given the drawn θ [Mb], a shared normal and uniform.

    Every candidate uses the same standard normal `eps` and the same uniform `u` (common
    random numbers). Binomial counts are drawn by inverting their CDF over 0..n_cap
    (`log_choose` from `_log_choose`), which compiles in a fraction of a second where
    `jax.random.binomial` with a traced count takes tens of seconds; the distribution is
    the same.
    """
    gauss = theta + a * eps
    n = jnp.maximum(a, 1.0)[:, None]
    p = jnp.clip(b + theta, _P_EPS, 1.0 - _P_EPS)[:, None]
    ks = jnp.arange(log_choose.shape[1], dtype=jnp.float32)[None, :]
    pmf = jnp.where(ks <= n, jnp.exp(log_choose + ks * jnp.log(p) + (n - ks) * jnp.log1p(-p)), 0.0)
    cdf = jnp.cumsum(pmf, axis=1)
    count = jnp.minimum(jnp.sum(cdf < u * cdf[:, -1:], axis=1).astype(jnp.float32), n[:, 0])
    return jnp.select([kind == 1, kind == 2], [gauss, count], jnp.zeros_like(theta))


def _outcome_plan(rng_key, num_draws: int, num_outcomes: int):
    """Draw indices [K], standard normals [K] and uniforms [K], shared by every candidate.

    One call to the PRNG (each call site costs compile time on a CPU); the three streams
    are transforms of independent uniforms.
    """
    uni = jax.random.uniform(rng_key, (3, num_outcomes), minval=1e-7, maxval=1.0 - 1e-7)
    idx = jnp.minimum((uni[0] * num_draws).astype(jnp.int32), num_draws - 1)
    return idx, ndtri(uni[1]), uni[2]


def _outcomes(rng_key, arr: LookaheadArrays, num_outcomes: int, n_cap: int):
    idx, eps, u = _outcome_plan(rng_key, arr.dg.shape[0], num_outcomes)
    theta = arr.theta_obs[:, idx].T  # [K, Mb]
    sim = jax.vmap(_simulate_one, in_axes=(0, 0, 0, None, None, None, None))
    return idx, sim(eps, u, theta, arr.kind, arr.a, arr.b, _log_choose(arr.a, n_cap))


draw_outcomes = jax.jit(_outcomes, static_argnames=("num_outcomes", "n_cap"))
draw_outcomes.__doc__ = (
    "Jitted `(rng_key, arrays, num_outcomes, n_cap) -> (idx [K], Y [K, Mb])`: the outcomes the "
    "look-ahead simulates for the same key (n_cap: `binomial_cap(problem)`)."
)


def binomial_cap(problem: Problem) -> int:
    """Static upper bound of the binomial counts (a power of two, so few compiles)."""
    n = int(max([1] + [int(a) for a, k in zip(problem.a, problem.kind) if k == 2]))
    cap = 1
    while cap < n:
        cap *= 2
    return cap


class _Terms(NamedTuple):
    """What every simulated outcome of a state reuses: the outcome models' log-likelihood
    terms over the draws and the draws' moments."""

    gauss: jax.Array
    binom: jax.Array
    n: jax.Array
    log_choose: jax.Array
    u: jax.Array
    v: jax.Array
    inv_var: jax.Array
    mu0: jax.Array
    dgc: jax.Array
    var0: jax.Array
    mo: jax.Array
    vo: jax.Array
    cov: jax.Array


def _terms(arr: LookaheadArrays, n_cap: int) -> _Terms:
    gauss, binom = arr.kind == 1, arr.kind == 2
    p = jnp.clip(arr.b[:, None] + arr.theta_obs, _P_EPS, 1.0 - _P_EPS)
    mu0 = arr.dg.mean(0)
    dgc = arr.dg - mu0
    mo = arr.theta_obs.mean(1)
    tc = arr.theta_obs - mo[:, None]
    return _Terms(
        gauss=gauss, binom=binom, n=jnp.maximum(arr.a, 1.0), log_choose=_log_choose(arr.a, n_cap),
        u=jnp.where(gauss[:, None], arr.theta_obs, jnp.where(binom[:, None], jnp.log(p), 0.0)),
        v=jnp.where(gauss[:, None], arr.theta_obs**2, jnp.where(binom[:, None], jnp.log1p(-p), 0.0)),
        inv_var=jnp.where(gauss, 1.0 / jnp.where(gauss, arr.a, 1.0) ** 2, 0.0),
        mu0=mu0, dgc=dgc, var0=(dgc**2).mean(0), mo=mo, vo=(tc**2).mean(1),
        cov=tc @ dgc / arr.dg.shape[0],  # [Mb (observer m), Mb (gain c)]
    )


def _simulate(tm: _Terms, arr: LookaheadArrays, plan):
    """One simulated outcome per candidate from the plan's shared random numbers, and the
    coefficients of its log-weights."""
    j, eps, u_j = plan
    y = _simulate_one(eps, u_j, arr.theta_obs[:, j], arr.kind, arr.a, arr.b, tm.log_choose)
    coef_a = jnp.where(tm.gauss, y * tm.inv_var, jnp.where(tm.binom, y, 0.0))
    coef_b = jnp.where(tm.gauss, -0.5 * tm.inv_var, jnp.where(tm.binom, tm.n - y, 0.0))
    # Log-weights relative to the draw that generated y: no max pass is needed, since
    # ll_s − ll_j ≤ ε²/2 (Gaussian) or n·KL(y/n ‖ p_j) (binomial), small for any y drawn
    # from p(·|θ_j); w_j = 1 keeps Σw ≥ 1. The clamp only guards the exponent.
    shift = coef_a * tm.u[:, j] + coef_b * tm.v[:, j]
    return y, coef_a, coef_b, shift


def _gaussian_update(tm: _Terms, arr: LookaheadArrays, y):
    """Moment-matched update of every row's observation: condition N(mean, cov) on θ̂ ~ N(θ_obs, R)."""
    p_hat = jnp.clip((y + 0.5) / (tm.n + 1.0), 1e-3, 1 - 1e-3)
    theta_hat = jnp.where(tm.gauss, y, p_hat - arr.b)
    r = jnp.where(tm.gauss, arr.a**2, p_hat * (1 - p_hat) / tm.n)
    k_gain = jnp.where((tm.gauss | tm.binom)[:, None], tm.cov / (tm.vo + r)[:, None], 0.0)
    return tm.mu0 + k_gain * (theta_hat - tm.mo)[:, None], jnp.maximum(tm.var0 - k_gain * tm.cov, 0.0)


def _adopts(tm: _Terms, arr: LookaheadArrays, y, adopt: bool):
    """Whether the deployed policy changes: an adaptation, kept (under "adopt") only when its
    evaluation shows an improvement (a tie keeps the incumbent; the margin keeps float32 ties ties)."""
    if not adopt:
        return arr.is_adapt
    return arr.is_adapt & jnp.where(tm.gauss, y > 0, tm.binom & (y > arr.b * tm.n + 1e-3))


def _after_move(rule, mean, var, is_m, j_now):
    """The gains' moments once the adaptation marked by `is_m` is deployed: the transition
    rule for every candidate, and `repeat_share` of it for a repeat of m from π^m."""
    mean_t, var_t = rule.apply(mean, var, jnp.sum(jnp.where(is_m, mean, 0.0)), j_now)
    share = repeat_share(rule)
    if share == 1.0:
        return mean_t, var_t
    return jnp.where(is_m, share * mean_t, mean_t), jnp.where(is_m, share**2 * var_t, var_t)


def _lookahead(rng_key, arr: LookaheadArrays, j_now, collapse_ess, kappa, *, num_outcomes: int,
               batch: int, block: int, use_var: bool, rule, n_cap: int, adopt: bool = False):
    s = arr.dg.shape[0]
    idx, eps_all, u_all = _outcome_plan(rng_key, s, num_outcomes)
    tm = _terms(arr, n_cap)
    mu0, dgc, var0 = tm.mu0, tm.dgc, tm.var0
    ncol = dgc.shape[1]
    # "adopt" takes E[max(ΔJ, 0)] over the (reweighted) draws themselves, as U0 does: near
    # J = 1 the gains are bounded by the headroom with a long tail below 0, and a Gaussian
    # with their moments would see a positive part several times too large.
    pos = [arr.dg * adoption_probability(arr.dg, arr.kind, arr.a, arr.b, jnp)] if adopt else []
    noise_sd = evaluation_sd(arr.kind, arr.a, arr.b, jnp)
    # One matrix product gives Σw·θ (Σw·θ², Σw·max(θ, 0)) and Σw (the column of ones).
    rhs = jnp.concatenate([dgc] + ([dgc**2] if use_var else []) + pos + [jnp.ones((s, 1), dgc.dtype)], axis=1)

    def functional(mean, var):  # the decision functional (see `config`), moment form
        if adopt:
            return adopt_moment(mean, jnp.sqrt(var), noise_sd, jnp)
        return mean + kappa * jnp.sqrt(var) if use_var else mean

    util0 = pos[0].mean(0) if adopt else functional(mu0, var0)
    g0_null = _best_value(arr.feas_now, util0 - arr.cost_now)

    def heavy(coefs):  # the [Mb, S] part: weights, their products with the draws, Σw²
        coef_a, coef_b, shift = coefs
        ll = coef_a[:, None] * tm.u + coef_b[:, None] * tm.v - shift[:, None]
        # The barrier keeps w materialised once: without it XLA rewrites w·w as exp(2·ll)
        # and runs a second exponential pass for the ESS.
        w = jax.lax.optimization_barrier(jnp.exp(jnp.minimum(ll, 60.0)))
        return w @ rhs, (w * w).sum(1)

    def post(y, raw, sw2):  # [Mb]-sized work: updated beliefs, next state, G0(s^{m,Y})
        sw = raw[:, -1]
        ess = sw**2 / sw2
        mom = raw[:, :-1] / sw[:, None]
        mean_is = mu0 + mom[:, :ncol]
        var_is = jnp.maximum(mom[:, ncol:2 * ncol] - mom[:, :ncol] ** 2, 0.0) if use_var else 0.0

        mean_g, var_g = _gaussian_update(tm, arr, y)
        collapsed = (ess < collapse_ess) & (tm.gauss | tm.binom)
        mean = jnp.where(collapsed[:, None], mean_g, mean_is)
        var = jnp.where(collapsed[:, None], var_g, var_is) if use_var else jnp.zeros_like(mean)

        eye = jnp.eye(mean.shape[0], dtype=bool)
        mean_t, var_t = jax.vmap(functools.partial(_after_move, rule), in_axes=(0, 0, 0, None))(mean, var, eye, j_now)
        moves = _adopts(tm, arr, y, adopt)
        if adopt:
            # the exact positive part where the draws hold the update, its moment form where
            # the weights collapsed; after a move the rule gives only moments, so the moment
            # form there is scaled by exact/moment before the move (exact for rules that
            # scale the gains, as both shipped rules do)
            nxt = 2 * ncol if use_var else ncol
            moment = functional(mean, var)
            exact = jnp.where(collapsed[:, None], moment, mom[:, nxt:nxt + ncol])
            skew = jnp.where(moment > 1e-12, exact / jnp.maximum(moment, 1e-12), 1.0)
            util = jnp.where(moves[:, None], functional(mean_t, var_t) * skew, exact)
        else:
            util = functional(jnp.where(moves[:, None], mean_t, mean), jnp.where(moves[:, None], var_t, var))
        val = jnp.where(arr.feas_next, util - arr.cost_next, -jnp.inf)
        g = jnp.maximum(0.0, val.max(axis=1))
        return g, ess, collapsed.astype(jnp.float32)

    def run_block(plan):  # `block` outcomes: small work vectorized, heavy work in cache-sized chunks
        y, coef_a, coef_b, shift = jax.vmap(functools.partial(_simulate, tm, arr))(plan)
        raw, sw2 = jax.lax.map(heavy, (coef_a, coef_b, shift), batch_size=batch)
        return jax.vmap(post)(y, raw, sw2)

    plan = tuple(x.reshape(num_outcomes // block, block) for x in (idx, eps_all, u_all))
    g, ess, collapsed = (x.reshape(num_outcomes, -1) for x in jax.lax.map(run_block, plan))  # [K, Mb]
    cvu = g.mean(0) - g0_null
    se = g.std(0, ddof=1) / math.sqrt(num_outcomes)
    return cvu, se, ess.mean(0), ess.min(0), collapsed.mean(0), g0_null, util0


_lookahead_jit = jax.jit(
    _lookahead, static_argnames=("num_outcomes", "batch", "block", "use_var", "rule", "n_cap", "adopt"))


class SecondStepArrays(NamedTuple):
    """What a two-step look-ahead needs beyond `LookaheadArrays` (padded to the same bucket).

    Attributes:
        obs_gain: [Mb] the candidate whose gain each candidate's experiment observes (itself
            for an adaptation, the observed adaptation for a diagnosis; −1: not a gain).
        feas_next2, cost_next2: [Mb, Mb, Mb] feasibility and priced cost of c in the state
            after m and then m' ran (indexed [m, m', c]).
    """

    obs_gain: jax.Array
    feas_next2: jax.Array
    cost_next2: jax.Array


def second_step_arrays(problem: Problem, bucket: int = 8) -> SecondStepArrays:
    """Pad the problem's two-step description to `bucket_size` and move it to the device."""
    if problem.feas_next2 is None:
        raise InputError("problem", "built for a one-step look-ahead",
                         "a Problem built with lookahead_depth=2")
    m, mb = problem.size, bucket_size(problem.size, bucket)
    owner = {int(col): i for i, col in enumerate(problem.gain_col) if col >= 0}
    obs_gain = np.full(mb, -1, np.int32)
    obs_gain[:m] = [owner.get(int(col), -1) for col in problem.obs_col]
    feas = np.zeros((mb, mb, mb), bool)
    feas[:m, :m, :m] = problem.feas_next2
    cost = np.zeros((mb, mb, mb), np.float32)
    cost[:m, :m, :m] = problem.cost_next2
    return SecondStepArrays(jnp.asarray(obs_gain), jnp.asarray(feas), jnp.asarray(cost))


def _best_value(feasible, values):
    """max(0, max over the feasible candidates of `values`): the stop is always available."""
    return jnp.maximum(0.0, jnp.max(jnp.where(feasible, values, -jnp.inf)))


def _two_step(rng_key, arr: LookaheadArrays, second: SecondStepArrays, j_now, collapse_ess, kappa, *,
              num_outcomes: int, batch: int, block: int, inner_outcomes: int, inner_batch: int,
              inner_block: int, inner_draws: int, use_var: bool, rule, n_cap: int, adopt: bool = False):
    """CVU with two decisions ahead: E_Y[G1(s^{m,Y})] − G1(s^∅), where G1(s) is the value of
    acting once more in s and then once again, max(0, max_c U0(c | s) + E[G0(s^{c,·})]).

    The first step is the one-step look-ahead's: the same simulated outcomes and importance
    weights (its result also gives G1(s^∅)). Each next state s^{m,Y_j} is then carried by
    `inner_draws` draws: a systematic resample under its weights, or, where they collapsed,
    a fixed subsample moved by the moment-matched update (each gain column shifted and
    scaled to the updated mean and variance). After a simulated move the draws are mapped
    to the transition rule's moments the same way (exact for rules that scale the gains),
    the deployed J becomes J + ΔJ_m, and every paired evaluation's control arm follows it.
    The one-step look-ahead then runs on that state with `inner_outcomes` outcomes (one key
    for all states: common random numbers).
    """
    one = functools.partial(_lookahead, collapse_ess=collapse_ess, kappa=kappa, use_var=use_var, rule=rule,
                            n_cap=n_cap, adopt=adopt)
    cvu1, _, ess, ess_min, col, g0_1, util0 = one(rng_key, arr, j_now, num_outcomes=num_outcomes, batch=batch,
                                                  block=block)
    g1_null = _best_value(arr.feas_now, util0 - arr.cost_now + cvu1 + g0_1)
    s, mb = arr.dg.shape
    tm = _terms(arr, n_cap)
    idx, eps_all, u_all = _outcome_plan(rng_key, s, num_outcomes)
    k_resample, k_inner = jax.random.split(jax.random.fold_in(rng_key, 2))
    offsets = jax.random.uniform(k_resample, (num_outcomes,))
    sub = jnp.arange(inner_draws) * (s // inner_draws)
    grid = jnp.arange(inner_draws, dtype=jnp.float32)
    rows = jnp.arange(mb)
    observes_gain = second.obs_gain >= 0

    def g1_next(m, w, moved, mean_g, var_g, offset):  # G1(s^{m,Y}) for one row m
        sw = w.sum()
        collapsed = (sw**2 / (w * w).sum() < collapse_ess) & (tm.gauss[m] | tm.binom[m])
        pick = jnp.minimum(jnp.searchsorted(jnp.cumsum(w) / sw, (offset + grid) / inner_draws), s - 1)
        scale_g = jnp.where(tm.var0 > 1e-12, jnp.sqrt(var_g / jnp.maximum(tm.var0, 1e-12)), 0.0)
        dg = jnp.where(collapsed, mean_g + tm.dgc[sub] * scale_g, arr.dg[pick])
        theta = jnp.where(collapsed, arr.theta_obs[:, sub], arr.theta_obs[:, pick])
        mean, var = dg.mean(0), dg.var(0)
        own = mean[m]
        mean_t, var_t = _after_move(rule, mean, var, rows == m, j_now)
        scale_t = jnp.where(var > 1e-12, jnp.sqrt(var_t / jnp.maximum(var, 1e-12)), 0.0)
        dg = jnp.where(moved, mean_t + (dg - mean) * scale_t, dg)
        theta = jnp.where(observes_gain[:, None], dg[:, jnp.maximum(second.obs_gain, 0)].T, theta)
        j_next = jnp.where(moved, j_now + own, j_now)
        inner = arr._replace(
            dg=dg, theta_obs=theta, b=jnp.where(tm.binom, jnp.clip(arr.b + j_next - j_now, 0.0, 1.0), arr.b),
            feas_now=arr.feas_next[m], cost_now=arr.cost_next[m],
            feas_next=second.feas_next2[m], cost_next=second.cost_next2[m])
        cvu, _, _, _, _, g0, util = one(k_inner, inner, j_next, num_outcomes=inner_outcomes, batch=inner_batch,
                                        block=inner_block)
        return _best_value(inner.feas_now, util - inner.cost_now + cvu + g0)

    def per_outcome(plan):  # every row's next state for one simulated outcome
        j, eps, u_j, offset = plan
        y, coef_a, coef_b, shift = _simulate(tm, arr, (j, eps, u_j))
        w = jnp.exp(jnp.minimum(coef_a[:, None] * tm.u + coef_b[:, None] * tm.v - shift[:, None], 60.0))
        mean_g, var_g = _gaussian_update(tm, arr, y)
        moved = _adopts(tm, arr, y, adopt)
        return jax.vmap(g1_next, in_axes=(0, 0, 0, 0, 0, None))(rows, w, moved, mean_g, var_g, offset)

    g = jax.lax.map(per_outcome, (idx, eps_all, u_all, offsets))  # [K, Mb]
    cvu = g.mean(0) - g1_null
    se = g.std(0, ddof=1) / math.sqrt(num_outcomes)
    return cvu, se, ess, ess_min, col, g1_null


_two_step_jit = jax.jit(
    _two_step, static_argnames=("num_outcomes", "batch", "block", "inner_outcomes", "inner_batch", "inner_block",
                                "inner_draws", "use_var", "rule", "n_cap", "adopt"))


def chunk_outcomes(num_outcomes: int, mb: int, s: int, chunk_bytes: int) -> int:
    """Outcomes per chunk: the largest divisor of K whose [chunk, Mb, S] float32 weights fit
    `chunk_bytes` (a divisor, so `lax.map` compiles no second body for a remainder)."""
    cap = int(max(1, min(num_outcomes, chunk_bytes // max(1, mb * s * 4))))
    return max(d for d in range(1, cap + 1) if num_outcomes % d == 0)


def block_outcomes(num_outcomes: int, batch: int, target: int = 64) -> int:
    """Outcomes per block of vectorized small work: a multiple of `batch` dividing K,
    at most max(batch, target)."""
    q = num_outcomes // batch
    best = max(d for d in range(1, q + 1) if q % d == 0 and batch * d <= max(batch, target))
    return batch * best


def lookahead(problem: Problem, config: DecideConfig, rule, arrays: LookaheadArrays | None = None
              ) -> LookaheadResult:
    """CVU of every candidate of `problem` (zeros at the terminal round).

    With `config.lookahead_depth` 2 the CVU looks two decisions ahead (see `_two_step`) and
    `g0_null` is G1(s^∅), the value of the two decisions from s_t.
    """
    m = problem.size
    if config.terminal:
        z = np.zeros(m)
        return LookaheadResult(z, z.copy(), np.full(m, np.nan), np.full(m, np.nan), z.copy(), math.nan)
    arr = lookahead_arrays(problem, config.bucket) if arrays is None else arrays
    mb, s = arr.dg.shape[1], arr.dg.shape[0]
    use_var = config.utility != "mean"
    per_weight = 2 if use_var else 1
    batch = chunk_outcomes(config.cvu_samples, mb, s, config.chunk_bytes // per_weight)
    args = (jax.random.key(config.seed), arr)
    scalars = (jnp.float32(problem.j_now), jnp.float32(config.collapse_ess),
               jnp.float32(utility_constant(config.utility, config.utility_level)))
    kw = {"num_outcomes": config.cvu_samples, "batch": batch, "block": block_outcomes(config.cvu_samples, batch),
          "use_var": use_var, "rule": rule, "n_cap": binomial_cap(problem), "adopt": config.utility == "adopt"}
    if config.lookahead_depth == 1:
        out = _lookahead_jit(*args, *scalars, **kw)
    else:
        inner_draws = min(config.inner_draws, s)
        # every row's inner look-ahead runs at once (vmap): a chunk's budget is shared by the rows
        inner_batch = chunk_outcomes(config.inner_samples, mb, inner_draws, config.chunk_bytes // per_weight // mb)
        out = _two_step_jit(*args, second_step_arrays(problem, config.bucket), *scalars, **kw,
                            inner_outcomes=config.inner_samples, inner_batch=inner_batch,
                            inner_block=block_outcomes(config.inner_samples, inner_batch), inner_draws=inner_draws)
    cvu, se, ess, ess_min, col, g0 = (np.asarray(x, dtype=np.float64) for x in out[:6])
    return LookaheadResult(cvu[:m], se[:m], ess[:m], ess_min[:m], col[:m], float(g0))
