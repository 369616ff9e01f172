"""Vectorized episodes: `jax.vmap` over environments, `jax.lax.scan` over time, jitted once.

One episode is a pure function of (policy, ξ, initial state, noise key, excitation). The
compiled batch functions take everything as traced arguments; only the environment name,
the protocol and the horizon are static, so each (world structure, batch shape) compiles
exactly once. `TRACE_COUNTS` counts how many times each function body was traced.

Per control step: observe (true state + Gaussian noise + pole-angle bias), act with the
policy (plus a known excitation signal, for identification), push the action through a
latency buffer, integrate `n_frames` physics steps, check the success and safety limits.
Once the pole passes `fall_limit` or the cart passes `rail_end` the state freezes, which
keeps the `generalized` pipeline away from the ±90° hinge limit where it returns NaN.
"""

from __future__ import annotations

import collections
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.errors import InputError
from bayes_s2r.sim.params import MAX_LATENCY, DRSpec, Params, broadcast_params, sample_params
from bayes_s2r.sim.world import ENVS, Protocol, World, _base_system, apply_params

__all__ = [
    "CHUNK",
    "TRACE_COUNTS",
    "EpisodeStats",
    "LinearPolicy",
    "Trajectory",
    "act",
    "policy_id",
    "rollout",
    "rollout_dr",
    "rollout_trajectories",
    "sample_init",
    "simulate_batch",
]

#: How many times each compiled function's Python body has been traced (a re-trace check).
TRACE_COUNTS: collections.Counter = collections.Counter()


class LinearPolicy(NamedTuple):
    """a = clip(weights · obs + bias, -1, 1). Leading axes, if any, are batch axes."""

    weights: jax.Array
    bias: jax.Array

    @classmethod
    def zeros(cls, obs_size: int = 4) -> LinearPolicy:
        return cls(jnp.zeros((obs_size,), jnp.float32), jnp.zeros((), jnp.float32))

    def flat(self) -> jax.Array:
        return jnp.concatenate([self.weights, self.bias[None]])

    @classmethod
    def from_flat(cls, theta: jax.Array) -> LinearPolicy:
        return cls(theta[..., :-1], theta[..., -1])


def act(policy: LinearPolicy, obs: jax.Array) -> jax.Array:
    """The policy's action in [-1, 1] for one observation."""
    return jnp.clip(jnp.dot(policy.weights, obs) + policy.bias, -1.0, 1.0)


def policy_id(policy: LinearPolicy, prefix: str = "linear") -> str:
    """A short stable label of a policy's parameters (for records)."""
    import hashlib

    theta = np.round(np.asarray(policy.flat(), dtype=np.float64), 6)
    return f"{prefix}-{hashlib.sha256(theta.tobytes()).hexdigest()[:10]}"


class EpisodeStats(NamedTuple):
    """Per-episode outcome (arrays with the batch shape).

    Attributes:
        success: stayed within angle_limit and rail_limit for the whole horizon.
        unsafe: the pole fell past fall_limit or the cart hit the rail end.
        fell: the pole fell past fall_limit.
        rail_hit: the cart passed rail_end.
        steps_alive: control steps before the first violation of the success limits.
        score: a smooth state-dependent score in [0, 1]: the mean over the horizon of
            alive × (1 − ½(angle/angle_limit)² − ½(x/rail_limit)²).
    """

    success: jax.Array
    unsafe: jax.Array
    fell: jax.Array
    rail_hit: jax.Array
    steps_alive: jax.Array
    score: jax.Array


class Trajectory(NamedTuple):
    """Recorded episodes: leading axes [batch, time].

    Attributes:
        obs: what the policy saw (noisy, biased), [B, T, obs].
        action: commanded action after excitation and clipping (before latency), [B, T].
        q, qd: true joint positions and velocities after each step, [B, T, q], [B, T, qd].
        alive: no success-limit violation up to and including this step, [B, T].
        init_q, init_qd: true initial state, [B, q], [B, qd].
    """

    obs: jax.Array
    action: jax.Array
    q: jax.Array
    qd: jax.Array
    alive: jax.Array
    init_q: jax.Array
    init_qd: jax.Array


