"""Closed-loop replay of logged episodes in segments: the residuals system identification fits.

Each segment starts from a logged observation (plus, for the reacher, the target's joint
pose from the logged target position), with the logged actions before it in the latency
buffer, and runs the same policy with the same known excitation, without sensor noise. The
functions are jitted once per (environment, data shape); ξ and the latency are traced.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.compiling import LazyJit
from bayes_s2r.sim.params import MAX_LATENCY, Params
from bayes_s2r.sim.rollout import _control_step, _reacher_ik, _reacher_obs, _setup
from bayes_s2r.sim.world import World

__all__ = ["residuals", "segments", "sse_population", "with_scales"]


def with_scales(base: Params, log_scales, latency) -> Params:
    e = jnp.exp(log_scales)
    return base._replace(mass_scale=e[0], damping_scale=e[1], gear_scale=e[2], latency=latency, obs_noise=0.0)


def _replay_segment(env, backend, policy, params, q0, qd0, goal, buf0, exc):
    """Closed-loop replay of one segment from (q0, qd0) with the logged actions in the latency
    buffer; returns the observations the policy would see, [S, obs] (noise-free). Traceable and
    differentiable in ξ (`apply_params` scales by a mask)."""
    spec, sys, latency, state0 = _setup(env, backend, params, q0, qd0)
    bias = jnp.zeros(spec["obs_size"]).at[spec["bias_index"]].set(params.obs_bias)
    key = jax.random.key(0)  # obs_noise is 0 in the replay: the key draws nothing

    def step(carry, inputs):
        state, buf = carry
        t, e = inputs
        if env == "reacher":
            true_obs = _reacher_obs(state.q, state.qd, goal)
        else:
            true_obs = jnp.concatenate([state.q, state.qd])
        obs, _, buf, new, finite = _control_step(spec, sys, policy, params, latency, key, t, e,
                                                 true_obs, bias, buf, state)
        new = jax.tree.map(lambda n, o: jnp.where(finite, n, o), new, state)
        return (new, buf), obs

    _, obs = jax.lax.scan(step, (state0, buf0), (jnp.arange(exc.shape[0]), exc))
    return obs


@functools.partial(LazyJit, static_argnames=("env", "backend"))
def residuals(log_scales, latency, base, env, policy, q0, qd0, goal, buf0, exc, obs, mask, scale,
              backend="generalized"):
    """Per-episode normalised replay residuals [K, M·S·obs] and their Jacobian [K, M·S·obs, 3].

    Inputs carry [K episodes, M segments] leading axes; each segment is replayed on its own.
    """

    def resid(ls):
        params = with_scales(base, ls, latency)
        seg = lambda *a: _replay_segment(env, backend, policy, params, *a)
        sim_obs = jax.vmap(jax.vmap(seg))(q0, qd0, goal, buf0, exc)
        r = (mask[..., None] * (sim_obs - obs) / scale).reshape(obs.shape[0], -1)
        return r, r

    jac, r = jax.jacfwd(resid, has_aux=True)(log_scales)
    return r, jac


def segments(world: World, obs, action, exc, mask, setup, length: int):
    """Cut every episode into segments of `length` steps, each replayed from its first
    observation with the logged actions before it in the latency buffer."""
    k, horizon = obs.shape[:2]
    m = horizon // length
    starts = np.arange(m) * length
    cut = lambda x: x[:, :m * length].reshape((k, m, length) + x.shape[2:])
    first = obs[:, starts]  # [K, M, obs]
    if world.env == "reacher":
        ik = _reacher_ik(jnp.asarray(setup[:, 0]), jnp.asarray(setup[:, 1]))
        goal = np.stack([np.asarray(x) for x in ik], 1)[:, None].repeat(m, 1)  # [K, M, 2]
        tgt = setup[:, None].repeat(m, 1)
        q0 = np.concatenate([first[..., :2] + goal, tgt], -1)
        qd0 = np.concatenate([first[..., 2:], np.zeros_like(tgt)], -1)
    else:
        goal = np.zeros((k, m, 2), np.float32)
        q0, qd0 = first[..., :2], first[..., 2:]
    # the buffer before a segment's first step holds actions t0-1, t0-2, ... (zeros before t=0)
    pad = np.concatenate([np.zeros((k, MAX_LATENCY + 1) + action.shape[2:], np.float32), action], 1)
    lags = np.arange(1, MAX_LATENCY + 2)
    buf0 = pad[:, starts[:, None] - lags[None, :] + MAX_LATENCY + 1]  # [K, M, L+1, (act)]
    # a segment counts only while the robot ran; its first step is its own start (no residual)
    seg_mask = cut(mask).copy()
    seg_mask[:, :, 0] = 0.0
    return tuple(x.astype(np.float32) for x in (q0, qd0, goal, buf0, cut(exc), cut(obs), seg_mask))

@functools.partial(LazyJit, static_argnames=("env", "backend"))
def sse_population(log_scales, latencies, base, env, policy, q0, qd0, goal, buf0, exc, obs, mask, scale,
                   backend="generalized"):
    """Replay SSE of each (log-scales [P, 3], latency [P]) pair: [P]."""

    def sse(ls, lat):
        params = with_scales(base, ls, lat)
        seg = lambda *a: _replay_segment(env, backend, policy, params, *a)
        sim_obs = jax.vmap(jax.vmap(seg))(q0, qd0, goal, buf0, exc)
        r = mask[..., None] * (sim_obs - obs) / scale
        return jnp.sum(jnp.where(jnp.isfinite(r), r, 1e3) ** 2)

    return jax.lax.map(lambda x: sse(*x), (log_scales, latencies))
