"""The standard interventions: each returns a new policy, its realized cost and its records.

| kind            | lens           | what it does                                                    |
| --------------- | -------------- | --------------------------------------------------------------- |
| `si_retrain`    | model          | log excited real episodes, identify ξ, retrain in the fitted sim |
|                 |                | (with `dr_around_fit` > 0: under DR around the SI posterior)     |
| `dr_retrain`    | data           | retrain under uniform DR of the given width (in levels)          |
| `obs_augment`   | representation | retrain with randomized observation noise and angle bias        |
| `obs_align`     | representation | zero the sensors: real vs sim readings at rest, shift the input |
| `real_finetune` | optimization   | ES directly on the robot with a given number of real episodes   |

`si_retrain` with `dr_around_fit = s` retrains under `SIResult.to_dr(scale=s)`: each fitted
scale drawn from a normal at its estimate with s × its posterior sd, the latency from a
rounded normal likewise ("SI, then DR around the identified posterior"). With
`collect_horizon = h` its data are collected in episodes of h control steps (a safer
data-collection protocol than the full evaluation episode, charged by their length).

`dr_retrain` randomizes the latency by default (width 1.0 = uniform over {0, 1, 2} steps);
pass `directions` to add mass, damping or gear (a four-direction DR needs more iterations to
reach a latency of 2 steps). Retraining in sim uses the cross-entropy method (`train_cem`, warm-started at the current
policy): ES's small Adam steps take too long to cross into the narrow stable region that a
2-step latency leaves; CEM gets there in about a dozen generations.

Costs (`Cost(real, compute, eng)`, see `cards/costs.toml`):
- real: robot-hours the `RealRobot` charged (horizon × control period + reset overhead,
  per episode);
- compute: simulated control steps / `sim_steps_per_hour` (a deterministic model; the
  measured wall time is in `info["wall_s"]`);
- eng: engineering hours per kind from the cost card.

Everything that acts on the robot (SI data collection, fine-tuning) also yields an
`ExecutionOutcome` with the number of unsafe episodes. `obs_align` uses the robot without
acting on it: it reads the sensors after resets (`RealRobot.read_at_rest`), compares them
with the sim's readings at rest, and moves the policy's input by the offsets that are
significant (a two-sample z-test per channel): a = W·(obs − o) + b, i.e. b' = b − W·o. No
retraining, so it fixes a sensor offset exactly and leaves everything else alone.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.errors import InputError, require_finite_nonneg, require_int, require_positive
from bayes_s2r.evidence.records import ExecutionOutcome, RealizedCost
from bayes_s2r.sim.params import DRSpec
from bayes_s2r.sim.real import read_at_rest
from bayes_s2r.sim.robot import is_robot, require_robot
from bayes_s2r.sim.rollout import LinearPolicy, policy_id
from bayes_s2r.sim.sysid import SIConfig, identify
from bayes_s2r.sim.train import CEMConfig, ESConfig, es_loop, train_cem
from bayes_s2r.sim.world import World
from bayes_s2r.vocab import Cost, check_shared_interface

__all__ = ["DEFAULTS", "KINDS", "CostModel", "InterventionResult", "load_costs", "run_intervention"]

KINDS = ("si_retrain", "dr_retrain", "obs_augment", "obs_align", "real_finetune")

#: Default parameters per kind (small: each runs in seconds on 2 cores once compiled).
DEFAULTS: Mapping[str, Mapping[str, Any]] = MappingProxyType({kind: MappingProxyType(d) for kind, d in {
    "si_retrain": {"trajectories": 8, "excitation": 0.3, "si_iterations": 40, "method": "gradient",
                   "iterations": 16, "dr_around_fit": 0.0, "collect_horizon": None},
    "dr_retrain": {"width": 1.0, "directions": ("latency",), "sim_steps": None, "iterations": 16},
    "obs_augment": {"noise_level": 1.0, "bias_level": 1.0, "sim_steps": None, "iterations": 16},
    "obs_align": {"readings": 16, "z": 3.0},
    "real_finetune": {"episodes": 64, "population": 8, "sigma": 0.05, "learning_rate": 0.02},
}.items()})


@dataclasses.dataclass(frozen=True)
class CostModel:
    """How interventions are priced (see the module docstring)."""

    reset_overhead_s: float = 20.0
    sim_steps_per_hour: float = 3.6e8
    eng_hours: Mapping[str, float] = dataclasses.field(default_factory=lambda: {k: 0.0 for k in KINDS})

    def __post_init__(self):
        require_finite_nonneg("costs.reset_overhead_s", self.reset_overhead_s)
        if not require_finite_nonneg("costs.sim_steps_per_hour", self.sim_steps_per_hour) > 0:
            raise InputError("costs.sim_steps_per_hour", self.sim_steps_per_hour, "a number > 0")
        for k, v in self.eng_hours.items():
            if k not in KINDS:
                raise InputError(f"costs.eng_hours.{k}", v, f"a key among {KINDS}")
            require_finite_nonneg(f"costs.eng_hours.{k}", v)

    def compute_hours(self, sim_steps: int) -> float:
        return sim_steps / self.sim_steps_per_hour


def load_costs(path: str | Path | None = None) -> CostModel:
    """The cost model from a TOML file (default: the shipped `cards/costs.toml`)."""
    text = Path(path).read_text() if path else (resources.files("bayes_s2r.sim") / "cards" / "costs.toml").read_text()
    data = tomllib.loads(text)
    return CostModel(reset_overhead_s=float(data.get("robot", {}).get("reset_overhead_s", 20.0)),
                     sim_steps_per_hour=float(data.get("compute", {}).get("sim_steps_per_hour", 3.6e8)),
                     eng_hours={k: float(v) for k, v in data.get("eng_hours", {}).items()})


class InterventionResult(NamedTuple):
    """Result of `run_intervention`.

    Attributes:
        policy: the new policy.
        cost: realized `Cost` (real robot-hours, compute hours, engineering hours).
        records: evidence records (always a `RealizedCost`; `SystemIdRecord` for SI;
            `ExecutionOutcome` when the robot was used).
        info: extras: wall_s, sim_steps, real_episodes, unsafe, and kind-specific entries.
    """

    policy: LinearPolicy
    cost: Cost
    records: tuple
    info: dict


#: What each robot-using kind needs of the robot beyond `run` and `hours_used`.
_ROBOT_MEMBERS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "si_retrain": ("collect",), "real_finetune": (), "obs_align": ("read_at_rest",)})


def _merge(kind: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    if params is not None and not isinstance(params, Mapping):
        raise InputError("params", params, "a mapping of intervention settings or None")
    out = dict(DEFAULTS[kind])
    for k, v in (params or {}).items():
        if k not in out:
            raise InputError(f"params.{k}", v, f"a setting of {kind} among {sorted(out)}")
        out[k] = v
    for k in ("trajectories", "iterations", "si_iterations", "episodes", "population"):
        if k in out:
            require_int(f"params.{k}", out[k], 1)
    if kind == "si_retrain":  # the fit's spread is estimated across episodes
        require_int("params.trajectories", out["trajectories"], 2)
        require_finite_nonneg("params.dr_around_fit", out["dr_around_fit"])
        if out["collect_horizon"] is not None:
            require_int("params.collect_horizon", out["collect_horizon"], 2)
    if "readings" in out:
        require_int("params.readings", out["readings"], 2)
    if out.get("sim_steps") is not None:
        require_positive("params.sim_steps", out["sim_steps"])
    return out


def _iterations(p: dict, config: CEMConfig, horizon: int) -> int:
    if p.get("sim_steps") is None:
        return p["iterations"]
    return max(1, round(p["sim_steps"] / (config.population * config.episodes * horizon)))


def _check_short_collection(robot: Any, horizon: int) -> None:
    """A short collection protocol needs a robot whose `collect` takes `horizon=` (checked
    before anything runs, so a rejected setting charges nothing)."""
    try:
        params = inspect.signature(robot.collect).parameters
    except (TypeError, ValueError):  # a callable without a signature: let the call decide
        return
    takes = "horizon" in params or any(q.kind is inspect.Parameter.VAR_KEYWORD for q in params.values())
    if not takes:
        raise InputError("real_robot.collect", robot.collect, "a collect(..., horizon=...) for params.collect_horizon")
    protocol = getattr(robot, "protocol", None)
    if protocol is not None and horizon > protocol.horizon:
        raise InputError("params.collect_horizon", horizon, f"at most the robot's horizon {protocol.horizon}")


def run_intervention(key: jax.Array, kind: str, params: Mapping[str, Any] | None, policy: LinearPolicy,
                     sim_world: World, real_robot: Any, *, costs: CostModel | None = None,
                     name: str | None = None, round: int = 0) -> InterventionResult:
    """Run one intervention and price it.

    Args:
        key: PRNG key.
        kind: one of `KINDS`.
        params: settings overriding `DEFAULTS[kind]` (unknown keys are rejected).
        policy: the current policy (the starting point).
        sim_world: the nominal sim world.
        real_robot: the robot, needed by si_retrain, real_finetune and obs_align: a `RealRobot`
            or any object with the members of `bayes_s2r.sim.robot.Robot` (si_retrain also
            needs `collect`, obs_align `read_at_rest`; an `interface`, when present, must
            match the sim's).
        costs: the cost model (default: the shipped cost card).
        name: candidate name in the records (default: `kind`).
        round: campaign round in the records.
    """
    if kind not in KINDS:
        raise InputError("kind", kind, f"one of {KINDS}")
    p = _merge(kind, params)
    costs = costs or load_costs()
    name = name or kind
    needs_robot = kind in ("si_retrain", "real_finetune")
    if kind in _ROBOT_MEMBERS:
        require_robot("real_robot", real_robot, _ROBOT_MEMBERS[kind], kind)
        interface = getattr(real_robot, "interface", None)
        if interface is not None:
            check_shared_interface(sim_world.interface, interface)
    if kind == "si_retrain" and p["collect_horizon"] is not None:
        _check_short_collection(real_robot, p["collect_horizon"])
    start = time.perf_counter()
    hours0 = float(real_robot.hours_used) if is_robot(real_robot) else 0.0
    T, act_size = sim_world.protocol.horizon, sim_world.act_size
    records: list = []
    info: dict[str, Any] = {"kind": kind, "settings": p}
    real_episodes, unsafe = 0, 0

    if kind == "si_retrain":
        k_col, k_si, k_tr = jax.random.split(key, 3)
        # a separate, safer data-collection protocol: short episodes (the robot's `collect`
        # must then accept `horizon`, as `RealRobot.collect` does)
        short, si_world = {}, sim_world
        if p["collect_horizon"] is not None:
            short = {"horizon": p["collect_horizon"]}
            si_world = dataclasses.replace(
                sim_world, protocol=dataclasses.replace(sim_world.protocol, horizon=p["collect_horizon"]))
        data = real_robot.collect(k_col, policy, p["trajectories"], excitation=float(p["excitation"]), **short)
        real_episodes, unsafe = p["trajectories"], data.run.unsafe
        si = identify(k_si, si_world, data, policy, SIConfig(method=p["method"], iterations=p["si_iterations"]))
        records.append(si.record(name, p["trajectories"], round, policy_id(policy)))
        fitted = sim_world.with_params(si.params)
        if p["dr_around_fit"] > 0:  # SI, then DR around the identified posterior
            spec = si.to_dr(scale=float(p["dr_around_fit"]))
            config = CEMConfig(population=32, episodes=8, elite=4, iterations=p["iterations"])
            trained = train_cem(k_tr, fitted, policy, spec=spec, config=config)
            info.update(spec=spec)
        else:
            trained = train_cem(k_tr, fitted, policy, config=CEMConfig(iterations=p["iterations"]))
        sim_steps = si.sim_steps + trained.sim_steps
        info.update(si=si, fitness=trained.fitness)
        new_policy = trained.policy
    elif kind in ("dr_retrain", "obs_augment"):
        if kind == "dr_retrain":
            width = require_finite_nonneg("params.width", p["width"])
            spec = DRSpec.from_levels({d: width for d in p["directions"]}, center=sim_world.params)
        else:
            spec = DRSpec.from_levels({"obs_noise": require_finite_nonneg("params.noise_level", p["noise_level"]),
                                       "obs_bias": require_finite_nonneg("params.bias_level", p["bias_level"])},
                                      center=sim_world.params)
        # DR needs more episodes per candidate than a fixed ξ: rank by 8 shared draws of ξ.
        config = CEMConfig(population=32, episodes=8, elite=4)
        config = config._replace(iterations=_iterations(p, config, T))
        trained = train_cem(key, sim_world, policy, spec=spec, config=config)
        sim_steps = trained.sim_steps
        info.update(spec=spec, fitness=trained.fitness)
        new_policy = trained.policy
    elif kind == "obs_align":
        k_real, k_sim = jax.random.split(key)
        z = require_finite_nonneg("params.z", p["z"])
        real = real_robot.read_at_rest(k_real, p["readings"])
        sim = read_at_rest(k_sim, sim_world, p["readings"])
        offset = real.mean(0) - sim.mean(0)
        se = np.sqrt(real.var(0, ddof=1) / len(real) + sim.var(0, ddof=1) / len(sim))
        offset = np.where(np.abs(offset) > z * se, offset, 0.0).astype(np.float32)
        w = jnp.asarray(policy.weights)
        new_policy = LinearPolicy(w, jnp.asarray(policy.bias) - w @ offset)
        sim_steps = 2 * len(real)
        info.update(offset=offset, offset_se=se)
    else:  # real_finetune: ES on the robot, one episode per perturbed policy
        population = p["population"] + p["population"] % 2
        iters = max(1, p["episodes"] // population)
        config = ESConfig(population=population, episodes=1, sigma=float(p["sigma"]),
                          learning_rate=float(p["learning_rate"]), iterations=iters)
        runs = []

        def evaluate(k, thetas):
            run = real_robot.run(k, LinearPolicy.from_flat(thetas, act_size), thetas.shape[0])
            runs.append(run)
            return jax.tree.map(jnp.asarray, run.stats)

        theta, fitness = es_loop(key, policy.flat().astype(jnp.float32), config, evaluate, T)
        real_episodes = population * iters
        unsafe = sum(r.unsafe for r in runs)
        sim_steps = 0
        info.update(fitness=fitness)
        new_policy = LinearPolicy.from_flat(theta, act_size)

    if needs_robot:
        records.append(ExecutionOutcome(candidate=name, executions=real_episodes, unsafe=unsafe, round=round))
    real_hours = (float(real_robot.hours_used) - hours0) if is_robot(real_robot) else 0.0
    cost = Cost(real=real_hours, compute=costs.compute_hours(sim_steps),
                eng=float(costs.eng_hours.get(kind, 0.0)))
    records.append(RealizedCost(candidate=name, round=round, real=cost.real, compute=cost.compute, eng=cost.eng))
    info.update(wall_s=time.perf_counter() - start, sim_steps=int(sim_steps), real_episodes=real_episodes,
                unsafe=unsafe)
    return InterventionResult(new_policy, cost, tuple(records), info)
