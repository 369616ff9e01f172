"""Policy rollout: the value of the rest of the campaign as the look-ahead's continuation.

DESIGN §2 lets a planner estimate V_{t+1}, the value of the decisions left after this one,
in place of the one-step G0. Here a base policy runs the `horizon` decisions left in
scenarios drawn from the posterior, and V is its mean return (policy rollout, Bertsekas):

    CVU(m) = E_j[V_base(s^{m,Y_{m,j}}; θ_j)] − E_j[V_base(s^∅; θ_j)],   Q(m) = U0(m) + β·CVU(m).

Acting with argmax Q and following the base policy afterwards is the rollout policy, which
under the model does no worse than the base policy. With estimated values it can: where
candidates are close, the argmax follows the Monte-Carlo noise. With `DecideConfig.rollout_margin`
k > 0, `decide` makes the base policy's own choice now unless another beats it by k standard
errors of the paired difference (a fortified rollout; `BaseAction` carries that choice and the
errors). The stop scores −β·V_base(s^∅), so the
rule acts exactly when U0(m) + β·E[V(s^{m,Y})] > 0 for some m.

Scenarios. Scenario j is the j-th outcome of the one-step look-ahead: the joint posterior
draw θ_j of every gain and m's simulated outcome Y_{m,j} ~ p(·|θ_j), from the same random
numbers (common to every m). Since (θ_j, Y_{m,j}) is a joint draw, θ_j given Y_{m,j} is a draw
of the updated belief, so the base policy's return in world θ_j, averaged over j, estimates
E_Y[V(s^{m,Y})] without a second set of draws. The base policy decides on the belief the
team would hold: the posterior reweighted by Y_{m,j} (`lookahead`'s importance weights, the
moment-matched update where they collapse). A safety probe's simulated unsafe count opens
its candidate's gate in the scenarios where it would pass the gate.

Base policy: Weitzman's index rule on that belief. Each decision tries the untried feasible
adaptation with the largest reservation value z (E[(ΔJ − z)^+] = C_λ for a gain of the belief's
mean and sd: `index.gaussian_reservation`, or with `DecideConfig.base_index` "draws"
`index.shape_reservation`, the shape of the posterior's draws, under which a candidate that is
rarely a large fix has a higher index than a Gaussian of its mean and sd) and stops once no z
is above 0. The index is optimal
while further tries can follow; the last try (the last decision, or a budget that affords no
further try after any of them) is chosen by what it keeps net of its price, as it is all
that try is worth. A candidate shut by the
safety gate competes through its probe while two decisions are left and the budget affords
both the probe and the try, with the probe's price divided by its chance to open the gate
added to its own; picking it runs the probe, which opens the gate or not. A try is
made only while what its noisy evaluation will keep, E[ΔJ·P(adopt | ΔJ)] in moment form,
pays for it: the index alone would go on trying where a gain too small to be seen is left.
Each try's evaluation updates the believed gains through their covariance (a Gaussian
update), so what a failed try shows about its siblings stops the base policy from trying
them blind. A try is kept when its
evaluation (true gain plus the evaluation's noise) shows an improvement, as in the campaign;
then J, the true gains and the believed gains move by the transition rule. The budget is
deducted, prices follow scarcity, and an unaffordable, gated or tried candidate is skipped.

Pilots. A diagnosis that observes an adaptation's gain (a pilot: a cheaper, noisier look at
what a try would show) competes by its knowledge gradient: the expected value of the best
single try once the pilot's outcome is known, E_Z[V(μ + u·Z, b − ΔC_p)] − V(μ, b), with
u = Σ[:, t]/√(Σ_tt + σ_p²) the pilot's move of the believed gains, V the best affordable
try's E[ΔJ·P(adopt | ΔJ)] − price (0: stop) and the expectation by Gauss–Hermite nodes. The
walk runs the pilot with the largest gradient net of its price, while a decision is left to
act on what it shows; its measurement updates the beliefs as a try's does and keeps nothing.
So "pilot, pilot, then the one affordable try" is a path the base policy can take, and
piloting is worth what the tries it steers are worth. A set without pilots is walked as
before (the pilot step is compiled out).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.belief.risk import clopper_pearson_ucb
from bayes_s2r.compiling import LazyJit
from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.index import (
    ReservationShape,
    gaussian_reservation,
    reservation_shape,
    shape_kept,
    shape_reservation,
)
from bayes_s2r.decision.lookahead import (
    BaseAction,
    LookaheadArrays,
    LookaheadResult,
    binomial_cap,
    chunk_outcomes,
    collapses,
    draw_moments,
    gaussian_update,
    importance_weights,
    lookahead_arrays,
    outcome_plan,
    simulate_outcome,
)
from bayes_s2r.decision.problem import Problem
from bayes_s2r.decision.utility import (
    Utility,
    adopt_moment,
    evaluation_noise,
    evaluation_sd,
)
from bayes_s2r.vocab import Budget, Candidate, ResourceWeights

__all__ = ["RolloutArrays", "base_policy_value", "pilot_targets", "probe_openings", "rollout_arrays",
           "rollout_lookahead"]


class RolloutArrays(NamedTuple):
    """What the base policy needs beyond `LookaheadArrays` (candidate axis padded to Mb).

    Attributes:
        cost: [Mb, 3] resource use ΔC of each candidate.
        budget: [3] b_t; lam0 [3], reference [3], scarcity: λ(b) = λ0·(reference/b)^scarcity.
        base_ok: [Mb] adaptations the base policy may try (safe, not done, real).
        gated: [Mb] adaptations shut only by the execution-safety gate.
        probe_target: [Mb] the candidate whose gate each safety probe may open (−1: none).
        opens: [K, Mb] whether probe m's simulated outcome in scenario j passes the gate.
        probe_of: [Mb] a feasible safety probe of each gated candidate (−1: none).
        open_rate: [Mb] the chance that probe to open the gate (its share of the scenarios).
        pilot_target: [Mb] the adaptation whose gain each feasible pilot observes (−1: none).
    """

    cost: jax.Array
    budget: jax.Array
    lam0: jax.Array
    reference: jax.Array
    scarcity: jax.Array
    base_ok: jax.Array
    gated: jax.Array
    probe_target: jax.Array
    opens: jax.Array
    probe_of: jax.Array
    open_rate: jax.Array
    pilot_target: jax.Array

    @property
    def has_pilots(self) -> bool:
        return bool(np.any(np.asarray(self.pilot_target) >= 0))


#: Gauss–Hermite nodes and weights for E[f(Z)], Z ~ N(0, 1), in a pilot's knowledge gradient.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(12)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def pilot_targets(problem: Problem) -> np.ndarray:
    """[M] for each feasible diagnosis that observes an adaptation's gain, that adaptation (−1: none)."""
    target = np.full(problem.size, -1, np.int32)
    adapt = np.flatnonzero(problem.is_adapt)
    for p in np.flatnonzero(~problem.is_adapt & problem.feasible & (problem.obs_col >= 0) & (problem.obs_sign > 0)):
        hit = adapt[problem.gain_col[adapt] == problem.obs_col[p]]
        if hit.size:
            target[p] = hit[0]
    return target


