"""System identification on a lab's own simulator: fit a `ParamSpace` to logged episodes of a
`sim.Task`.

Fitted: the continuous directions of the space that the replay can move (`ModelField`,
`SysFn`, `ObsBias`; by default all of them, or the names in `fit`), and the latency when
the space has a `Latency` direction (profiled over its whole steps as on a world).
Observation noise is not fitted: its directions stay at 0 in the replay and the residual
variance absorbs it. A scale `ModelField` is fitted on its log (prior: normal with sd
`SIConfig.prior_sd` around log 1); an offset, a `SysFn` or an `ObsBias` on (value − nominal)
/ |unit| (prior: normal with sd `prior_sd` around the nominal, in units).

Replay: a task's state cannot be rebuilt from an observation, so every logged episode is
replayed whole from its own reset (`TaskData.keys`, the keys the episodes were run with).
`SIConfig.replay="closed"` (default) re-runs the policy on the simulated observations without
sensor noise, as the world's replay does, through the task's own compiled episodes
(`simulate_task`), so identification compiles nothing new and stays bounded on an unstable
system; "open" replays the logged actions through the latency buffer (exactly the actions the
robot took; keep the horizon short on an unstable system, where a wrong model drifts). The
residuals are the simulated observations (with the space's bias) against the logged ones, per
channel scaled by the logged spread, while the episode was still running. The fit, the
jackknife-calibrated posterior and the latency profile are those of `bayes_s2r.sim.sysid`.

Jacobians: central differences (step `STEP` in θ), the 2P + 1 replays run as one batch. A
lab's simulator need only run, not be differentiable (contacts, lookups in a `SysFn`); the
open-loop replay compiles one forward replay (on Brax's MJX hopper 42 s, against 70 s for
forward-mode Jacobians, on a 2-core CPU).
"""

from __future__ import annotations

import functools
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.compiling import LazyJit
from bayes_s2r.errors import InputError
from bayes_s2r.sim.policy import as_policy
from bayes_s2r.sim.si_fit import (
    Coord,
    SIConfig,
    SIResult,
    _check_config,
    _fit_posterior,
    _latency_moments,
)
from bayes_s2r.sim.space import Latency, ModelField, ObsBias, ObsNoise, ParamSpace, SysFn
from bayes_s2r.sim.task import Task, _model, simulate_task

__all__ = ["TaskData", "identify_task"]


class TaskData(NamedTuple):
    """Logged episodes of a task: what `identify` on a `Task` fits.

    Attributes:
        obs: what the policy saw before each action, [K, T, obs] (`Episode.seen`).
        action: the policy's actions (clipped, before the latency), [K, T, act].
        done: the episode had ended at or before each step, [K, T] bool.
        keys: the PRNG keys the episodes were run with, [K] (their reset keys are the first
            of `jax.random.split(key, 3)`, as in `simulate_task`).
    """

    obs: Any
    action: Any
    done: Any
    keys: Any

    @classmethod
    def from_episodes(cls, episodes, keys) -> TaskData:
        """From the `Episode`s of `simulate_task(..., keys=keys, record=True)`."""
        return cls(episodes.seen, episodes.action, episodes.done, keys)


def _coords(space: ParamSpace, fit) -> tuple[tuple[int, ...], tuple[Coord, ...]]:
    fittable = (ModelField, SysFn, ObsBias)
    if fit is None:
        names = [d.name for d in space.directions if isinstance(d, fittable)]
    else:
        if isinstance(fit, str) or not all(isinstance(n, str) for n in fit):
            raise InputError("fit", fit, f"a list of direction names among {space.names}")
        names = list(fit)
        for n in names:
            d = space.directions[space.index(n, "fit")]
            if not isinstance(d, fittable):
                raise InputError("fit", n, "a ModelField, SysFn or ObsBias direction (latency is profiled)")
        if len(set(names)) != len(names):
            raise InputError("fit", fit, "distinct direction names")
    if not names:
        raise InputError("space", space.names, "at least one ModelField, SysFn or ObsBias direction to fit")
    idx = tuple(space.index(n) for n in names)
    coords = []
    for i in idx:
        d = space.directions[i]
        log = isinstance(d, ModelField) and d.mode == "scale"
        coords.append(Coord(d.name, log, float(d.nominal), abs(float(d.unit)) or 1.0))
    return idx, tuple(coords)


