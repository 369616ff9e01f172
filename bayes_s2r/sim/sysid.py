"""System identification: fit ξ to logged real trajectories by closed-loop replay.

The fitted parameters are the log-scales of pole mass, joint damping and actuator gear
(continuous, by gradient descent with Optax Adam through the differentiable `generalized`
pipeline) and the action latency (discrete, by profiling the loss over every latency).

Closed-loop replay: each real episode is re-simulated from its first observation with the
same policy and the same (known) excitation signal, and the simulated observations are
compared with the logged ones. Open-loop replay of the logged actions is useless on this
unstable system (float32 round-off alone diverges); closed loop keeps gradients bounded.

Uncertainty (Laplace): with SSE(θ) the sum of squared normalised residuals over N values and
σ̂² = SSE(θ̂)/N, the negative log-likelihood is SSE/(2σ̂²); its Hessian at θ̂ (central finite
differences of the exact gradient) gives the covariance of the log-scales. Residuals are
correlated in time, so these standard deviations are optimistic. The latency gets a discrete
posterior p(L) ∝ exp(−(SSE_L − SSE_min)/(2σ̂²)) under a flat prior.

A cross-entropy-method fallback (population evaluated through the vmapped rollouts) runs
when `method="cem"` or when the gradient fit returns a non-finite loss.
"""

from __future__ import annotations

import functools
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import SystemIdRecord
from bayes_s2r.sim.params import MAX_LATENCY, Params, stack_params
from bayes_s2r.sim.real import RealTrajectories
from bayes_s2r.sim.rollout import LinearPolicy, _episode, policy_id, simulate_batch
from bayes_s2r.sim.world import World

__all__ = ["FITTED", "SIConfig", "SIResult", "identify"]

#: The continuous parameters fitted on a log scale.
FITTED = ("mass_scale", "damping_scale", "gear_scale")


class SIConfig(NamedTuple):
    """Identification settings.

    Attributes:
        method: "gradient" (Adam through the pipeline) or "cem".
        iterations: Adam steps (or CEM generations).
        learning_rate: Adam step size on the log-scales.
        latencies: latencies profiled (whole control steps).
        population: CEM population per generation.
        elite: CEM elite size.
        fd_step: finite-difference step on the log-scales for the Hessian.
    """

    method: str = "gradient"
    iterations: int = 60
    learning_rate: float = 0.05
    latencies: tuple = tuple(range(MAX_LATENCY + 1))
    population: int = 32
    elite: int = 8
    fd_step: float = 0.02


class SIResult(NamedTuple):
    """Result of `identify`.

    Attributes:
        params: the identified ξ (fitted fields replaced in the sim world's ξ).
        mean: parameter -> estimate (scales and latency).
        sd: parameter -> standard deviation (delta method for the scales).
        cov_log: covariance of the log-scales, [3, 3].
        latency_probs: posterior over `latencies`, np.ndarray.
        loss: SSE at the estimate; sigma2: residual variance σ̂².
        method: the method that produced the estimate ("gradient" or "cem").
        sim_steps: simulated control steps used (a gradient step counts as 3).
        wall_s: measured wall-clock seconds.
    """

    params: Params
    mean: dict
    sd: dict
    cov_log: np.ndarray
    latency_probs: np.ndarray
    loss: float
    sigma2: float
    method: str
    sim_steps: int
    wall_s: float

    def record(self, candidate: str, trajectories: int, round: int = 0, policy: str | None = None):
        """The `SystemIdRecord` of this estimate."""
        est = {k: {"mean": float(self.mean[k]), "sd": float(self.sd[k])} for k in self.mean}
        return SystemIdRecord(candidate=candidate, estimates=est, trajectories=trajectories,
                              round=round, policy=policy)


def _with_scales(base: Params, log_scales, latency) -> Params:
    e = jnp.exp(log_scales)
    return base._replace(mass_scale=e[0], damping_scale=e[1], gear_scale=e[2], latency=latency, obs_noise=0.0)


@functools.partial(jax.jit, static_argnames=("env", "protocol"))
def _sse_and_grad(log_scales, latency, base, env, protocol, policy, obs, exc, mask, scale):
    """SSE of closed-loop replay and its gradient with respect to the log-scales."""

    def sse(ls):
        params = _with_scales(base, ls, latency)
        key = jax.random.key(0)

        def one(o, e):
            _, (sim_obs, *_rest) = _episode(env, protocol, policy, params, o[0, :2], o[0, 2:], key, e)
            return sim_obs

        sim_obs = jax.vmap(one)(obs, exc)
        r = (sim_obs - obs) / scale
        return jnp.sum(mask[..., None] * r**2)

    return jax.value_and_grad(sse)(log_scales)


