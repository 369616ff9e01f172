"""Vectorized episodes: `jax.vmap` over environments, `jax.lax.scan` over time, jitted once.

One episode is a pure function of (policy, ξ, initial state, noise key, excitation). The
compiled batch functions take everything as traced arguments; only the environment name,
the protocol (with its horizon) and the physics backend are static, so each (world structure,
batch shape) compiles exactly once (a test checks `_chunk_fn._cache_size()`).

Per control step: observe (true state + Gaussian noise + pole-angle bias), act with the
policy (plus a known excitation signal, for identification), push the action through a
latency buffer, integrate `n_frames` physics steps, check the success and safety limits.
Once the pole passes `fall_limit` or the cart passes `rail_end` the state freezes, which
keeps the `generalized` pipeline away from the ±90° hinge limit where it returns NaN.

Each environment has its own episode function (`_EPISODES`) with the same inputs and outputs;
the cart-pole's is `_episode`, the reacher's `_episode_reacher`. The reacher task:

- Initial state: arm joints uniform in ±init_scale around the MJCF's init pose (stretched
  along x), joint velocities uniform in ±init_scale; the target is placed at the fingertip
  position of a random joint-space pose: shoulder uniform in `REACHER_TARGET_SHOULDER`,
  elbow uniform in `REACHER_TARGET_ELBOW` (rad), so every target is reachable.
- Observation: [shoulder error, elbow error, shoulder velocity, elbow velocity], the errors
  taken to the target's joint-space pose (analytic inverse kinematics of the target position,
  elbow-positive branch; shoulder error wrapped to (−π, π]), plus noise; `obs_bias` offsets
  the shoulder error.
- Success: no unsafe event and the fingertip within `protocol.reach_tolerance` of the target
  at each of the last `protocol.hold_steps` control steps.
- Unsafe: an arm joint speed above `protocol.speed_limit` (or a non-finite state); the state
  freezes there. `EpisodeStats.fell` then flags the overspeed, `rail_hit` is always False.
- steps_alive: control steps before the unsafe event (the horizon when there is none).
- score: mean over the horizon of alive × max(0, 1 − distance / `REACHER_REACH`).
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.compiling import LazyJit
from bayes_s2r.distributed.devices import batch_mesh
from bayes_s2r.distributed.placement import place_batch, unpad
from bayes_s2r.errors import InputError, require_int
from bayes_s2r.sim.params import MAX_LATENCY, DRSpec, Params, broadcast_params, sample_params
from bayes_s2r.sim.policy import Policy
from bayes_s2r.sim.space import DR
from bayes_s2r.sim.task import Task, TaskStats, simulate_task
from bayes_s2r.sim.world import ENVS, Protocol, World, _base_system, apply_params, pipeline

__all__ = [
    "CHUNK",
    "EpisodeStats",
    "LinearPolicy",
    "Trajectory",
    "act",
    "chunk_for",
    "policy_id",
    "policy_label",
    "rollout",
    "rollout_dr",
    "rollout_trajectories",
    "sample_init",
    "simulate_batch",
]

#: How many times each compiled function's Python body has been traced (a re-trace check).


class LinearPolicy(NamedTuple):
    """a = clip(weights · obs + bias, -1, 1). Leading axes, if any, are batch axes.

    Shapes depend on the world's action size `act` (`World.act_size`):

    - act == 1 (cart-pole): weights [obs], bias [] (a scalar); one action.
    - act > 1 (reacher): weights [act, obs], bias [act]; an action vector.

    A batch of B policies adds a leading axis: [B, obs] / [B] or [B, act, obs] / [B, act].
    The rollouts tell a single policy from a batch by comparing the weights' shape with the
    world's single-policy shape. The flat form is weights (row-major) then bias:
    act · obs + act numbers.
    """

    weights: jax.Array
    bias: jax.Array

    @classmethod
    def zeros(cls, obs_size: int = 4, act_size: int = 1) -> LinearPolicy:
        if act_size == 1:
            return cls(jnp.zeros((obs_size,), jnp.float32), jnp.zeros((), jnp.float32))
        return cls(jnp.zeros((act_size, obs_size), jnp.float32), jnp.zeros((act_size,), jnp.float32))

    def flat(self) -> jax.Array:
        """The parameters of one policy as a vector."""
        w, b = jnp.asarray(self.weights), jnp.asarray(self.bias)
        if w.ndim == 1:
            return jnp.concatenate([w, b[None]])
        return jnp.concatenate([w.reshape(-1), b.reshape(-1)])

    @classmethod
    def from_flat(cls, theta: jax.Array, act_size: int = 1) -> LinearPolicy:
        """The policy (or batch, over leading axes) of flat parameters `theta` [..., act·obs + act]."""
        if act_size == 1:
            return cls(theta[..., :-1], theta[..., -1])
        size = theta.shape[-1]
        if size % act_size or size // act_size < 2:
            raise InputError("policy.theta", theta.shape, f"a last axis of act_size × (obs + 1) with act_size={act_size}")
        obs = size // act_size - 1
        w = theta[..., :act_size * obs].reshape(theta.shape[:-1] + (act_size, obs))
        return cls(w, theta[..., act_size * obs:])


def act(policy: LinearPolicy, obs: jax.Array) -> jax.Array:
    """The policy's action in [-1, 1] for one observation (a scalar, or [act] when act > 1)."""
    return jnp.clip(jnp.dot(policy.weights, obs) + policy.bias, -1.0, 1.0)


