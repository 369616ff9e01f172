"""Policy training in sim: antithetic evolution strategies with Optax Adam on a linear policy.

Each iteration perturbs the 5 policy parameters with `population // 2` antithetic pairs,
evaluates every perturbed policy on the same `episodes` initial states, noise keys and ξ
draws (common random numbers), turns the fitness values into centred ranks and takes an
Adam step. All `population × episodes` episodes of an iteration go through the one
compiled rollout function (`population × episodes` = 256 = one chunk by default).

Brax's PPO (for a lab's own environment and network) runs through `bayes_s2r.sim.ppo.train_ppo`,
which supplies the `jax.device_put_replicated` that Brax's trainer still calls.

Generate the shipped nominal checkpoint with:

    python -m bayes_s2r.sim.train --out bayes_s2r/sim/checkpoints/nominal.npz
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bayes_s2r.compiling import LazyJit
from bayes_s2r.distributed.devices import batch_mesh
from bayes_s2r.errors import InputError, require_int, require_positive
from bayes_s2r.sim.params import DRSpec, broadcast_params, sample_params
from bayes_s2r.sim.rollout import LinearPolicy, _run_chunks, sample_init
from bayes_s2r.sim.world import World, make_world

__all__ = ["CEMConfig", "ESConfig", "TrainResult", "es_loop", "load_policy", "nominal_policy", "save_policy", "train_cem", "train_es"]


class ESConfig(NamedTuple):
    """Evolution-strategies settings.

    Attributes:
        population: perturbed policies per iteration (even; antithetic pairs).
        episodes: episodes per perturbed policy (shared across the population).
        sigma: perturbation scale in parameter space.
        learning_rate: Adam step size.
        iterations: number of updates.
    """

    population: int = 32
    episodes: int = 8
    sigma: float = 0.1
    learning_rate: float = 0.05
    iterations: int = 40


class TrainResult(NamedTuple):
    """Result of `train_es`.

    Attributes:
        policy: the trained `LinearPolicy` (the mean of the search distribution).
        fitness: mean fitness of the population at each iteration, np.ndarray [iterations].
        sim_steps: simulated control steps used (population × episodes × horizon × iterations).
        wall_s: measured wall-clock seconds.
    """

    policy: LinearPolicy
    fitness: np.ndarray
    sim_steps: int
    wall_s: float


def _check_config(config: ESConfig) -> ESConfig:
    for f in ("population", "episodes", "iterations"):
        require_int(f"es.{f}", getattr(config, f), 0 if f == "iterations" else 1)
    if config.population % 2:
        raise InputError("es.population", config.population, "an even number (antithetic pairs)")
    for f in ("sigma", "learning_rate"):
        require_positive(f"es.{f}", getattr(config, f))
    return config


@functools.partial(LazyJit, static_argnames=("population", "episodes"))
def _perturb(key, theta, sigma, population, episodes):
    """Antithetic population, tiled over episodes: thetas [P*E, 5] and eps [P/2, 5]."""
    eps = jax.random.normal(key, (population // 2, theta.shape[0]))
    thetas = jnp.concatenate([theta + sigma * eps, theta - sigma * eps])
    return jnp.repeat(thetas, episodes, axis=0), eps


@functools.partial(LazyJit, static_argnames=("population", "episodes", "horizon", "tx"))
def _update(stats, eps, theta, opt_state, sigma, population, episodes, horizon, tx):
    """Centred-rank ES gradient and one Adam step (maximising fitness)."""
    fit = stats.score + 0.5 * stats.steps_alive / horizon
    fit = fit.reshape(population, episodes).mean(axis=1)
    ranks = jnp.argsort(jnp.argsort(fit)).astype(jnp.float32)
    centred = ranks / (population - 1) - 0.5
    half = population // 2
    grad = ((centred[:half] - centred[half:])[:, None] * eps).sum(0) / (half * sigma)
    updates, opt_state = tx.update(-grad, opt_state, theta)
    return optax.apply_updates(theta, updates), opt_state, fit.mean()


@functools.cache
def _adam(learning_rate: float):
    return optax.adam(learning_rate)


def es_loop(key: jax.Array, theta: jax.Array, config: ESConfig, evaluate, horizon: int):
    """The ES loop around any evaluator: `evaluate(key, thetas [P*E, 5]) -> EpisodeStats`.

    Rows of `thetas` come in population blocks of `episodes` consecutive rows. Returns
    (theta, fitness history as np.ndarray).
    """
    config = _check_config(config)
    P, E = config.population, config.episodes
    tx = _adam(float(config.learning_rate))
    opt_state = tx.init(theta)
    history = []
    for _ in range(config.iterations):
        key, k_pop, k_eval = jax.random.split(key, 3)
        thetas, eps = _perturb(k_pop, theta, config.sigma, P, E)
        stats = evaluate(k_eval, thetas)
        theta, opt_state, fit = _update(stats, eps, theta, opt_state, config.sigma, P, E, horizon, tx)
        history.append(fit)
    return theta, (np.asarray(jnp.stack(history)) if history else np.zeros(0))


def _sim_evaluator(world: World, spec: DRSpec | None, P: int, E: int, devices: Any = None):
    """evaluate(key, thetas [P*E, 5]): P policies on the same E episodes (common random numbers)."""
    T = world.protocol.horizon
    mesh = None if devices is None else batch_mesh(devices)

    def evaluate(k, thetas):
        k_xi, k_init, k_noise = jax.random.split(k, 3)
        xi = sample_params(k_xi, spec, E) if spec is not None else broadcast_params(world.params, E)
        q0, qd0 = sample_init(k_init, world, E)
        noise = jax.random.split(k_noise, E)
        tile = lambda x: jnp.tile(x, (P,) + (1,) * (x.ndim - 1))
        batch = jax.tree.map(tile, (xi, q0, qd0, noise))
        exc = jnp.zeros((P * E, T) + ((world.act_size,) if world.act_size > 1 else ()), jnp.float32)
        policies = LinearPolicy.from_flat(thetas, world.act_size)
        return _run_chunks(world.env, world.protocol, policies, *batch, exc, False, mesh=mesh,
                           backend=world.backend)

    return evaluate


class CEMConfig(NamedTuple):
    """Cross-entropy-method settings for (re)training.

    Attributes:
        population: candidate policies per generation.
        episodes: episodes per candidate (shared across the population).
        elite: candidates kept to refit the search distribution.
        init_sd: initial standard deviation around the starting policy.
        iterations: generations.
    """

    population: int = 64
    episodes: int = 4
    elite: int = 8
    init_sd: float = 0.3
    iterations: int = 12


def train_cem(key: jax.Array, world: World, policy: LinearPolicy | None = None, *,
              spec: DRSpec | None = None, config: CEMConfig | None = None,
              devices: Any = None) -> TrainResult:
    """(Re)train a linear policy by the cross-entropy method, at ξ or under p_DR `spec`.

    CEM moves the search mean straight to the elite mean, so it crosses the narrow basin
    that a large latency leaves far faster than ES's small Adam steps; it is the retraining
    optimizer of the interventions. Returns the elite mean of the last generation; `devices`
    splits each generation's episodes over devices, as in `train_es`.
    """
    config = config or CEMConfig()
    for f in ("population", "episodes", "elite", "iterations"):
        require_int(f"cem.{f}", getattr(config, f), 1)
    if config.elite > config.population:
        raise InputError("cem.elite", config.elite, f"at most the population ({config.population})")
    start = time.perf_counter()
    P, E, T = config.population, config.episodes, world.protocol.horizon
    evaluate = _sim_evaluator(world, spec, P, E, devices)
    mean = (policy or LinearPolicy.zeros(world.obs_size, world.act_size)).flat().astype(jnp.float32)
    sd = jnp.full_like(mean, config.init_sd)
    history = []
    for _ in range(config.iterations):
        key, k_pop, k_eval = jax.random.split(key, 3)
        pop = mean + sd * jax.random.normal(k_pop, (P, mean.shape[0]))
        pop = pop.at[0].set(mean)  # keep the current mean in the running
        stats = evaluate(k_eval, jnp.repeat(pop, E, axis=0))
        fit = (stats.score + 0.5 * stats.steps_alive / T).reshape(P, E).mean(axis=1)
        elite = pop[jnp.argsort(-fit)[:config.elite]]
        mean, sd = elite.mean(axis=0), elite.std(axis=0) + 0.02
        history.append(float(fit.mean()))
    return TrainResult(LinearPolicy.from_flat(mean, world.act_size), np.asarray(history), P * E * T * config.iterations,
                       time.perf_counter() - start)


def train_es(key: jax.Array, world: World, policy: LinearPolicy | None = None, *,
             spec: DRSpec | None = None, config: ESConfig | None = None,
             devices: Any = None) -> TrainResult:
    """Train (or fine-tune) a linear policy in `world`, at its ξ or under p_DR `spec`.

    Every perturbed policy of an iteration meets the same initial states, noise keys and ξ
    draws (common random numbers); a new iteration draws new ones.

    Args:
        key: PRNG key.
        world: the sim world (its protocol sets horizon and success limits).
        policy: starting policy (zeros when None).
        spec: when given, every iteration draws a fresh ξ per episode from this DR spec.
        config: `ESConfig`.
        devices: split each iteration's episodes over these devices (see
            `bayes_s2r.distributed`); None runs on the default device. Same key, same result.

    Returns:
        `TrainResult`.

    Example:
        >>> import jax
        >>> from bayes_s2r.sim import make_world
        >>> w = make_world()
        >>> r = train_es(jax.random.key(0), w, config=ESConfig(population=4, episodes=2, iterations=1))
        >>> r.sim_steps
        1600
    """
    config = _check_config(config or ESConfig())
    start = time.perf_counter()
    theta = (policy or LinearPolicy.zeros(world.obs_size, world.act_size)).flat().astype(jnp.float32)
    P, E, T = config.population, config.episodes, world.protocol.horizon

    evaluate = _sim_evaluator(world, spec, P, E, devices)
    theta, fitness = es_loop(key, theta, config, evaluate, T)
    return TrainResult(LinearPolicy.from_flat(theta, world.act_size), fitness, P * E * T * config.iterations,
                       time.perf_counter() - start)


# ----------------------------------------------------------------------------- checkpoints

def save_policy(path: str | Path, policy: LinearPolicy, meta: dict | None = None) -> Path:
    """Write a policy (and JSON metadata) to an .npz file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, weights=np.asarray(policy.weights, np.float32), bias=np.asarray(policy.bias, np.float32),
             meta=np.array(json.dumps(meta or {}, sort_keys=True)))
    return path