def _prepare(data: RealTrajectories, world: World):
    obs = np.asarray(data.obs, np.float32)
    if obs.ndim != 3 or obs.shape[1] != world.protocol.horizon or obs.shape[2] != world.obs_size:
        raise InputError("data.obs", obs.shape, f"[K, {world.protocol.horizon}, {world.obs_size}]")
    alive = np.asarray(data.alive, bool)
    mask = np.concatenate([np.ones((obs.shape[0], 1), bool), alive[:, :-1]], axis=1).astype(np.float32)
    flat = obs[mask > 0]
    scale = np.maximum(flat.std(axis=0), 1e-3).astype(np.float32)
    return jnp.asarray(obs), jnp.asarray(data.excitation, jnp.float32), jnp.asarray(mask), jnp.asarray(scale)


def _replay_sse(world, policy, obs, exc, mask, scale, params_list):
    """SSE of replay for each ξ in `params_list`, all through the chunked rollouts."""
    k, m = obs.shape[0], len(params_list)
    params = stack_params([p for p in params_list for _ in range(k)])
    init = (jnp.tile(obs[:, 0, :2], (m, 1)), jnp.tile(obs[:, 0, 2:], (m, 1)))
    _, traj = simulate_batch(jax.random.key(0), world, policy, params, init=init,
                             excitation=jnp.tile(exc, (m, 1)), record=True)
    r = (np.asarray(traj.obs).reshape(m, k, *obs.shape[1:]) - np.asarray(obs)[None]) / np.asarray(scale)
    r = np.nan_to_num(r, nan=1e3, posinf=1e3, neginf=-1e3)
    return (np.asarray(mask)[None, ..., None] * r**2).sum(axis=(1, 2, 3))


def _point(base: Params, log_scales, latency) -> Params:
    e = np.exp(np.asarray(log_scales, np.float64))
    return base._replace(mass_scale=float(e[0]), damping_scale=float(e[1]), gear_scale=float(e[2]),
                         latency=float(latency), obs_noise=0.0)


def _check_config(config: SIConfig) -> SIConfig:
    if config.method not in ("gradient", "cem"):
        raise InputError("si.method", config.method, "'gradient' or 'cem'")
    if isinstance(config.iterations, bool) or not isinstance(config.iterations, int) or config.iterations < 1:
        raise InputError("si.iterations", config.iterations, "a whole number >= 1")
    lat = tuple(config.latencies)
    if not lat or any(not isinstance(x, int) or not 0 <= x <= MAX_LATENCY for x in lat):
        raise InputError("si.latencies", config.latencies, f"whole numbers in 0..{MAX_LATENCY}")
    if config.elite < 2 or config.elite > config.population:
        raise InputError("si.elite", config.elite, "between 2 and the population")
    return config