def policy_id(policy: LinearPolicy, prefix: str = "linear") -> str:
    """A short stable label of a policy's parameters (for records)."""
    import hashlib

    theta = np.round(np.asarray(policy.flat(), dtype=np.float64), 6)
    return f"{prefix}-{hashlib.sha256(theta.tobytes()).hexdigest()[:10]}"


def policy_label(policy) -> str:
    """The record label of a `Policy` (`Policy.label`) or a `LinearPolicy` (`policy_id`)."""
    if isinstance(policy, Policy):
        return policy.label()
    return policy_id(policy)


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
        action: commanded action after excitation and clipping (before latency), [B, T]
            ([B, T, act] when the world has act > 1 actuators).
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


def _setup(env: str, backend: str, params: Params, q0, qd0):
    """The episode's (spec, system at ξ, latency in steps, initial pipeline state).

    `spec` is the environment's `ENVS` entry plus its backend's "pipeline" module.
    """
    spec = {**ENVS[env], "pipeline": pipeline(backend)}
    sys = apply_params(_base_system(env), params, spec["n_frames"], spec["pole_link"])
    latency = jnp.clip(jnp.round(params.latency), 0, MAX_LATENCY).astype(jnp.int32)
    return spec, sys, latency, spec["pipeline"].init(sys, q0, qd0)


def _to_ctrl(sys, a):
    """Actions in [-1, 1] scaled to the actuators' control range."""
    lo, hi = sys.actuator.ctrl_range[:, 0], sys.actuator.ctrl_range[:, 1]
    return (a + 1.0) * (hi - lo) * 0.5 + lo


def _is_finite(state):
    """The physics state holds no NaN or inf."""
    return jnp.all(jnp.isfinite(state.q)) & jnp.all(jnp.isfinite(state.qd))


def _cartpole_limits(q, p: Protocol, finite):
    """(within the success limits, fell, hit the rail end, the step's shaped score) at q."""
    x, ang = q[0], q[1]
    ok = (jnp.abs(ang) <= p.angle_limit) & (jnp.abs(x) <= p.rail_limit) & finite
    fell = (jnp.abs(ang) > p.fall_limit) | ~finite
    hit = jnp.abs(x) > p.rail_end
    shaped = 1.0 - 0.5 * (ang / p.angle_limit) ** 2 - 0.5 * (x / p.rail_limit) ** 2
    return ok, fell, hit, shaped


def _control_step(spec, sys, policy, params: Params, latency, key, t, exc, true_obs, bias, buf, state):
    """Observe (noise, bias), act, delay the action by the latency, step the physics.

    Returns (obs, action, action buffer, new state, whether the new state is finite).
    """
    step = spec["pipeline"].step
    noise = jax.random.normal(jax.random.fold_in(key, t), true_obs.shape) * params.obs_noise
    obs = true_obs + noise + bias
    a = jnp.clip(act(policy, obs) + exc, -1.0, 1.0)
    buf = jnp.concatenate([a[None], buf[:-1]])
    ctrl = _to_ctrl(sys, buf[latency])
    new = jax.lax.fori_loop(0, spec["n_frames"], lambda _, s: step(sys, s, ctrl), state)
    return obs, a, buf, new, _is_finite(new)