def _episode(env: str, protocol: Protocol, policy, params: Params, q0, qd0, key, excitation):
    """One episode; returns (EpisodeStats, per-step (obs, action, q, qd, alive)). Traceable."""
    from brax.generalized import pipeline

    spec = ENVS[env]
    sys = apply_params(_base_system(env), params, spec["n_frames"], spec["pole_link"])
    lo, hi = sys.actuator.ctrl_range[:, 0], sys.actuator.ctrl_range[:, 1]
    latency = jnp.clip(jnp.round(params.latency), 0, MAX_LATENCY).astype(jnp.int32)
    p = protocol
    state0 = pipeline.init(sys, q0, qd0)
    bias = jnp.zeros(q0.shape[0] + qd0.shape[0]).at[1].set(params.obs_bias)

    def step(carry, inputs):
        state, buf, alive, term, steps, score = carry
        t, exc = inputs
        true_obs = jnp.concatenate([state.q, state.qd])
        noise = jax.random.normal(jax.random.fold_in(key, t), true_obs.shape) * params.obs_noise
        obs = true_obs + noise + bias
        a = jnp.clip(act(policy, obs) + exc, -1.0, 1.0)
        buf = jnp.concatenate([a[None], buf[:-1]])
        applied = buf[latency]
        ctrl = (applied + 1.0) * (hi - lo) * 0.5 + lo
        new = jax.lax.fori_loop(0, spec["n_frames"], lambda _, s: pipeline.step(sys, s, ctrl), state)
        finite = jnp.all(jnp.isfinite(new.q)) & jnp.all(jnp.isfinite(new.qd))
        keep_old = term | ~finite
        new = jax.tree.map(lambda n, o: jnp.where(keep_old, o, n), new, state)
        x, ang = new.q[0], new.q[1]
        ok = (jnp.abs(ang) <= p.angle_limit) & (jnp.abs(x) <= p.rail_limit) & finite
        alive = alive & ok
        fell = (jnp.abs(ang) > p.fall_limit) | ~finite
        hit = jnp.abs(x) > p.rail_end
        term_flags = (term | fell | hit, fell, hit)
        shaped = 1.0 - 0.5 * (ang / p.angle_limit) ** 2 - 0.5 * (x / p.rail_limit) ** 2
        score = score + jnp.where(alive, jnp.clip(shaped, 0.0, 1.0), 0.0)
        steps = steps + alive.astype(jnp.int32)
        carry = (new, buf, alive, term_flags[0], steps, score)
        return carry, (obs, a, new.q, new.qd, alive, term_flags[1], term_flags[2])

    buf0 = jnp.zeros((MAX_LATENCY + 1,), jnp.float32)
    carry0 = (state0, buf0, jnp.array(True), jnp.array(False), jnp.array(0, jnp.int32), jnp.array(0.0))
    ts = jnp.arange(p.horizon)
    (_, _, alive, _, steps, score), out = jax.lax.scan(step, carry0, (ts, excitation))
    obs, a, q, qd, alive_t, fell_t, hit_t = out
    fell, hit = jnp.any(fell_t), jnp.any(hit_t)
    stats = EpisodeStats(alive, fell | hit, fell, hit, steps, score / p.horizon)
    return stats, (obs, a, q, qd, alive_t)


#: Episodes per compiled call. Every batch is padded to a multiple of CHUNK and run chunk by
#: chunk through one compiled function, so each (environment, protocol) compiles once,
#: whatever the batch size (the generalized pipeline takes tens of seconds to compile).
CHUNK = 256


@functools.partial(jax.jit, static_argnames=("env", "protocol"))
def _chunk_fn(env, protocol, policies, params, q0, qd0, keys, excitation):
    TRACE_COUNTS["rollout"] += 1
    fn = lambda pol, prm, a, b, k, e: _episode(env, protocol, pol, prm, a, b, k, e)
    stats, (obs, a, q, qd, alive) = jax.vmap(fn)(policies, params, q0, qd0, keys, excitation)
    return stats, Trajectory(obs, a, q, qd, alive, q0, qd0)


def _run_chunks(env, protocol, policies, params, q0, qd0, keys, excitation, record, chunk=None):
    n = keys.shape[0]
    tree = (policies, params, q0, qd0, keys, excitation)
    if chunk is None:
        from bayes_s2r.distributed.devices import active_mesh

        mesh = active_mesh()
        if mesh is not None and mesh.size > 1:
            return _run_split(env, protocol, tree, record, mesh)
    chunk = chunk or CHUNK
    pad = (-n) % chunk
    if pad:
        tree = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)]), tree)
    outs = []
    for i in range(0, n + pad, chunk):
        part = jax.tree.map(lambda x, i=i: x[i:i + chunk], tree)
        stats, traj = _chunk_fn(env, protocol, *part)
        outs.append((stats, traj) if record else (stats,))
    joined = jax.tree.map(lambda *xs: jnp.concatenate(xs)[:n], *outs)
    return joined if record else joined[0]


def _run_split(env, protocol, tree, record, mesh):
    """The batch as one call split over the devices of `mesh` (inside `use_devices(...)`).

    Every caller (rollouts, sweeps, paired evaluations, ES/CEM training) gets this without
    changes; the episodes and their results are those of the chunked path.
    """
    from bayes_s2r.distributed.placement import place_batch, unpad
    from bayes_s2r.distributed.rollouts import chunk_for

    n = tree[4].shape[0]
    size = chunk_for(n, mesh.size)  # a new compile only when the per-device size doubles
    if size > n:
        tree = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], size - n, axis=0)]), tree)
    stats, traj = _chunk_fn(env, protocol, *place_batch(tree, mesh).tree)
    return unpad((stats, traj) if record else stats, n, size)