def identify(key: jax.Array, world: World, data: RealTrajectories, policy: LinearPolicy,
             config: SIConfig | None = None) -> SIResult:
    """Identify mass, damping and gear scales and the latency from logged real episodes.

    Args:
        key: PRNG key (used by the CEM fallback).
        world: the sim world; its ξ is the starting point and supplies the unfitted fields.
        data: `RealTrajectories` from `RealRobot.collect` (with excitation, ideally).
        policy: the policy that generated `data` (replayed in closed loop).
        config: `SIConfig`.

    Returns:
        `SIResult`; `.record(candidate, trajectories)` gives the `SystemIdRecord`.
    """
    config = _check_config(config or SIConfig())
    start = time.perf_counter()
    obs, exc, mask, scale = _prepare(data, world)
    k, horizon = obs.shape[0], obs.shape[1]
    base = world.params._replace(obs_noise=0.0)
    lats = tuple(config.latencies)
    theta = np.log(np.array([float(getattr(base, f)) for f in FITTED]))
    steps = 0

    def profile(theta):
        sse = _replay_sse(world, policy, obs, exc, mask, scale, [_point(base, theta, lat) for lat in lats])
        return sse

    prof = profile(theta)
    steps += len(lats) * k * horizon
    latency = lats[int(np.argmin(prof))]
    method = config.method
    grad_fn = functools.partial(_sse_and_grad, env=world.env, protocol=world.protocol, policy=policy,
                                obs=obs, exc=exc, mask=mask, scale=scale)
    base_j = Params(*(jnp.asarray(v, jnp.float32) for v in base))

    def fit_gradient(theta, latency):
        tx = optax.adam(config.learning_rate)
        th = jnp.asarray(theta, jnp.float32)
        state = tx.init(th)
        best = (np.inf, np.asarray(th))
        for _ in range(config.iterations):
            val, g = grad_fn(th, jnp.float32(latency), base_j)
            val = float(val)
            if np.isfinite(val) and val < best[0]:
                best = (val, np.asarray(th))
            if not np.all(np.isfinite(np.asarray(g))):
                break
            upd, state = tx.update(g, state, th)
            th = optax.apply_updates(th, upd)
        return best[1], best[0]

    def fit_cem(key, theta, latency):
        mu, sd = np.asarray(theta, np.float64), np.full(3, 0.3)
        best = (np.inf, mu)
        for _ in range(config.iterations):
            key, sub = jax.random.split(key)
            pop = mu + sd * np.asarray(jax.random.normal(sub, (config.population, 3)))
            sse = _replay_sse(world, policy, obs, exc, mask, scale, [_point(base, p, latency) for p in pop])
            order = np.argsort(sse)
            elite = pop[order[:config.elite]]
            if sse[order[0]] < best[0]:
                best = (float(sse[order[0]]), pop[order[0]])
            mu, sd = elite.mean(0), elite.std(0) + 1e-3
        return best[1], best[0], np.diag(sd**2)

    cem_cov = None
    for _ in range(2):  # fit, re-profile the latency at the fit, refit if it moved
        if method == "gradient":
            theta, loss = fit_gradient(theta, latency)
            steps += 3 * config.iterations * k * horizon
            if not np.isfinite(loss):
                method = "cem"
        if method == "cem":
            theta, loss, cem_cov = fit_cem(key, theta, latency)
            steps += config.iterations * config.population * k * horizon
        prof = profile(theta)
        steps += len(lats) * k * horizon
        new_latency = lats[int(np.argmin(prof))]
        if new_latency == latency:
            break
        latency = new_latency

    n_values = float(np.asarray(mask).sum()) * obs.shape[2]
    loss = float(prof[lats.index(latency)])
    sigma2 = max(loss / n_values, 1e-8)
    if method == "gradient":
        h = config.fd_step
        cols = []
        for j in range(3):
            e = np.zeros(3, np.float32)
            e[j] = h
            gp = np.asarray(grad_fn(jnp.asarray(theta + e, jnp.float32), jnp.float32(latency), base_j)[1])
            gm = np.asarray(grad_fn(jnp.asarray(theta - e, jnp.float32), jnp.float32(latency), base_j)[1])
            cols.append((gp - gm) / (2 * h))
        steps += 18 * k * horizon
        hess = 0.5 * (np.stack(cols, 1) + np.stack(cols, 1).T) / (2 * sigma2)
        w, v = np.linalg.eigh(hess)
        cov = (v / np.maximum(w, 1e-9)) @ v.T
    else:
        cov = cem_cov
    logits = -(prof - prof.min()) / (2 * sigma2)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    est = np.exp(theta)
    mean = {f: float(est[i]) for i, f in enumerate(FITTED)}
    sd = {f: float(est[i] * np.sqrt(max(cov[i, i], 0.0))) for i, f in enumerate(FITTED)}
    lat_arr = np.asarray(lats, float)
    mean["latency"] = float(latency)
    sd["latency"] = float(np.sqrt(max((probs * (lat_arr - (probs * lat_arr).sum()) ** 2).sum(), 0.0)))
    params = world.params._replace(**{f: mean[f] for f in FITTED}, latency=float(latency))
    return SIResult(params, mean, sd, np.asarray(cov), probs, loss, sigma2, method, int(steps),
                    time.perf_counter() - start)


def identify_record(result: SIResult, candidate: str, data: RealTrajectories, policy: LinearPolicy,
                    round: int = 0) -> SystemIdRecord:
    """Convenience: the record of `result` for `data` collected under `policy`."""
    return result.record(candidate, int(np.asarray(data.obs).shape[0]), round, policy_id(policy))