def _check_data(data, task: Task, space: ParamSpace):
    """Validated arrays (obs [K, T, n], actions, running mask, keys) and the observation scale."""
    if not isinstance(data, TaskData):
        raise InputError("data", type(data).__name__, "a TaskData (TaskData.from_episodes(episodes, keys))")
    obs = np.asarray(data.obs, np.float32)
    h = task.horizon
    if obs.ndim < 3 or obs.shape[1] != h:
        raise InputError("data.obs", obs.shape, f"[episodes, {h}, ...] (one observation per step)")
    k = obs.shape[0]
    if k < 2:
        raise InputError("data.obs", obs.shape, "at least 2 episodes (the spread is estimated across episodes)")
    action = np.asarray(data.action, np.float32)
    if action.shape != (k, h, task.act_size):
        raise InputError("data.action", action.shape, f"shape {(k, h, task.act_size)}")
    done = np.asarray(data.done)
    if done.shape != (k, h):
        raise InputError("data.done", done.shape, f"shape {(k, h)}")
    keys = data.keys
    if not isinstance(keys, jax.Array) or not jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key) \
            or keys.shape != (k,):
        raise InputError("data.keys", getattr(keys, "shape", keys), f"{k} typed PRNG keys (jax.random.split)")
    for name, x in (("data.obs", obs), ("data.action", action)):
        if not np.all(np.isfinite(x)):
            raise InputError(name, "non-finite values", "finite numbers")
    # an observation counts while the episode was still running at the step before it
    mask = np.concatenate([np.ones((k, 1), bool), ~done[:, :-1].astype(bool)], axis=1).astype(np.float32)
    flat = obs.reshape(k, h, -1)
    scale = np.maximum(flat[mask > 0].std(axis=0), 1e-3).astype(np.float32)
    return flat, action, mask, keys, scale


def _replay(task: Task, space: ParamSpace, values, key, actions):
    """Open-loop replay of one episode from its reset: the observations before each action."""
    env = task.env
    model = space.apply_model(getattr(getattr(env, "unwrapped", env), task.model_attr), values)
    latency = space.latency(values)
    k_reset = jax.random.split(key, 3)[0]
    with _model(task, model):
        state0 = env.reset(k_reset)

        def step(carry, a):
            state, buf = carry
            seen = space.observe(task.observe(state), values, k_reset)  # noise 0: bias only
            buf = jnp.concatenate([a[None], buf[:-1]])
            return (env.step(state, buf[latency]), buf), jnp.reshape(jnp.asarray(seen, jnp.float32), (-1,))

        buf0 = jnp.zeros((space.max_latency + 1, task.act_size), jnp.float32)
        _, seen = jax.lax.scan(step, (state0, buf0), actions)
    return seen


#: Step of the central differences in θ (a 1% change of a scale; 0.01 unit of an offset).
STEP = 1e-2


@functools.partial(LazyJit, static_argnames=("task", "space", "idx", "coords"))
def _residuals(theta, latency, nominal, keys, actions, obs, mask, scale, task, space, idx, coords):
    """Per-episode scaled residuals [K, T·n] and their Jacobian in θ [K, T·n, P] by central
    differences: the 2P + 1 replays run as one batch of the forward replay."""
    log = jnp.array([c.log for c in coords])
    nom = jnp.array([c.nominal for c in coords], jnp.float32)
    unit = jnp.array([c.unit for c in coords], jnp.float32)
    lat_col = [i for i, d in enumerate(space.directions) if isinstance(d, Latency)]

    def resid(th):
        vals = jnp.where(log, jnp.exp(th), nom + unit * th)
        values = nominal.at[jnp.array(idx)].set(vals)
        if lat_col:
            values = values.at[lat_col[0]].set(latency)
        sim = jax.vmap(lambda k, a: _replay(task, space, values, k, a))(keys, actions)
        return jnp.where(mask[..., None] > 0, (sim - obs) / scale, 0.0).reshape(obs.shape[0], -1)

    p = theta.shape[0]
    shifts = STEP * jnp.concatenate([jnp.zeros((1, p)), jnp.eye(p), -jnp.eye(p)])
    rs = jax.vmap(resid)(theta[None] + shifts)  # [2P + 1, K, T·n]
    return rs[0], jnp.moveaxis((rs[1:p + 1] - rs[p + 1:]) / (2 * STEP), 0, -1)


