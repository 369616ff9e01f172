"""System identification: fit ξ to logged real episodes by closed-loop replay, with a
calibrated posterior.

Fitted: the log-scales of link mass, joint damping and actuator gear (continuous: a
Levenberg–Marquardt fit on exact forward-mode Jacobians through the differentiable
`generalized` pipeline) and the action latency (discrete: the most likely latencies at the
start are each fitted, the rest scored at the best fit). It runs on every environment of
`ENVS` (cart-pole and reacher). A lab's own `sim.Task` is identified by
`bayes_s2r.sim.sysid_task` with the same fit and posterior (`_fit_posterior`).

Replay in segments (`bayes_s2r.sim.replay`): every logged episode is cut into segments of
`SIConfig.segment` steps; each is re-simulated in closed loop (same policy, same known
excitation) from its own first observation (plus, for the reacher, the target the
experimenter set), with the logged actions before it in the latency buffer, and its
simulated observations are compared with the logged ones. Open-loop replay of the logged
actions diverges on the unstable cart-pole; whole-episode closed-loop replay diverges from
episodes that fall early (a hidden latency): short segments keep every residual bounded.

Prior: a normal on each log-scale, centred at the sim's ξ with sd `SIConfig.prior_sd`, enters
the fit as a penalty (weighted by the noise level and the design effect below), so a scale
the data barely inform (the reacher's link mass) stays at a sensible value.

Uncertainty: residuals within an episode are correlated in time, so the Laplace covariance
σ̂²(JᵀJ)⁻¹ is overconfident (its 90% intervals covered the truth in 43–45% of synthetic
identifications; `benchmarks/bench_sysid.py`). Episodes are independent, so the data's
covariance of the log-scales is a delete-one-episode jackknife (each leave-one-out fit one
Gauss-Newton step from the estimate, δ_k = (A − A_k)⁻¹ s_k with A = JᵀJ, s_k = J_kᵀ r_k;
V = (K−1)/K Σ (δ_k − δ̄)(δ_k − δ̄)ᵀ), the posterior covariance is (V⁻¹ + I/prior_sd²)⁻¹, and
intervals use Student's t with K − 1 degrees of freedom. The cluster sandwich and the Laplace
covariance are kept in `SIResult.covariances` for comparison. The latency gets a discrete
posterior p(L) ∝ exp(−(loss_L − loss_min)/(2σ̂²·d)), σ̂² = SSE/N, with d ≥ 1 the median
jackknife-to-Laplace variance ratio (the same correction for correlated residuals).

A cross-entropy-method search (populations through one vmapped replay) runs when
`method="cem"` or when the gradient fit returns a non-finite loss.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import SystemIdRecord
from bayes_s2r.sim.params import Params
from bayes_s2r.sim.real import RealTrajectories
from bayes_s2r.sim.replay import residuals, segments, sse_population
from bayes_s2r.sim.rollout import LinearPolicy, _broadcast_policy, policy_id
from bayes_s2r.sim.si_fit import (
    COVARIANCES,
    FITTED,
    Coord,
    SIConfig,
    SIResult,
    _check_config,
    _fit_posterior,
    _latency_moments,
)
from bayes_s2r.sim.world import World

__all__ = ["COVARIANCES", "FITTED", "Coord", "SIConfig", "SIResult", "identify"]


def _prepare(data: RealTrajectories, world: World, segment: int):
    """Validated arrays of `data`, cut into replay segments; and the observation scale."""
    obs = np.asarray(data.obs, np.float32)
    horizon = world.protocol.horizon
    if obs.ndim != 3 or obs.shape[1] != horizon or obs.shape[2] != world.obs_size:
        raise InputError("data.obs", obs.shape, f"[K, {horizon}, {world.obs_size}]")
    k = obs.shape[0]
    if k < 2:
        raise InputError("data.obs", obs.shape, "at least 2 episodes (the spread is estimated across episodes)")
    shape = (k, horizon) + ((world.act_size,) if world.act_size > 1 else ())
    for name in ("excitation", "action"):
        if np.shape(getattr(data, name)) != shape:
            raise InputError(f"data.{name}", np.shape(getattr(data, name)), f"shape {shape}")
    setup = getattr(data, "setup", None)
    if world.env == "reacher":
        if setup is None or np.shape(setup) != (k, 2):
            raise InputError("data.setup", None if setup is None else np.shape(setup),
                             f"the targets' (x, y) positions, shape {(k, 2)}")
        setup = np.asarray(setup, np.float32)
    # an observation counts while the robot was still running at the step before it
    running = getattr(data, "running", None)
    running = np.asarray(data.alive if running is None else running, bool)
    if running.shape != (k, horizon):
        raise InputError("data.running", running.shape, f"shape {(k, horizon)}")
    mask = np.concatenate([np.ones((k, 1), bool), running[:, :-1]], axis=1).astype(np.float32)
    scale = np.maximum(obs[mask > 0].std(axis=0), 1e-3).astype(np.float32)
    segs = segments(world, obs, np.asarray(data.action, np.float32), np.asarray(data.excitation, np.float32),
                     mask, setup, min(segment, horizon))
    return segs, scale


def identify(key: jax.Array, world, *args, config: SIConfig | None = None, space=None, fit=None) -> SIResult:
    """Identify a simulator's parameters from logged real episodes.

    On a built-in `World`: mass, damping and gear scales and the latency, from
    `RealTrajectories` replayed in closed-loop segments. On a lab's own `sim.Task`: the
    continuous directions of `space` (and its latency), from `TaskData`, each episode replayed
    whole from its reset (see `bayes_s2r.sim.sysid_task.identify_task`, which this calls).

    Called as `identify(key, world, data, policy[, config])`, or on a task also as
    `identify(key, task, space, data, policy[, config])` (DESIGN's order).

    Args:
        key: PRNG key: draws the fit's starting point (`SIConfig.init_sd`) and the CEM
            populations. The same key gives the same answer.
        world: the sim world (its ξ is the prior centre and supplies the unfitted fields), or
            a `sim.Task`.
        data: `RealTrajectories` from `RealRobot.collect` (with excitation, ideally) for a
            world, `TaskData` for a task; at least 2 episodes.
        policy: the policy that generated `data` (replayed in closed loop on a world).
        config: `SIConfig`.
        space: the task's `ParamSpace` (a task only; by keyword, or third).
        fit: names of the directions fitted (a task only; default: every model direction).

    Returns:
        `SIResult`; `.interval(0.9)` gives calibrated intervals, `.to_dr()` a DR distribution
        around the posterior, `.record(candidate, trajectories)` the `SystemIdRecord`.
    """
    from bayes_s2r.sim.space import ParamSpace
    from bayes_s2r.sim.task import Task

    if isinstance(world, Task) and args and isinstance(args[0], ParamSpace):
        if space is not None:
            raise InputError("space", space, "the ParamSpace given once (it is also the third argument)")
        space, args = args[0], args[1:]
    if len(args) not in (2, 3) or (len(args) == 3 and config is not None):
        raise InputError("identify", f"{len(args)} arguments after the world",
                         "data, policy and at most one config: identify(key, world, data, policy[, config])")
    data, policy = args[:2]
    config = args[2] if len(args) == 3 else config
    if isinstance(world, Task):
        from bayes_s2r.sim.sysid_task import identify_task

        return identify_task(key, world, data, policy, config, space=space, fit=fit)
    if not isinstance(world, World):
        raise InputError("world", world, "a sim.World or a sim.Task")
    for name, v in (("space", space), ("fit", fit)):
        if v is not None:
            raise InputError(name, v, "None on a World (its fitted parameters are FITTED and the latency)")
    config = _check_config(config or SIConfig())
    if config.replay != "closed":
        raise InputError("si.replay", config.replay, "'closed' on a World (it replays closed-loop segments)")
    start = time.perf_counter()
    segs, scale = _prepare(data, world, config.segment)
    _broadcast_policy(policy, 1, world.act_size, world.obs_size)  # a policy of this world, or InputError
    k, replayed = segs[0].shape[0], int(np.prod(segs[-1].shape))  # episodes, replayed steps per pass
    base = world.params._replace(obs_noise=0.0)
    lats = tuple(config.latencies)
    k_start, k_cem = jax.random.split(key)
    center = np.log(np.array([float(getattr(base, f)) for f in FITTED]))
    theta0 = center + config.init_sd * np.asarray(jax.random.normal(k_start, (len(FITTED),)), np.float64)
    base_j = Params(*(jnp.asarray(v, jnp.float32) for v in base))
    pol = LinearPolicy(jnp.asarray(policy.weights, jnp.float32), jnp.asarray(policy.bias, jnp.float32))
    arrays = tuple(jnp.asarray(x) for x in (*segs, scale))
    passes = 0  # replays of the whole data set (a Jacobian evaluation counts as 4)

    def fn(theta, latency):
        nonlocal passes
        passes += 4
        return residuals(jnp.asarray(theta, jnp.float32), jnp.float32(latency), base_j, world.env, pol, *arrays,
                         backend=world.backend)

    def sse(thetas, latencies):
        nonlocal passes
        passes += len(latencies)
        out = sse_population(jnp.asarray(np.asarray(thetas), jnp.float32), jnp.asarray(latencies, jnp.float32),
                              base_j, world.env, pol, *arrays, backend=world.backend)
        return np.asarray(out, np.float64)

    n_values = float(segs[-1].sum()) * segs[5].shape[-1]
    res = _fit_posterior(k_cem, fn, sse, theta0, center, lats, config, n_values)
    est, cov = np.exp(res.theta), res.cov
    mean = {f: float(est[i]) for i, f in enumerate(FITTED)}
    sd = {f: float(est[i] * np.sqrt(max(cov[i, i], 0.0))) for i, f in enumerate(FITTED)}
    mean["latency"], sd["latency"] = _latency_moments(res, lats)
    params = world.params._replace(**{f: mean[f] for f in FITTED}, latency=float(res.latency))
    return SIResult(params, mean, sd, cov, res.probs, res.loss, res.sigma2, res.method, int(passes * replayed),
                    time.perf_counter() - start, res.covs, k - 1, lats, np.asarray(theta0))


def identify_record(result: SIResult, candidate: str, data: RealTrajectories, policy: LinearPolicy,
                    round: int = 0) -> SystemIdRecord:
    """Convenience: the record of `result` for `data` collected under `policy`."""
    return result.record(candidate, int(np.asarray(data.obs).shape[0]), round, policy_id(policy))