def _episode(env: str, backend: str, protocol: Protocol, policy, params: Params, q0, qd0, key, excitation):
    """One episode; returns (EpisodeStats, per-step (obs, action, q, qd, alive)). Traceable."""
    spec, sys, latency, state0 = _setup(env, backend, params, q0, qd0)
    p = protocol
    bias = jnp.zeros(q0.shape[0] + qd0.shape[0]).at[1].set(params.obs_bias)

    def step(carry, inputs):
        state, buf, alive, term, steps, score = carry
        t, exc = inputs
        true_obs = jnp.concatenate([state.q, state.qd])
        obs, a, buf, new, finite = _control_step(spec, sys, policy, params, latency, key, t, exc,
                                                 true_obs, bias, buf, state)
        keep_old = term | ~finite
        new = jax.tree.map(lambda n, o: jnp.where(keep_old, o, n), new, state)
        ok, fell, hit, shaped = _cartpole_limits(new.q, p, finite)
        alive = alive & ok
        term_flags = (term | fell | hit, fell, hit)
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


#: Reacher target distribution (joint-space pose, rad) and arm geometry (m): upper arm length,
#: fingertip offset along the forearm (from the MJCF), and the score's distance scale (reach).
REACHER_TARGET_SHOULDER = (-1.5, 1.5)
REACHER_TARGET_ELBOW = (0.3, 2.3)
REACHER_UPPER = 0.1
REACHER_TIP = 0.11
REACHER_REACH = REACHER_UPPER + REACHER_TIP


def _reacher_fk(shoulder, elbow):
    """Fingertip (x, y) of the arm at joint angles (shoulder, elbow)."""
    x = REACHER_UPPER * jnp.cos(shoulder) + REACHER_TIP * jnp.cos(shoulder + elbow)
    y = REACHER_UPPER * jnp.sin(shoulder) + REACHER_TIP * jnp.sin(shoulder + elbow)
    return x, y


def _reacher_ik(x, y):
    """Joint angles (shoulder, elbow >= 0) that put the fingertip at (x, y) (clipped to reach)."""
    l1, l2 = REACHER_UPPER, REACHER_TIP
    c = (x * x + y * y - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)
    elbow = jnp.arccos(jnp.clip(c, -1.0, 1.0))
    shoulder = jnp.arctan2(y, x) - jnp.arctan2(l2 * jnp.sin(elbow), l1 + l2 * jnp.cos(elbow))
    return shoulder, elbow


def _reacher_obs(q, qd, goal):
    """[shoulder error (wrapped to (−π, π]), elbow error, shoulder and elbow velocity]."""
    err = q[:2] - goal
    err = err.at[0].set(jnp.arctan2(jnp.sin(err[0]), jnp.cos(err[0])))
    return jnp.concatenate([err, qd[:2]])


def _reacher_distance(state):
    """Distance (m) in the plane from the fingertip to the target."""
    from brax import math as bmath

    tip = state.x.pos[1] + bmath.rotate(jnp.array([REACHER_TIP, 0.0, 0.0]), state.x.rot[1])
    return jnp.linalg.norm(tip[:2] - state.x.pos[2, :2])