def sample_init(key: jax.Array, world: World, n: int) -> tuple[jax.Array, jax.Array]:
    """`n` initial states (q0 [n, q], qd0 [n, qd]) from the protocol's distribution."""
    sys = world.sys
    k1, k2 = jax.random.split(key)
    s = world.protocol.init_scale
    q0 = sys.init_q + jax.random.uniform(k1, (n, sys.q_size()), minval=-s, maxval=s)
    qd0 = jax.random.uniform(k2, (n, sys.qd_size()), minval=-s, maxval=s)
    return q0, qd0


def _broadcast_policy(policy: LinearPolicy, n: int) -> LinearPolicy:
    w = jnp.asarray(policy.weights, jnp.float32)
    b = jnp.asarray(policy.bias, jnp.float32)
    if w.ndim == 1:
        return LinearPolicy(jnp.broadcast_to(w, (n, w.shape[0])), jnp.broadcast_to(b, (n,)))
    if w.shape[0] != n:
        raise InputError("policy.weights", w.shape, f"a single policy or a batch of {n}")
    return LinearPolicy(w, b)


def _episode_count(episodes) -> int:
    if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or episodes < 1:
        raise InputError("episodes", episodes, "a whole number >= 1")
    return int(episodes)


def simulate_batch(key: jax.Array, world: World, policy: LinearPolicy, params: Params,
                   *, init: tuple | None = None, excitation=None, record: bool = False,
                   chunk: int | None = None):
    """Run one episode per element of the batch of ξ in `params` (shape [B]).

    Args:
        key: PRNG key (initial states unless `init` is given, and observation noise).
        world: gives the environment and protocol (its own ξ is ignored here).
        policy: one `LinearPolicy` or a batch of B.
        params: `Params` of arrays of shape [B].
        init: optional (q0 [B, q], qd0 [B, qd]); matched initial states for paired comparisons.
        excitation: optional [B, T] signal added to the actions (known to the experimenter).
        record: also return the `Trajectory`.
        chunk: episodes per compiled call (default `CHUNK`; another value compiles once more).

    Returns:
        `EpisodeStats` (and a `Trajectory` when `record`).
    """
    n = int(np.shape(params.mass_scale)[0])
    k_init, k_noise = jax.random.split(key)
    q0, qd0 = init if init is not None else sample_init(k_init, world, n)
    keys = jax.random.split(k_noise, n)
    exc = jnp.zeros((n, world.protocol.horizon), jnp.float32) if excitation is None else jnp.asarray(
        excitation, jnp.float32)
    if exc.shape != (n, world.protocol.horizon):
        raise InputError("excitation", exc.shape, f"shape {(n, world.protocol.horizon)}")
    pol = _broadcast_policy(policy, n)
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise InputError("chunk", chunk, "a whole number >= 1 or None")
    return _run_chunks(world.env, world.protocol, pol, params, q0, qd0, keys, exc, record, chunk)


def rollout(key: jax.Array, world: World, policy: LinearPolicy, episodes: int,
            params: Params | None = None) -> EpisodeStats:
    """`episodes` episodes of `policy` in `world` (at its own ξ unless `params` is given).

    Example:
        >>> import jax
        >>> w = make_world()
        >>> s = rollout(jax.random.key(0), w, LinearPolicy.zeros(), 8)
        >>> s.success.shape
        (8,)
    """
    n = _episode_count(episodes)
    p = broadcast_params(world.params if params is None else params, n)
    return simulate_batch(key, world, policy, p)


def rollout_dr(key: jax.Array, world: World, policy: LinearPolicy, spec: DRSpec,
               episodes: int) -> tuple[EpisodeStats, Params]:
    """Episodes under p_DR: one fresh ξ per episode, drawn with `key` (pass a new key to resample).

    For a fixed batch of ξ reused across calls, draw it once with `sample_params` and pass it
    to `simulate_batch`.

    Returns:
        (stats, the ξ drawn for each episode).
    """
    n = _episode_count(episodes)
    k_xi, k_run = jax.random.split(key)
    params = sample_params(k_xi, spec, n)
    return simulate_batch(k_run, world, policy, params), params


def rollout_trajectories(key: jax.Array, world: World, policy: LinearPolicy, episodes: int,
                         params: Params | None = None, excitation=None):
    """Recorded episodes: (EpisodeStats, Trajectory)."""
    n = _episode_count(episodes)
    p = broadcast_params(world.params if params is None else params, n)
    return simulate_batch(key, world, policy, p, excitation=excitation, record=True)


from bayes_s2r.sim.world import make_world  # noqa: F401  (doctest namespace)
