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
from jax.scipy.special import ndtri

from bayes_s2r.compiling import LazyJit
from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.problem import Problem
from bayes_s2r.decision.transition import repeat_share
from bayes_s2r.decision.utility import Utility, evaluation_sd, shows_improvement
from bayes_s2r.errors import InputError
from bayes_s2r.outcomes import (
    likelihood_coefficients,
    likelihood_statistics,
    log_choose_table,
    moment_observation,
    simulate_params,
)

__all__ = [
    "BaseAction",
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


class LookaheadArrays(NamedTuple):
    """The look-ahead's inputs, padded to a bucket of `Mb` candidates (float32 on device).

    Attributes:
        gains: [S, Mb] draws of each candidate's gain (zeros for non-adaptations and padding).
        observed: [Mb, S] draws of the quantity each candidate's experiment observes.
        kind, a, b: [Mb] the outcome models' `params()` (kind 0: observes nothing).
        is_adapt: [Mb] the candidate is an adaptation (the transition rule applies).
        feas_now, cost_now: [Mb] feasible set and priced costs at s_t.
        feas_next, cost_next: [Mb, Mb] the same in the state after row m ran.
        valid: [Mb] real (not padded) candidates.
    """

    gains: jax.Array
    observed: jax.Array
    kind: jax.Array
    a: jax.Array
    b: jax.Array
    is_adapt: jax.Array
    feas_now: jax.Array
    cost_now: jax.Array
    feas_next: jax.Array
    cost_next: jax.Array
    valid: jax.Array


class BaseAction(NamedTuple):
    """What the rollout's base policy would do now, and the Monte-Carlo error of each
    candidate's Q against it.

    Attributes:
        index: the candidate it runs (or pays for: a probe, a pilot); None: it stops.
        se_versus: [M] standard error of E[V(s^m)] − E[V(s^index)], paired over scenarios
            (of E[V(s^m)] alone when the base policy stops).
        se_alone: [M] standard error of E[V(s^m)] (Q(m) against the stop's score).
    """

    index: int | None
    se_versus: np.ndarray
    se_alone: np.ndarray


class LookaheadResult(NamedTuple):
    """Per-candidate look-ahead results (NumPy, length M).

    Attributes:
        cvu: E_Y[G0(s^{m,Y})] − G0(s^∅).
        cvu_se: Monte-Carlo standard error of `cvu` (sd of G0(s^{m,Y_j}) over j / √K).
        ess: mean effective sample size of the importance weights over outcomes.
        ess_min: smallest effective sample size over outcomes.
        collapsed: share of outcomes that used the moment-matched Gaussian update.
        g0_null: G0(s^∅).
        base: the rollout's base policy's own choice now (`BaseAction`); None for G0.
    """

    cvu: np.ndarray
    cvu_se: np.ndarray
    ess: np.ndarray
    ess_min: np.ndarray
    collapsed: np.ndarray
    g0_null: float
    base: BaseAction | None = None


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

    gains = np.zeros((s, mb), np.float32)
    adapt = problem.gain_col >= 0
    gains[:, :m][:, adapt] = problem.draws[:, problem.gain_col[adapt]]
    observed = np.zeros((mb, s), np.float32)
    seen = problem.obs_col >= 0
    observed[:m][seen] = (problem.draws[:, problem.obs_col[seen]] * problem.obs_sign[seen]).T
    feas_next = np.zeros((mb, mb), bool)
    feas_next[:m, :m] = problem.feas_next
    cost_next = np.zeros((mb, mb), np.float32)
    cost_next[:m, :m] = problem.cost_next
    return LookaheadArrays(
        gains=jnp.asarray(gains), observed=jnp.asarray(observed),
        kind=jnp.asarray(pad(problem.kind.astype(np.int32))),
        a=jnp.asarray(pad(problem.a.astype(np.float32))),
        b=jnp.asarray(pad(problem.b.astype(np.float32))),
        is_adapt=jnp.asarray(pad(problem.is_adapt)), feas_now=jnp.asarray(pad(problem.feasible)),
        cost_now=jnp.asarray(pad(problem.c_lambda.astype(np.float32))),
        feas_next=jnp.asarray(feas_next), cost_next=jnp.asarray(cost_next),
        valid=jnp.asarray(pad(np.ones(m, bool))),
    )


# ---- init: the outcomes' random numbers and what every outcome reuses ----


def outcome_plan(rng_key, num_draws: int, num_outcomes: int):
    """Draw indices [K], standard normals [K] and uniforms [K], shared by every candidate
    (common random numbers).

    One call to the PRNG (each call site costs compile time on a CPU); the three streams
    are transforms of independent uniforms.
    """
    uni = jax.random.uniform(rng_key, (3, num_outcomes), minval=1e-7, maxval=1.0 - 1e-7)
    idx = jnp.minimum((uni[0] * num_draws).astype(jnp.int32), num_draws - 1)
    return idx, ndtri(uni[1]), uni[2]


def _outcomes(rng_key, arr: LookaheadArrays, num_outcomes: int, n_cap: int):
    idx, normal, uniform = outcome_plan(rng_key, arr.gains.shape[0], num_outcomes)
    theta = arr.observed[:, idx].T  # [K, Mb]
    sim = jax.vmap(simulate_params, in_axes=(0, 0, 0, None, None, None, None))
    return idx, sim(normal, uniform, theta, arr.kind, arr.a, arr.b, log_choose_table(arr.a, n_cap))


draw_outcomes = LazyJit(_outcomes, static_argnames=("num_outcomes", "n_cap"))
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


class DrawMoments(NamedTuple):
    """What every simulated outcome of a state reuses: the outcome models' likelihood
    statistics over the draws (`likelihood_statistics`) and the draws' moments."""

    stat_u: jax.Array  # [Mb, S] U(θ_s) of each candidate's observation
    stat_v: jax.Array  # [Mb, S] V(θ_s)
    log_choose: jax.Array  # [Mb, n_cap + 1] the binomial normalisers
    gain_mean: jax.Array  # [Mb]
    gain_dev: jax.Array  # [S, Mb] the gain draws minus their mean
    gain_var: jax.Array  # [Mb]
    obs_mean: jax.Array  # [Mb] mean of each observed quantity
    obs_var: jax.Array  # [Mb]
    obs_gain_cov: jax.Array  # [Mb (observer m), Mb (gain c)]


def draw_moments(arr: LookaheadArrays, n_cap: int) -> DrawMoments:
    """`DrawMoments` of the arrays' draws."""
    gain_mean = arr.gains.mean(0)
    gain_dev = arr.gains - gain_mean
    obs_mean = arr.observed.mean(1)
    obs_dev = arr.observed - obs_mean[:, None]
    u, v = likelihood_statistics(arr.observed, arr.kind, arr.a, arr.b)
    return DrawMoments(
        stat_u=u, stat_v=v, log_choose=log_choose_table(arr.a, n_cap),
        gain_mean=gain_mean, gain_dev=gain_dev, gain_var=(gain_dev**2).mean(0),
        obs_mean=obs_mean, obs_var=(obs_dev**2).mean(1), obs_gain_cov=obs_dev @ gain_dev / arr.gains.shape[0],
    )


# ---- step: one simulated outcome per candidate, and the belief it leads to ----


def simulate_outcome(moments: DrawMoments, arr: LookaheadArrays, plan):
    """One simulated outcome y [Mb] per candidate from the plan's shared random numbers
    (draw j, a normal, a uniform), and the coefficients of its log-weights over the draws."""
    j, normal, uniform = plan
    y = simulate_params(normal, uniform, arr.observed[:, j], arr.kind, arr.a, arr.b, moments.log_choose)
    coef_a, coef_b = likelihood_coefficients(y, arr.kind, arr.a)
    # Log-weights relative to the draw that generated y: no max pass is needed, since
    # ll_s − ll_j ≤ ε²/2 (Gaussian) or n·KL(y/n ‖ p_j) (binomial), small for any y drawn
    # from p(·|θ_j); w_j = 1 keeps Σw ≥ 1. The clamp only guards the exponent.
    shift = coef_a * moments.stat_u[:, j] + coef_b * moments.stat_v[:, j]
    return y, coef_a, coef_b, shift


def importance_weights(moments: DrawMoments, coef_a, coef_b, shift):
    """w [Mb, S] ∝ p(y_m | θ_s) for every candidate's outcome (see `simulate_outcome`)."""
    log_w = coef_a[:, None] * moments.stat_u + coef_b[:, None] * moments.stat_v - shift[:, None]
    return jnp.exp(jnp.minimum(log_w, 60.0))


def informative(arr: LookaheadArrays):
    """[Mb] the candidate's outcome model measures a gain (Gaussian or paired binomial)."""
    return (arr.kind == 1) | (arr.kind == 2)


def gaussian_update(moments: DrawMoments, arr: LookaheadArrays, y):
    """Moment-matched update of every row's observation: condition N(mean, cov) on θ̂ ~ N(θ_obs, R)
    (`moment_observation`). Returns the gains' updated means and variances [Mb (observer), Mb]."""
    theta_hat, r = moment_observation(y, arr.kind, arr.a, arr.b)
    k_gain = jnp.where(informative(arr)[:, None], moments.obs_gain_cov / (moments.obs_var + r)[:, None], 0.0)
    return (moments.gain_mean + k_gain * (theta_hat - moments.obs_mean)[:, None],
            jnp.maximum(moments.gain_var - k_gain * moments.obs_gain_cov, 0.0))


def collapses(ess, arr: LookaheadArrays, collapse_ess):
    """Where the importance weights are too few to carry the update (an informative outcome
    with an effective sample size below `collapse_ess`)."""
    return (ess < collapse_ess) & informative(arr)


def moves(utility: Utility, arr: LookaheadArrays, y):
    """Whether the deployed policy changes: an adaptation, kept (under "adopt") only when its
    evaluation shows an improvement."""
    return arr.is_adapt & utility.keeps(shows_improvement(y, arr.kind, arr.a, arr.b, jnp))


def after_move(rule, mean, var, is_m, j_now):
    """The gains' moments once the adaptation marked by `is_m` is deployed: the transition
    rule for every candidate, and `repeat_share` of it for a repeat of m from π^m."""
    mean_t, var_t = rule.apply(mean, var, jnp.sum(jnp.where(is_m, mean, 0.0)), j_now)
    share = repeat_share(rule)
    if share == 1.0:
        return mean_t, var_t
    return jnp.where(is_m, share * mean_t, mean_t), jnp.where(is_m, share**2 * var_t, var_t)


def best_value(feasible, values):
    """max(0, max over the feasible candidates of `values`): the stop is always available."""
    return jnp.maximum(0.0, jnp.max(jnp.where(feasible, values, -jnp.inf)))


# ---- the one-step look-ahead ----


def _lookahead(rng_key, arr: LookaheadArrays, j_now, collapse_ess, *, num_outcomes: int, batch: int, block: int,
               utility: Utility, rule, n_cap: int):
    """(cvu, se, ess, ess_min, collapsed, g0_null, util0) over the bucket; see the module docstring."""
    num_draws = arr.gains.shape[0]
    moments = draw_moments(arr, n_cap)
    ncol = moments.gain_dev.shape[1]
    spread = utility.uses_spread
    # "adopt" takes E[ΔJ·P(adopt | ΔJ)] over the (reweighted) draws themselves, as U0 does:
    # near J = 1 the gains are bounded by the headroom with a long tail below 0, and a
    # Gaussian with their moments would see a positive part several times too large.
    kept_draws = [utility.of_draws(arr.gains, arr.kind, arr.a, arr.b, jnp)] if utility.exact_on_draws else []
    noise_sd = evaluation_sd(arr.kind, arr.a, arr.b, jnp)
    # One matrix product gives Σw·θ (Σw·θ², Σw·θ·P(adopt | θ)) and Σw (the column of ones).
    rhs = jnp.concatenate([moments.gain_dev] + ([moments.gain_dev**2] if spread else []) + kept_draws
                          + [jnp.ones((num_draws, 1), moments.gain_dev.dtype)], axis=1)

    def functional(mean, var):  # the decision functional in moment form
        return utility.of_moments(mean, jnp.sqrt(var), noise_sd, jnp)

    util0 = kept_draws[0].mean(0) if utility.exact_on_draws else functional(moments.gain_mean, moments.gain_var)
    g0_null = best_value(arr.feas_now, util0 - arr.cost_now)

    def reweigh(coefs):  # the [Mb, S] part: weights, their products with the draws, Σw²
        # The barrier keeps w materialised once: without it XLA rewrites w·w as exp(2·ll)
        # and runs a second exponential pass for the ESS.
        w = jax.lax.optimization_barrier(importance_weights(moments, *coefs))
        return w @ rhs, (w * w).sum(1)

    def next_state_value(y, raw, sw2):  # [Mb]-sized work: updated beliefs, next state, G0(s^{m,Y})
        sw = raw[:, -1]
        ess = sw**2 / sw2
        mom = raw[:, :-1] / sw[:, None]
        mean_is = moments.gain_mean + mom[:, :ncol]
        var_is = jnp.maximum(mom[:, ncol:2 * ncol] - mom[:, :ncol] ** 2, 0.0) if spread else 0.0

        mean_g, var_g = gaussian_update(moments, arr, y)
        collapsed = collapses(ess, arr, collapse_ess)
        mean = jnp.where(collapsed[:, None], mean_g, mean_is)
        var = jnp.where(collapsed[:, None], var_g, var_is) if spread else jnp.zeros_like(mean)

        eye = jnp.eye(mean.shape[0], dtype=bool)
        mean_t, var_t = jax.vmap(functools.partial(after_move, rule), in_axes=(0, 0, 0, None))(mean, var, eye, j_now)
        moved = moves(utility, arr, y)[:, None]
        if utility.exact_on_draws:
            # the exact value where the draws hold the update, its moment form where the
            # weights collapsed; after a move the rule gives only moments, so the moment
            # form there is scaled by exact/moment before the move (exact for rules that
            # scale the gains, as both shipped rules do)
            first = 2 * ncol if spread else ncol
            moment = functional(mean, var)
            exact = jnp.where(collapsed[:, None], moment, mom[:, first:first + ncol])
            skew = jnp.where(moment > 1e-12, exact / jnp.maximum(moment, 1e-12), 1.0)
            util = jnp.where(moved, functional(mean_t, var_t) * skew, exact)
        else:
            util = functional(jnp.where(moved, mean_t, mean), jnp.where(moved, var_t, var))
        val = jnp.where(arr.feas_next, util - arr.cost_next, -jnp.inf)
        return jnp.maximum(0.0, val.max(axis=1)), ess, collapsed.astype(jnp.float32)

    def run_block(plan):  # `block` outcomes: small work vectorized, the reweighting in cache-sized chunks
        y, coef_a, coef_b, shift = jax.vmap(functools.partial(simulate_outcome, moments, arr))(plan)
        raw, sw2 = jax.lax.map(reweigh, (coef_a, coef_b, shift), batch_size=batch)
        return jax.vmap(next_state_value)(y, raw, sw2)

    plan = tuple(x.reshape(num_outcomes // block, block) for x in outcome_plan(rng_key, num_draws, num_outcomes))
    g, ess, collapsed = (x.reshape(num_outcomes, -1) for x in jax.lax.map(run_block, plan))  # [K, Mb]
    cvu = g.mean(0) - g0_null
    se = g.std(0, ddof=1) / math.sqrt(num_outcomes)
    return cvu, se, ess.mean(0), ess.min(0), collapsed.mean(0), g0_null, util0


_lookahead_jit = LazyJit(_lookahead, static_argnames=("num_outcomes", "batch", "block", "utility", "rule", "n_cap"))


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


def _two_step(rng_key, arr: LookaheadArrays, second: SecondStepArrays, j_now, collapse_ess, *,
              num_outcomes: int, batch: int, block: int, inner_outcomes: int, inner_batch: int,
              inner_block: int, inner_draws: int, utility: Utility, rule, n_cap: int):
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
    one = functools.partial(_lookahead, collapse_ess=collapse_ess, utility=utility, rule=rule, n_cap=n_cap)
    cvu1, _, ess, ess_min, col, g0_1, util0 = one(rng_key, arr, j_now, num_outcomes=num_outcomes, batch=batch,
                                                  block=block)
    g1_null = best_value(arr.feas_now, util0 - arr.cost_now + cvu1 + g0_1)
    num_draws, mb = arr.gains.shape
    moments = draw_moments(arr, n_cap)
    k_resample, k_inner = jax.random.split(jax.random.fold_in(rng_key, 2))
    offsets = jax.random.uniform(k_resample, (num_outcomes,))
    sub = jnp.arange(inner_draws) * (num_draws // inner_draws)
    grid = jnp.arange(inner_draws, dtype=jnp.float32)
    rows = jnp.arange(mb)
    observes_gain = second.obs_gain >= 0
    measures = informative(arr)

    def next_state_draws(m, w, moved, mean_g, var_g, offset):
        """The draws carrying s^{m,Y}: gains [inner_draws, Mb], observed [Mb, inner_draws], and J."""
        sw = w.sum()
        collapsed = (sw**2 / (w * w).sum() < collapse_ess) & measures[m]
        pick = jnp.minimum(jnp.searchsorted(jnp.cumsum(w) / sw, (offset + grid) / inner_draws), num_draws - 1)
        scale_g = jnp.where(moments.gain_var > 1e-12, jnp.sqrt(var_g / jnp.maximum(moments.gain_var, 1e-12)), 0.0)
        gains = jnp.where(collapsed, mean_g + moments.gain_dev[sub] * scale_g, arr.gains[pick])
        observed = jnp.where(collapsed, arr.observed[:, sub], arr.observed[:, pick])
        mean, var = gains.mean(0), gains.var(0)
        mean_t, var_t = after_move(rule, mean, var, rows == m, j_now)
        scale_t = jnp.where(var > 1e-12, jnp.sqrt(var_t / jnp.maximum(var, 1e-12)), 0.0)
        gains = jnp.where(moved, mean_t + (gains - mean) * scale_t, gains)
        observed = jnp.where(observes_gain[:, None], gains[:, jnp.maximum(second.obs_gain, 0)].T, observed)
        return gains, observed, jnp.where(moved, j_now + mean[m], j_now)

    def g1_next(m, w, moved, mean_g, var_g, offset):  # G1(s^{m,Y}) for one row m
        gains, observed, j_next = next_state_draws(m, w, moved, mean_g, var_g, offset)
        inner = arr._replace(
            gains=gains, observed=observed,
            b=jnp.where(arr.kind == 2, jnp.clip(arr.b + j_next - j_now, 0.0, 1.0), arr.b),
            feas_now=arr.feas_next[m], cost_now=arr.cost_next[m],
            feas_next=second.feas_next2[m], cost_next=second.cost_next2[m])
        cvu, _, _, _, _, g0, util = one(k_inner, inner, j_next, num_outcomes=inner_outcomes, batch=inner_batch,
                                        block=inner_block)
        return best_value(inner.feas_now, util - inner.cost_now + cvu + g0)

    def per_outcome(plan):  # every row's next state for one simulated outcome
        j, normal, uniform, offset = plan
        y, coef_a, coef_b, shift = simulate_outcome(moments, arr, (j, normal, uniform))
        w = importance_weights(moments, coef_a, coef_b, shift)
        mean_g, var_g = gaussian_update(moments, arr, y)
        return jax.vmap(g1_next, in_axes=(0, 0, 0, 0, 0, None))(rows, w, moves(utility, arr, y), mean_g, var_g,
                                                                 offset)

    g = jax.lax.map(per_outcome, (*outcome_plan(rng_key, num_draws, num_outcomes), offsets))  # [K, Mb]
    cvu = g.mean(0) - g1_null
    se = g.std(0, ddof=1) / math.sqrt(num_outcomes)
    return cvu, se, ess, ess_min, col, g1_null


_two_step_jit = LazyJit(
    _two_step, static_argnames=("num_outcomes", "batch", "block", "inner_outcomes", "inner_batch", "inner_block",
                                "inner_draws", "utility", "rule", "n_cap"))


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
    num_draws, mb = arr.gains.shape
    utility = config.functional
    per_weight = 2 if utility.uses_spread else 1
    batch = chunk_outcomes(config.cvu_samples, mb, num_draws, config.chunk_bytes // per_weight)
    args = (jax.random.key(config.seed), arr)
    scalars = (jnp.float32(problem.j_now), jnp.float32(config.collapse_ess))
    kw = {"num_outcomes": config.cvu_samples, "batch": batch, "block": block_outcomes(config.cvu_samples, batch),
          "utility": utility, "rule": rule, "n_cap": binomial_cap(problem)}
    if config.lookahead_depth == 1:
        out = _lookahead_jit(*args, *scalars, **kw)
    else:
        inner_draws = min(config.inner_draws, num_draws)
        # every row's inner look-ahead runs at once (vmap): a chunk's budget is shared by the rows
        inner_batch = chunk_outcomes(config.inner_samples, mb, inner_draws, config.chunk_bytes // per_weight // mb)
        out = _two_step_jit(*args, second_step_arrays(problem, config.bucket), *scalars, **kw,
                            inner_outcomes=config.inner_samples, inner_batch=inner_batch,
                            inner_block=block_outcomes(config.inner_samples, inner_batch), inner_draws=inner_draws)
    cvu, se, ess, ess_min, col, g0 = (np.asarray(x, dtype=np.float64) for x in out[:6])
    return LookaheadResult(cvu[:m], se[:m], ess[:m], ess_min[:m], col[:m], float(g0))