def _episode_reacher(env: str, backend: str, protocol: Protocol, policy, params: Params, q0, qd0, key,
                     excitation):
    """One reacher episode (task in the module docstring); same outputs as `_episode`. Traceable."""
    spec, sys, latency, state0 = _setup(env, backend, params, q0, qd0)
    p = protocol
    goal = jnp.stack(_reacher_ik(q0[2], q0[3]))  # the target never moves
    bias = jnp.zeros(spec["obs_size"]).at[spec["bias_index"]].set(params.obs_bias)
    hold = min(p.hold_steps, p.horizon)

    def step(carry, inputs):
        state, buf, alive, steps, score = carry
        t, exc = inputs
        obs, a, buf, new, finite = _control_step(spec, sys, policy, params, latency, key, t, exc,
                                                 _reacher_obs(state.q, state.qd, goal), bias, buf, state)
        new = jax.tree.map(lambda n, o: jnp.where(~alive | ~finite, o, n), new, state)
        alive = alive & finite & jnp.all(jnp.abs(new.qd[:2]) <= p.speed_limit)
        dist = _reacher_distance(new)
        near = alive & (dist <= p.reach_tolerance)
        score = score + jnp.where(alive, jnp.clip(1.0 - dist / REACHER_REACH, 0.0, 1.0), 0.0)
        steps = steps + alive.astype(jnp.int32)
        return (new, buf, alive, steps, score), (obs, a, new.q, new.qd, alive, near)

    buf0 = jnp.zeros((MAX_LATENCY + 1, spec["act_size"]), jnp.float32)
    carry0 = (state0, buf0, jnp.array(True), jnp.array(0, jnp.int32), jnp.array(0.0))
    ts = jnp.arange(p.horizon)
    (_, _, alive, steps, score), out = jax.lax.scan(step, carry0, (ts, excitation))
    obs, a, q, qd, alive_t, near_t = out
    success = alive & jnp.all(near_t[-hold:])
    stats = EpisodeStats(success, ~alive, ~alive, jnp.array(False), steps, score / p.horizon)
    return stats, (obs, a, q, qd, alive_t)


#: The episode function of each environment (same signature and outputs).
_EPISODES = MappingProxyType({"inverted_pendulum": _episode, "reacher": _episode_reacher})


#: Episodes per compiled call. Every batch is padded to a multiple of CHUNK and run chunk by
#: chunk through one compiled function, so each (environment, protocol) compiles once,
#: whatever the batch size (the generalized pipeline takes tens of seconds to compile).
CHUNK = 256


@functools.partial(LazyJit, static_argnames=("env", "protocol", "backend"))
def _chunk_fn(env, protocol, policies, params, q0, qd0, keys, excitation, backend="generalized"):
    episode = _EPISODES[env]
    fn = lambda pol, prm, a, b, k, e: episode(env, backend, protocol, pol, prm, a, b, k, e)
    stats, (obs, a, q, qd, alive) = jax.vmap(fn)(policies, params, q0, qd0, keys, excitation)
    return stats, Trajectory(obs, a, q, qd, alive, q0, qd0)


def _run_chunks(env, protocol, policies, params, q0, qd0, keys, excitation, record, chunk=None,
                mesh=None, backend="generalized"):
    n = keys.shape[0]
    tree = (policies, params, q0, qd0, keys, excitation)
    if chunk is None and mesh is not None and mesh.size > 1:
        return _run_split(env, protocol, tree, record, mesh, backend)
    chunk = chunk or CHUNK
    pad = (-n) % chunk
    if pad:
        tree = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)]), tree)
    outs = []
    for i in range(0, n + pad, chunk):
        part = jax.tree.map(lambda x, i=i: x[i:i + chunk], tree)
        stats, traj = _chunk_fn(env, protocol, *part, backend=backend)
        outs.append((stats, traj) if record else (stats,))
    joined = jax.tree.map(lambda *xs: jnp.concatenate(xs)[:n], *outs)
    return joined if record else joined[0]


def chunk_for(episodes: int, devices: int) -> int:
    """Episodes per compiled call for a batch split over `devices` (> 1): one call for the batch.

    `simulate_batch` slices big batches into chunks; a slice after the first loses the batch
    sharding, so a sharded batch runs as one chunk. Its size is `devices` × the next power of
    two ≥ episodes / devices: a new compile only when that per-device size doubles.

    Example:
        >>> chunk_for(6, 4), chunk_for(256, 4), chunk_for(1000, 4)
        (8, 256, 1024)
    """
    per_device = -(-episodes // devices)
    return devices * (1 << max(0, per_device - 1).bit_length())


def _run_split(env, protocol, tree, record, mesh, backend):
    """The batch as one call split over the devices of `mesh`.

    The episodes and their results are those of the chunked path.
    """
    n = tree[4].shape[0]
    size = chunk_for(n, mesh.size)  # a new compile only when the per-device size doubles
    if size > n:
        tree = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], size - n, axis=0)]), tree)
    stats, traj = _chunk_fn(env, protocol, *place_batch(tree, mesh).tree, backend=backend)
    return unpad((stats, traj) if record else stats, n, size)