def identify_task(key: jax.Array, task: Task, data: TaskData, policy, config: SIConfig | None = None, *,
                  space: ParamSpace | None = None, fit=None) -> SIResult:
    """Identify the continuous directions of `space` (and its latency) from a task's episodes.

    `sim.identify(key, task, data, policy, space=space)` calls this.

    Args:
        key: PRNG key: draws the fit's starting point (`SIConfig.init_sd`) and the CEM
            populations. The same key gives the same answer.
        task: the `sim.Task` (its model is the prior's centre: every direction at nominal).
        data: `TaskData` of at least 2 episodes.
        policy: the policy that ran them (re-run by the closed-loop replay).
        config: `SIConfig` (`segment` does not apply: episodes are replayed whole).
        space: the `ParamSpace` whose directions are fitted.
        fit: names of the directions fitted (default: every ModelField, SysFn and ObsBias).

    Returns:
        `SIResult` keyed by the space's direction names: `.interval(0.9)`, `.to_dr()` (a `DR`
        of `space` around the posterior, for `rollout_dr`), `.params` (the identified value
        vector, for `simulate_task` or `space.point`).

    Usage (run in `notebooks/hopper.ipynb` and `tests/sim/test_sysid_task.py`)::

        keys = jax.random.split(k, 8)
        _, eps = sim.simulate_task(None, task, policy, real_values, space=space, keys=keys, record=True)
        si = sim.identify(key, task, sim.TaskData.from_episodes(eps, keys), policy, space=space)
    """
    if not isinstance(task, Task):
        raise InputError("task", task, "a sim.Task (Task.from_brax(env, ...))")
    if not isinstance(space, ParamSpace):
        raise InputError("space", space, "the ParamSpace whose directions are fitted")
    config = _check_config(config or SIConfig())
    as_policy(policy)  # a policy, or InputError
    start = time.perf_counter()
    idx, coords = _coords(space, fit)
    obs, action, mask, keys, scale = _check_data(data, task, space)
    lat_dir = [d for d in space.directions if isinstance(d, Latency)]
    lats = tuple(sorted({int(x) for x in config.latencies if x <= lat_dir[0].max_steps})) if lat_dir else (0,)
    if not lats:
        raise InputError("si.latencies", config.latencies, f"latencies within 0..{lat_dir[0].max_steps}")
    nominal = jnp.asarray(np.where([isinstance(d, ObsNoise) for d in space.directions], 0.0, space.nominal),
                          jnp.float32)
    k_start, k_cem = jax.random.split(key)
    center = np.zeros(len(coords))
    theta0 = center + config.init_sd * np.asarray(jax.random.normal(k_start, (len(coords),)), np.float64)
    arrays = tuple(jnp.asarray(x) for x in (obs, mask, scale))
    passes = 0  # replays of the whole data set (a Jacobian evaluation counts as 2P + 1)

    lat_col = [i for i, d in enumerate(space.directions) if isinstance(d, Latency)]

    def closed(theta, latency):
        p, k = len(coords), obs.shape[0]
        th = theta[None] + STEP * np.concatenate([np.zeros((1, p)), np.eye(p), -np.eye(p)])
        vals = np.repeat(np.asarray(nominal, np.float64)[None], len(th), 0)
        for j, c in enumerate(coords):
            vals[:, idx[j]] = np.exp(th[:, j]) if c.log else c.nominal + c.unit * th[:, j]
        vals[:, lat_col] = latency
        _, ep = simulate_task(None, task, policy, np.repeat(vals, k, 0), space=space,
                              keys=jnp.concatenate([keys] * len(th)), record=True)
        sim = np.asarray(ep.seen, np.float64).reshape((len(th),) + obs.shape)
        r = np.where(mask[None, ..., None] > 0, (sim - obs[None]) / scale, 0.0).reshape(len(th), k, -1)
        return r[0], np.moveaxis((r[1:p + 1] - r[p + 1:]) / (2 * STEP), 0, -1)

    def fn(theta, latency):
        nonlocal passes
        passes += 1 + 2 * len(coords)
        if config.replay == "closed":
            return closed(np.asarray(theta, np.float64), float(latency))
        return _residuals(jnp.asarray(theta, jnp.float32), jnp.float32(latency), nominal, keys,
                          jnp.asarray(action), *arrays, task, space, idx, coords)

    n_values = float(mask.sum()) * obs.shape[-1]
    res = _fit_posterior(k_cem, fn, None, theta0, center, lats, config, n_values)
    mean, sd = {}, {}
    for i, c in enumerate(coords):
        s = np.sqrt(max(res.cov[i, i], 0.0))
        mean[c.name] = float(np.exp(res.theta[i])) if c.log else c.nominal + c.unit * float(res.theta[i])
        sd[c.name] = float(mean[c.name] * s) if c.log else float(c.unit * s)
    if lat_dir:
        mean[lat_dir[0].name], sd[lat_dir[0].name] = _latency_moments(res, lats)
    params = np.asarray(space.nominal, np.float64).copy()
    for n, v in mean.items():
        params[space.index(n)] = v
    k = obs.shape[0]
    return SIResult(params, mean, sd, res.cov, res.probs, res.loss, res.sigma2, res.method,
                    int(passes * mask.size), time.perf_counter() - start, res.covs, k - 1, lats,
                    np.asarray(theta0), coords, space)