def probe_openings(candidates: tuple[Candidate, ...], risk: Any, config: DecideConfig,
                   num_outcomes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(probe_target [M], opens [K, M]) for the safety probes of `candidates`.

    For probe m of candidate c (n executions): the unsafe rate of c is drawn from the risk
    belief's posterior of c (`RiskBelief.mixtures`; none known: the probe can open nothing),
    its unsafe count y ~ Binomial(n, p), and the probe opens the gate when the exact bound
    on c's executions plus the probe's passes: UCB_{1−δ}(x + y, N + n) ≤ α_exec.
    """
    names = [c.name for c in candidates]
    target = np.full(len(names), -1, np.int32)
    opens = np.zeros((num_outcomes, len(names)), bool)
    rng = np.random.default_rng([seed, 4099])
    mixtures = getattr(risk, "mixtures", {}) or {}
    for i, c in enumerate(candidates):
        name = c.observed_safety
        if name is None or c.outcome is None or name not in mixtures:
            continue
        j = names.index(name)
        target[i] = j
        n = int(c.outcome.params()[1])
        x, big_n = int(getattr(risk, "unsafe", {}).get(name, 0)), int(getattr(risk, "executions", {}).get(name, 0))
        # the largest unsafe count of the probe that still passes (−1: none does)
        passing = [y for y in range(n + 1)
                   if clopper_pearson_ucb(x + y, big_n + n, config.delta) <= config.alpha_exec]
        most = max(passing) if passing else -1
        w, a, b = (np.asarray(v, np.float64) for v in mixtures[name])
        comp = rng.choice(len(w), size=num_outcomes, p=w / w.sum())
        p = rng.beta(a[comp], b[comp])
        opens[:, i] = rng.binomial(n, p) <= most
    return target, opens


def rollout_arrays(problem: Problem, candidates: tuple[Candidate, ...], budget: Budget, weights: ResourceWeights,
                   reference: Budget | None, risk: Any, config: DecideConfig, mb: int) -> RolloutArrays:
    """The base policy's inputs, padded to `mb` candidates."""
    m = problem.size

    def pad(x, fill=0):
        out = np.full((mb,) + x.shape[1:], fill, dtype=x.dtype)
        out[:m] = x
        return out

    adapt = problem.is_adapt & ~problem.done
    target, opens = probe_openings(candidates, risk, config, config.cvu_samples, config.seed)
    opens_pad = np.zeros((config.cvu_samples, mb), bool)
    opens_pad[:, :m] = opens
    probe_of = np.full(mb, -1, np.int32)
    open_rate = np.zeros(mb, np.float32)
    for p in np.flatnonzero((target >= 0) & problem.feasible):
        probe_of[target[p]], open_rate[target[p]] = p, opens[:, p].mean()
    scarcity = float(weights.scarcity) if reference is not None else 0.0
    ref = reference.as_array() if reference is not None else np.ones(3)
    return RolloutArrays(
        cost=jnp.asarray(pad(problem.cost.astype(np.float32))),
        budget=jnp.asarray(budget.as_array(), jnp.float32),
        lam0=jnp.asarray(weights.base(), jnp.float32), reference=jnp.asarray(ref, jnp.float32),
        scarcity=jnp.float32(scarcity),
        base_ok=jnp.asarray(pad(adapt & problem.safe)), gated=jnp.asarray(pad(adapt & ~problem.safe)),
        probe_target=jnp.asarray(pad(target, -1)), opens=jnp.asarray(opens_pad),
        probe_of=jnp.asarray(probe_of), open_rate=jnp.asarray(open_rate),
        pilot_target=jnp.asarray(pad(pilot_targets(problem), -1)),
    )


def _prices(ro: RolloutArrays, budget):
    """λ(b)·ΔC per candidate; a resource a candidate does not use costs it nothing."""
    ratio = jnp.where(ro.reference > 0, ro.reference / jnp.maximum(budget, 0.0), 1.0)
    lam = ro.lam0 * jnp.where(ro.scarcity > 0, ratio**ro.scarcity, 1.0)
    return jnp.where(ro.cost > 0, lam[None, :] * ro.cost, 0.0).sum(-1)


class _Walk(NamedTuple):
    """One scenario's state as the base policy walks through it."""

    j: jax.Array  # the deployed policy's true J
    theta: jax.Array  # [Mb] true gains at that J
    mean: jax.Array  # [Mb] believed gains
    cov: jax.Array  # [Mb, Mb] their covariance
    budget: jax.Array
    avail: jax.Array  # [Mb] may still be tried
    gated: jax.Array  # [Mb] shut, with a safety probe not yet run
    alive: jax.Array  # the base policy has not stopped
    value: jax.Array  # realized gains minus priced costs so far


def _keep_gain(rule, walk: _Walk, pick, keep):
    """Deploy the picked try where it was kept: J, truths and beliefs follow the rule."""
    g, own = walk.theta[pick], walk.mean[pick]
    var = jnp.diagonal(walk.cov)
    theta_t, _ = rule.apply(walk.theta, jnp.zeros_like(walk.theta), g, walk.j)
    mean_t, var_t = rule.apply(walk.mean, var, own, walk.j)
    scale = jnp.where(var > 1e-12, jnp.sqrt(var_t / jnp.maximum(var, 1e-12)), 0.0)
    return walk._replace(
        j=jnp.where(keep, walk.j + g, walk.j), theta=jnp.where(keep, theta_t, walk.theta),
        mean=jnp.where(keep, mean_t, walk.mean),
        cov=jnp.where(keep, walk.cov * scale[:, None] * scale[None, :], walk.cov))


def _learn(walk: _Walk, pick, measured, noise_var, tried):
    """Condition the believed gains on a try's evaluation (Gaussian, through their covariance):
    what one try shows about the others is what the base policy acts on next."""
    k = walk.cov[:, pick] / (walk.cov[pick, pick] + noise_var)
    mean = walk.mean + k * (measured - walk.mean[pick])
    cov = walk.cov - k[:, None] * walk.cov[pick][None, :]
    return walk._replace(mean=jnp.where(tried, mean, walk.mean), cov=jnp.where(tried, cov, walk.cov))


def _affordable(ro: RolloutArrays, budget):
    """[Mb] candidates whose resource use fits in `budget`."""
    return jnp.all(ro.cost <= budget[None, :] + 1e-9, axis=1)


def _try_options(ro: RolloutArrays, w: _Walk, budget, left):
    """(ok, can_probe, reach): tries open and affordable with `budget`, gated candidates whose
    probe and try together are, with the two decisions they take among the `left`, and the
    price each option carries (a gated one's adds its probe's price spread over the probe's
    chance to open the gate)."""
    probe = jnp.maximum(ro.probe_of, 0)
    price = _prices(ro, budget)
    ok = w.avail & _affordable(ro, budget)
    can_probe = (w.gated & (ro.probe_of >= 0) & (left >= 2)
                 & jnp.all(ro.cost + ro.cost[probe] <= budget[None, :] + 1e-9, axis=1))
    reach = price + jnp.where(ok, 0.0, price[probe] / jnp.maximum(ro.open_rate, 1e-3))
    return ok, can_probe, reach


def _kept(shape: ReservationShape | None, mean, sd, eval_sd):
    """What a try's noisy evaluation keeps, E[X·Φ(X/σe)], for beliefs of `mean` and `sd`:
    Gaussian (`shape` None) or with `shape`'s standardized draws."""
    return adopt_moment(mean, sd, eval_sd, jnp) if shape is None else shape_kept(shape, mean, sd, eval_sd)


def _pilot_gradient(ro: RolloutArrays, shape: ReservationShape | None, w: _Walk, left, eval_sd):
    """[Mb] each pilot's knowledge gradient net of its price (−inf where there is no pilot to run):
    how much the best single try after it beats the best try now, with `left` decisions left,
    each try valued on the base policy's own scale (`_kept`); `eval_sd` [Mb] is each
    candidate's evaluation noise at the walk's J."""
    rows = jnp.arange(w.avail.shape[0])
    var = jnp.diagonal(w.cov)

    def best_try(mean, var, budget, left):
        ok, can_probe, reach = _try_options(ro, w, budget, left)
        value = _kept(shape, mean, jnp.sqrt(jnp.maximum(var, 0.0)), eval_sd) - reach
        return jnp.max(jnp.where(ok | can_probe, value, 0.0))

    def after_pilot(p):  # the best try's expected value once pilot p's outcome is known
        t = jnp.maximum(ro.pilot_target[p], 0)
        u = w.cov[:, t] / jnp.sqrt(w.cov[t, t] + eval_sd[p] ** 2 + 1e-12)
        budget = w.budget - ro.cost[p]
        after = jax.vmap(lambda z: best_try(w.mean + u * z, var - u**2, budget, left - 1))(
            jnp.asarray(_NODES, jnp.float32))
        return after @ jnp.asarray(_WEIGHTS, jnp.float32)

    runnable = (ro.pilot_target >= 0) & _affordable(ro, w.budget) & w.avail[jnp.maximum(ro.pilot_target, 0)]
    net = jax.vmap(after_pilot)(rows) - best_try(w.mean, var, w.budget, left) - _prices(ro, w.budget)
    return jnp.where(runnable, net, -jnp.inf)


def _step(rule, ro: RolloutArrays, arr: LookaheadArrays, shape: ReservationShape | None, opens, w: _Walk, eps, left,
          *, utility: Utility, pilots: bool):
    """One decision of the index policy with `left` decisions left (this one included): the
    state after it and what it ran or paid for (−1: the stop). `eps` is the standard normal
    of its evaluation's noise."""
    rows = jnp.arange(w.avail.shape[0])
    probe = jnp.maximum(ro.probe_of, 0)
    target = jnp.maximum(ro.pilot_target, 0)
    price = _prices(ro, w.budget)
    ok, can_probe, reach = _try_options(ro, w, w.budget, left)
    sd = jnp.sqrt(jnp.maximum(jnp.diagonal(w.cov), 0.0))
    options = ok | can_probe
    # a try is made only if what its noisy evaluation will keep pays for it (and the probe
    # that opens it): the index ranks, the adoption-aware value decides whether to go on
    eval_sd = evaluation_sd(arr.kind, arr.a, w.j, jnp)
    kept = _kept(shape, w.mean, sd, eval_sd) - reach
    z = gaussian_reservation(w.mean, sd, reach) if shape is None else shape_reservation(shape, w.mean, sd, reach)
    # the index ranks tries while another can follow; the last one is worth what it keeps
    after = jax.vmap(lambda b: _affordable(ro, b))(w.budget[None, :] - ro.cost)  # [k, j]: j fits after k
    follows = jnp.any(after & options[None, :] & (rows[:, None] != rows[None, :]), axis=1)
    last = (left == 1) | ~jnp.any(options & follows)
    score = jnp.where(options & (kept > 0), jnp.where(last, kept, z), -jnp.inf)
    pick = jnp.argmax(score)
    if pilots:
        net = jnp.where(left > 1, _pilot_gradient(ro, shape, w, left, eval_sd), -jnp.inf)
        pilot = jnp.argmax(net)
        piloting = w.alive & (net[pilot] > 0)
    else:
        pilot, piloting = jnp.int32(0), jnp.bool_(False)
    go = w.alive & (piloting | (score[pick] > 0))
    probing = go & ~piloting & ~ok[pick]
    trying = go & ~piloting & ~probing
    seen = jnp.where(piloting, target[pilot], pick)  # the adaptation whose gain is measured
    g = w.theta[seen]
    # the evaluation (the try's, or the pilot's): the measured gain with its sampling noise
    noise_sd, threshold = evaluation_noise(g, jnp.where(piloting, arr.kind[pilot], arr.kind[pick]),
                                           jnp.where(piloting, arr.a[pilot], arr.a[pick]), w.j, jnp)
    measured = g + noise_sd * eps
    keep = trying & utility.keeps(measured > threshold)
    w = _learn(w, seen, measured, noise_sd**2 + 1e-6, trying | piloting)
    w = _keep_gain(rule, w, pick, keep)
    spent = jnp.where(piloting, pilot, jnp.where(probing, probe[pick], pick))
    here = rows == pick
    tried = ~piloting & here
    return w._replace(
        budget=jnp.where(go, w.budget - ro.cost[spent], w.budget),
        avail=jnp.where(tried, jnp.where(probing, opens[probe[pick]], w.avail & ~trying), w.avail),
        gated=w.gated & ~(tried & probing), alive=go,
        value=w.value + jnp.where(go, jnp.where(keep, g, 0.0) - price[spent], 0.0)), jnp.where(go, spent, -1)


def base_policy_value(rule, ro: RolloutArrays, arr: LookaheadArrays, shape: ReservationShape | None, walk: _Walk,
                      noise, opens, decisions=None, more=0, *, utility: Utility, pilots: bool = False):
    """The index policy's return in one scenario, and its first action (the candidate it runs
    or pays for, −1: the stop): `noise` [H] standard normals, one per decision; `opens` [Mb]
    whether each probe would open its gate in this scenario; `decisions` (≤ H, may be traced;
    default H) how many decisions it makes; `more` (may be traced) how many it counts on after
    those (each step sees `decisions` − i + `more` left). A
    candidate's reservation value and kept gain are those of its believed mean and sd with
    `shape`'s standardized draws (the posterior's shape now), or of a Gaussian (`shape` None).

    A gated candidate with a probe competes with the probe's price spread over its chance
    to open the gate; picking it runs the probe, which opens the gate or not. With `pilots`,
    a pilot whose knowledge gradient pays for it is run first, while a decision is left after it.
    """
    step = functools.partial(_step, rule, ro, arr, shape, opens, utility=utility, pilots=pilots)
    decisions = noise.shape[0] if decisions is None else decisions

    def one(i, carry):
        w, first = carry
        w, action = step(w, noise[i], decisions - i + more)
        return w, jnp.where(i == 0, action, first)

    # a traced number of decisions is a loop of that length: one program for every horizon
    walk, first = jax.lax.fori_loop(0, decisions, one, (walk, jnp.int32(-1)))
    return walk.value, first


def _horizon_bucket(horizon: int) -> int:
    """The decisions a rollout program has room for: 4, or the power of two at or above `horizon`."""
    return max(4, 1 << (horizon - 1).bit_length())


def _rollout(rng_key, arr: LookaheadArrays, ro: RolloutArrays, j_now, collapse_ess, horizon, *, num_outcomes: int,
             batch: int, room: int, rule, n_cap: int, utility: Utility, pilots: bool, index_shape: bool):
    num_draws, mb = arr.gains.shape
    idx, eps_all, u_all = outcome_plan(rng_key, num_draws, num_outcomes)
    # scenario k's noise is what a [num_outcomes, horizon] draw puts in its row k (its elements
    # k·horizon + j of a flat draw, with counter-based keys), padded to `room` decisions
    flat = jax.random.normal(jax.random.fold_in(rng_key, 3), ((num_outcomes + 1) * room,))
    noise_all = jax.vmap(lambda k: jax.lax.dynamic_slice(flat, (k * horizon,), (room,)))(jnp.arange(num_outcomes))
    moments = draw_moments(arr, n_cap)
    dev = moments.gain_dev
    rhs = jnp.concatenate([dev, dev**2, jnp.ones((num_draws, 1), dev.dtype)], axis=1)
    rows = jnp.arange(mb)
    shape = reservation_shape(arr.gains) if index_shape else None
    walk_value = functools.partial(base_policy_value, rule, ro, arr, shape, decisions=horizon, utility=utility,
                                   pilots=pilots)
    # the draws' covariance of the gains; after a first step, its correlations with the
    # updated variances (the importance weights give each next state's variances only)
    cov0 = dev.T @ dev / num_draws
    sd0 = jnp.sqrt(jnp.diagonal(cov0))
    corr0 = jnp.where(jnp.outer(sd0, sd0) > 1e-12, cov0 / jnp.maximum(jnp.outer(sd0, sd0), 1e-12), 0.0)
    corr0 = jnp.where(jnp.eye(mb, dtype=bool), 1.0, corr0)

    def scenario(plan):
        j, eps, u_j, opens, noise, eps_control = plan
        y, coef_a, coef_b, shift = simulate_outcome(moments, arr, (j, eps, u_j))
        w = importance_weights(moments, coef_a, coef_b, shift)
        raw, sw2 = w @ rhs, (w * w).sum(1)
        sw = raw[:, -1]
        ess = sw**2 / sw2
        mom = raw[:, :-1] / sw[:, None]
        mean_is, var_is = moments.gain_mean + mom[:, :mb], jnp.maximum(mom[:, mb:] - mom[:, :mb] ** 2, 0.0)
        mean_g, var_g = gaussian_update(moments, arr, y)
        collapsed = collapses(ess, arr, collapse_ess)
        mean = jnp.where(collapsed[:, None], mean_g, mean_is)
        var = jnp.where(collapsed[:, None], var_g, var_is)
        theta = arr.gains[j]
        # m's paired evaluation: its treated count y against a control arm drawn around b·n
        # (the one-step look-ahead compares with b·n itself), kept when it has more successes
        n = jnp.maximum(arr.a, 1.0)
        control = arr.b * n + jnp.sqrt(n * arr.b * (1 - arr.b)) * eps_control
        shows = jnp.where(arr.kind == 2, y - control > 0.5, jnp.where(arr.kind == 1, y > 0, False))
        kept = arr.is_adapt & utility.keeps(shows)

        def start(m):  # the state once m has run in this scenario; m ≥ Mb: nothing has (the null)
            none = m >= mb
            c = jnp.minimum(m, mb - 1)
            probed = (rows == ro.probe_target[c]) & ~none
            sd_m = jnp.sqrt(var[c])
            walk = _Walk(j=j_now, theta=theta, mean=jnp.where(none, moments.gain_mean, mean[c]),
                         cov=jnp.where(none, cov0, corr0 * sd_m[:, None] * sd_m[None, :]),
                         budget=ro.budget - jnp.where(none, 0.0, ro.cost[c]),
                         avail=jnp.where(none, ro.base_ok, (ro.base_ok | (ro.gated & probed & opens[c])) & (rows != m)),
                         gated=ro.gated & ~probed, alive=jnp.bool_(True), value=jnp.float32(0.0))
            return _keep_gain(rule, walk, c, kept[c] & ~none)

        # the candidates' walks, the null's, and (row Mb + 1) the base policy's own walk now, with
        # this decision among those left, in one batch: the walk is compiled once. That last
        # walk's first action depends on the belief now, not on the scenario's draws.
        values, first = jax.vmap(lambda m: walk_value(start(m), noise, opens, more=(m > mb).astype(jnp.int32)))(
            jnp.arange(mb + 2))
        return values[:mb], values[mb], first[mb + 1], ess, collapsed.astype(jnp.float32)

    control_all = jax.random.normal(jax.random.fold_in(rng_key, 5), (num_outcomes,))
    plan = (idx, eps_all, u_all, ro.opens, noise_all, control_all)
    v, v_null, first, ess, collapsed = jax.lax.map(scenario, plan, batch_size=batch)  # [K, Mb], [K], [K]
    diff = v - v_null[:, None]
    cvu = diff.mean(0)
    se = diff.std(0, ddof=1) / math.sqrt(num_outcomes)
    # the base policy's own choice now (the same in every scenario), and the paired error of
    # each candidate's V against that choice's (against 0 for the stop)
    base = first[0]
    versus = v - jnp.where(base >= 0, v[:, jnp.maximum(base, 0)], 0.0)[:, None]
    se_base = versus.std(0, ddof=1) / math.sqrt(num_outcomes)
    se_alone = v.std(0, ddof=1) / math.sqrt(num_outcomes)
    return cvu, se, ess.mean(0), ess.min(0), collapsed.mean(0), v_null.mean(), base, se_base, se_alone


_rollout_jit = LazyJit(_rollout, static_argnames=("num_outcomes", "batch", "room", "rule", "n_cap", "utility",
                                                     "pilots", "index_shape"))


def rollout_lookahead(problem: Problem, candidates: tuple[Candidate, ...], budget: Budget,
                      weights: ResourceWeights, reference: Budget | None, risk: Any, config: DecideConfig,
                      rule) -> LookaheadResult:
    """CVU of every candidate with the rollout continuation; `g0_null` is V_base(s^∅)."""
    m = problem.size
    if config.terminal or config.horizon == 0:
        z = np.zeros(m)
        return LookaheadResult(z, z.copy(), np.full(m, np.nan), np.full(m, np.nan), z.copy(), math.nan)
    arr = lookahead_arrays(problem, config.bucket)
    num_draws, mb = arr.gains.shape
    ro = rollout_arrays(problem, candidates, budget, weights, reference, risk, config, mb)
    batch = chunk_outcomes(config.cvu_samples, mb, num_draws, config.chunk_bytes)
    out = _rollout_jit(jax.random.key(config.seed), arr, ro, jnp.float32(problem.j_now),
                       jnp.float32(config.collapse_ess), jnp.int32(config.horizon), num_outcomes=config.cvu_samples,
                       batch=batch, room=_horizon_bucket(config.horizon), rule=rule, n_cap=binomial_cap(problem),
                       utility=config.functional, pilots=ro.has_pilots, index_shape=config.base_index == "draws")
    base = int(out[6])
    cvu, se, ess, ess_min, col, v_null, se_base, se_alone = (np.asarray(x, dtype=np.float64) for x in out[:6] + out[7:])
    return LookaheadResult(cvu[:m], se[:m], ess[:m], ess_min[:m], col[:m], float(v_null),
                           BaseAction(base if 0 <= base < m else None, se_base[:m], se_alone[:m]))