def sample_init(key: jax.Array, world: World, n: int) -> tuple[jax.Array, jax.Array]:
    """`n` initial states (q0 [n, q], qd0 [n, qd]) from the protocol's distribution."""
    return _initial_states(key, world.env, world.sys, world.protocol.init_scale, n)


def _initial_states(key: jax.Array, env: str, sys, s: float, n: int) -> tuple[jax.Array, jax.Array]:
    """`n` initial states of `env` with half-width `s` (the protocol's init_scale).

    Cart-pole: q and qd uniform in ±s around the MJCF's. Reacher: the arm near its init
    pose, the target at the tip of a random joint-space pose.
    """
    if env != "reacher":
        k1, k2 = jax.random.split(key)
        q0 = sys.init_q + jax.random.uniform(k1, (n, sys.q_size()), minval=-s, maxval=s)
        qd0 = jax.random.uniform(k2, (n, sys.qd_size()), minval=-s, maxval=s)
        return q0, qd0
    k1, k2, k3, k4 = jax.random.split(key, 4)
    arm = sys.init_q[:2] + jax.random.uniform(k1, (n, 2), minval=-s, maxval=s)
    shoulder = jax.random.uniform(k2, (n,), minval=REACHER_TARGET_SHOULDER[0], maxval=REACHER_TARGET_SHOULDER[1])
    elbow = jax.random.uniform(k3, (n,), minval=REACHER_TARGET_ELBOW[0], maxval=REACHER_TARGET_ELBOW[1])
    q0 = jnp.concatenate([arm, jnp.stack(_reacher_fk(shoulder, elbow), axis=1)], axis=1)
    qd_arm = jax.random.uniform(k4, (n, 2), minval=-s, maxval=s)
    qd0 = jnp.concatenate([qd_arm, jnp.zeros((n, sys.qd_size() - 2))], axis=1)
    return q0, qd0


def _broadcast_policy(policy: LinearPolicy, n: int, act_size: int = 1, obs_size: int | None = None) -> LinearPolicy:
    if not (hasattr(policy, "weights") and hasattr(policy, "bias")):
        raise InputError("policy", policy, "a LinearPolicy for a built-in World (any sim.Policy runs on a sim.Task)")
    w = jnp.asarray(policy.weights, jnp.float32)
    b = jnp.asarray(policy.bias, jnp.float32)
    if act_size > 1:
        single = (act_size, obs_size)
        if w.shape == single and b.shape == (act_size,):
            return LinearPolicy(jnp.broadcast_to(w, (n,) + single), jnp.broadcast_to(b, (n, act_size)))
        if w.shape != (n,) + single or b.shape != (n, act_size):
            raise InputError("policy.weights", (w.shape, b.shape),
                             f"weights {single} and bias {(act_size,)}, or a batch of {n} of them")
        return LinearPolicy(w, b)
    if w.ndim == 1:
        return LinearPolicy(jnp.broadcast_to(w, (n, w.shape[0])), jnp.broadcast_to(b, (n,)))
    if w.shape[0] != n:
        raise InputError("policy.weights", w.shape, f"a single policy or a batch of {n}")
    return LinearPolicy(w, b)


def _episode_count(episodes) -> int:
    return require_int("episodes", episodes, 1)