def load_policy(name_or_path: str | Path) -> tuple[LinearPolicy, dict]:
    """(policy, metadata) from an .npz path or a shipped checkpoint name such as "nominal"."""
    path = Path(str(name_or_path))
    if not path.exists():
        shipped = resources.files("bayes_s2r.sim") / "checkpoints" / f"{name_or_path}.npz"
        if not shipped.is_file():
            raise InputError("checkpoint", str(name_or_path), "an .npz path or a shipped checkpoint name")
        path = Path(str(shipped))
    with np.load(path) as data:
        policy = LinearPolicy(jnp.asarray(data["weights"]), jnp.asarray(data["bias"]))
        meta = json.loads(str(data["meta"]))
    return policy, meta


def nominal_policy() -> LinearPolicy:
    """The shipped policy trained by ES in the nominal sim world."""
    return load_policy("nominal")[0]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Train the nominal linear policy by ES and save it.")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=80)
    args = parser.parse_args(argv)
    world = make_world()
    config = ESConfig(iterations=args.iterations)
    result = train_es(jax.random.key(args.seed), world, config=config)
    meta = {"world": world.name, "env": world.env, "seed": args.seed, "config": config._asdict(),
            "sim_steps": result.sim_steps, "final_fitness": float(result.fitness[-1])}
    save_policy(args.out, result.policy, meta)
    print(json.dumps({**meta, "wall_s": round(result.wall_s, 1),
                      "theta": np.asarray(result.policy.flat()).round(4).tolist()}))


if __name__ == "__main__":
    main()