def simulate_batch(key: jax.Array, world: World, policy: LinearPolicy, params: Params,
                   *, init: tuple | None = None, excitation=None, record: bool = False,
                   chunk: int | None = None, devices=None):
    """Run one episode per element of the batch of ξ in `params` (shape [B]).

    Args:
        key: PRNG key (initial states unless `init` is given, and observation noise).
        world: gives the environment and protocol (its own ξ is ignored here).
        policy: one `LinearPolicy` or a batch of B.
        params: `Params` of arrays of shape [B].
        init: optional (q0 [B, q], qd0 [B, qd]); matched initial states for paired comparisons.
        excitation: optional [B, T] signal added to the actions (known to the experimenter);
            [B, T, act] when the world has act > 1 actuators.
        record: also return the `Trajectory`.
        chunk: episodes per compiled call (default `CHUNK`; another value compiles once more).
        devices: split the batch over these devices (an int, a list of jax devices or a
            one-axis Mesh; see `bayes_s2r.distributed`) as one compiled call; None runs it
            on the default device. Same key, same episodes.

    Returns:
        `EpisodeStats` (and a `Trajectory` when `record`).
    """
    n = int(np.shape(params.mass_scale)[0])
    k_init, k_noise = jax.random.split(key)
    q0, qd0 = init if init is not None else sample_init(k_init, world, n)
    keys = jax.random.split(k_noise, n)
    act_size = world.act_size
    exc_shape = (n, world.protocol.horizon) + ((act_size,) if act_size > 1 else ())
    exc = jnp.zeros(exc_shape, jnp.float32) if excitation is None else jnp.asarray(excitation, jnp.float32)
    if exc.shape != exc_shape:
        raise InputError("excitation", exc.shape, f"shape {exc_shape}")
    pol = _broadcast_policy(policy, n, act_size, world.obs_size)
    if chunk is not None:
        require_int("chunk", chunk, 1)
    mesh = None if devices is None else batch_mesh(devices)
    return _run_chunks(world.env, world.protocol, pol, params, q0, qd0, keys, exc, record, chunk, mesh,
                       world.backend)


def rollout(key: jax.Array, world: World | Task, policy, episodes: int,
            params: Params | None = None) -> EpisodeStats | TaskStats:
    """`episodes` episodes of `policy` in `world` (at its own ξ unless `params` is given).

    A `Task` runs at its nominal model (`params` must be None; use `rollout_dr` with
    `space.point(...)` for another model) and returns `TaskStats`.

    Example:
        >>> import jax
        >>> w = make_world()
        >>> s = rollout(jax.random.key(0), w, LinearPolicy.zeros(), 8)
        >>> s.success.shape
        (8,)
    """
    n = _episode_count(episodes)
    if isinstance(world, Task):
        if params is not None:
            raise InputError("params", params, "None for a Task (pass a DR from space.point(...) to rollout_dr)")
        return simulate_task(key, world, policy, episodes=n)
    p = broadcast_params(world.params if params is None else params, n)
    return simulate_batch(key, world, policy, p)


def rollout_dr(key: jax.Array, world: World | Task, policy, spec: DRSpec | DR,
               episodes: int) -> tuple[EpisodeStats, Params] | tuple[TaskStats, jax.Array]:
    """Episodes under p_DR: one fresh ξ per episode, drawn with `key` (pass a new key to resample).

    For a fixed batch of ξ reused across calls, draw it once with `sample_params` and pass it
    to `simulate_batch`.

    With a `Task`, `spec` is a `DR` of a `ParamSpace` (`space.dr(...)`), `policy` any `Policy`,
    and the draws come back as values [episodes, D] (columns `spec.space.names`).

    Returns:
        (stats, the ξ drawn for each episode).
    """
    n = _episode_count(episodes)
    k_xi, k_run = jax.random.split(key)
    if isinstance(world, Task):
        if not isinstance(spec, DR):
            raise InputError("spec", spec, "a DR of a ParamSpace (space.dr(...)) for a Task")
        values = spec.sample(k_xi, n)
        return simulate_task(k_run, world, policy, values, space=spec.space), values
    if not isinstance(world, World):
        raise InputError("world", world, "a World or a sim.Task")
    params = sample_params(k_xi, spec, n)
    return simulate_batch(k_run, world, policy, params), params


def rollout_trajectories(key: jax.Array, world: World, policy: LinearPolicy, episodes: int,
                         params: Params | None = None, excitation=None):
    """Recorded episodes: (EpisodeStats, Trajectory)."""
    n = _episode_count(episodes)
    p = broadcast_params(world.params if params is None else params, n)
    return simulate_batch(key, world, policy, p, excitation=excitation, record=True)


from bayes_s2r.sim.world import make_world  # noqa: F401  (doctest namespace)
