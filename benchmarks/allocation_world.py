"""A memoized Brax testbed for the allocation benchmark: real physics, computed once.

Why a table: one Brax intervention costs seconds to tens of seconds on a CPU, and the
benchmark runs 10 strategies x several worlds x 10 seeds of campaigns. The strategies differ
only in how they choose, so the worlds' physics can be shared: the policy reached by a
lineage (the sequence of adopted interventions applied from the nominal policy) is computed
once with Brax, by `bayes_s2r.sim.run_intervention` with a key fixed by the lineage, and its
true success rate J_real (and unsafe rate) is measured once on the hidden real world over
many episodes. Campaigns then observe binomial paired evaluations drawn around those true
values, so seeds differ in measurement noise, not in physics. The oracle reads the same
table. Nodes are computed lazily, when a campaign first reaches them, and stored in JSON
files under a cache directory, so a rerun is instant.

Interventions that never use the robot (DR) produce the same policy whatever the real world
is, so those lineages' policies are shared by every world; a lineage containing SI, real
fine-tuning or the sensor alignment (DA: `obs_align` reads the robot's sensors at rest, so
its policy depends on the world it read) is specific to its world. Only SI and fine-tuning
act on the robot and face the execution-safety gate.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bayes_s2r.belief.outcomes import BinomialPairedOutcome
from bayes_s2r.campaign.executor import Execution
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import DeploymentEval, ExecutionOutcome, PairedEval
from bayes_s2r.vocab import Candidate, Cost

__all__ = ["INTERVENTIONS", "WORLDS", "SyntheticTable", "TableExecutor", "TrueTable", "bench_candidates"]

#: The hidden real worlds: card name -> the dominant mismatch it stands for.
WORLDS = {
    "real_latency": "actuation latency (2 control steps)",
    "bench_dynamics": "dynamics parameters (pole mass x2, damping x0.5, gear x0.5)",
    "bench_obs_bias": "observation bias (pole angle +0.2 rad)",
    "bench_combo": "combination with synergy (angle bias 0.12 rad + gear x0.6)",
    "bench_bias_dynamics": "angle bias 0.15 rad + heavy, weakly driven pole: no single step reaches J = 1",
}

#: Candidate name -> (method, intervention kind, settings without `iterations`).
INTERVENTIONS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "dr_dynamics": ("DR", "dr_retrain", {"width": 1.5, "directions": ("mass", "damping", "gear")}),
    "dr_latency": ("DR", "dr_retrain", {"width": 1.0, "directions": ("latency",)}),
    "da_obs": ("DA", "obs_align", {"readings": 16}),
    "si_retrain": ("SI", "si_retrain", {"trajectories": 8, "si_iterations": 20}),
    "ft_real": ("FT", "real_finetune", {"episodes": 64}),
}
#: Candidates that act on the robot (execution risk, gated) and those that use it at all:
#: `da_obs` only reads the sensors at rest, but its policy depends on the world it read.
_ROBOT = {"si_retrain", "ft_real"}
_USES_ROBOT = _ROBOT | {"da_obs"}
_NOT_REPEATABLE = {"si_retrain", "da_obs"}   # a second alignment would shift the input twice
_SEP = ">"


def _eval_hours(episodes: int) -> float:
    return 2 * episodes * (200 * 0.04 + 20.0) / 3600  # both arms; horizon 8 s + reset 20 s


def bench_candidates(eval_episodes: int = 48, pilot_episodes: int = 0) -> tuple[Candidate, ...]:
    """The candidate set every strategy sees, priced before anything runs (as a team would).

    With `pilot_episodes` > 0 the set also holds one diagnosis per adaptation that does not
    act on the robot: `pilot_<m>` builds π^m as m would and runs a short paired evaluation of
    it against the deployed policy (`pilot_episodes` per arm) without deploying it. It
    observes m's gain; a later run of m from the same policy reuses the built π^m and is
    billed only its full evaluation. Only a rule that values information runs one: its gain
    is 0 by definition.
    """
    out = BinomialPairedOutcome(episodes=eval_episodes)
    ev = round(_eval_hours(eval_episodes), 3)
    targets = {"dr_dynamics": "gear", "dr_latency": "latency", "da_obs": "obs_bias", "si_retrain": "mass",
               "ft_real": "gear"}
    lens = {"DR": "data", "DA": "representation", "SI": "model", "FT": "optimization"}
    eng = {"DR": 2.0, "DA": 1.0, "SI": 6.0, "FT": 4.0}
    real = {"si_retrain": 8 * 28 / 3600, "ft_real": 64 * 28 / 3600, "da_obs": 16 * 20.04 / 3600}
    adaptations = tuple(
        Candidate(name, "adaptation", lens[method], method=method,
                  cost=Cost(real=round(real.get(name, 0.0) + ev, 3),
                            compute=0.02 if method in ("DR", "SI") else 0.0,
                            eng=eng[method]),
                  touches_robot=name in _ROBOT, repeatable=name not in _NOT_REPEATABLE, targets=targets[name],
                  outcome=out)
        for name, (method, _, _) in INTERVENTIONS.items())
    if isinstance(pilot_episodes, bool) or not isinstance(pilot_episodes, int) or pilot_episodes < 0:
        raise InputError("pilot_episodes", pilot_episodes, "a whole number >= 0 (0: no pilots)")
    if not pilot_episodes:
        return adaptations
    pilot_out, pilot_h = BinomialPairedOutcome(episodes=pilot_episodes), _eval_hours(pilot_episodes)
    pilots = tuple(
        Candidate(f"pilot_{c.name}", "diagnosis", c.lens, observes=c.name,
                  cost=Cost(real=round(real.get(c.name, 0.0) + pilot_h, 3), compute=c.cost.compute,
                            eng=c.cost.eng),
                  outcome=pilot_out)
        for c in adaptations if c.name not in _ROBOT)
    return adaptations + pilots


class TrueTable:
    """True J_real per (world, lineage), from Brax, computed on first use and cached.

    Args:
        cache_dir: folder of the JSON cache (None: memory only).
        train_iterations: CEM iterations of the sim retraining interventions.
        eval_episodes: episodes of each true-J measurement on the hidden world.
        seed: seed of every Brax computation (one key per lineage, folded from it).
    """

    def __init__(self, cache_dir: str | Path | None = None, *, train_iterations: int = 8,
                 eval_episodes: int = 512, seed: int = 0):
        for field, v in (("train_iterations", train_iterations), ("eval_episodes", eval_episodes)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(field, v, "a whole number >= 1")
        self.settings = {"train_iterations": train_iterations, "eval_episodes": eval_episodes, "seed": seed,
                         "interventions": {k: [m, kind, dict(p)] for k, (m, kind, p) in INTERVENTIONS.items()}}
        tag = hashlib.sha256(json.dumps(self.settings, sort_keys=True, default=list).encode()).hexdigest()[:10]
        self.path = None if cache_dir is None else Path(cache_dir) / f"allocation_table_{tag}.json"
        self.data: dict[str, Any] = {"settings": self.settings, "policies": {}, "evals": {}, "shakedown": {}}
        if self.path is not None and self.path.exists():
            self.data = json.loads(self.path.read_text())
        self.brax_seconds = 0.0
        self.computed = 0
        self._sim = None

    # ------------------------------------------------------------------ Brax side
    def _lazy_sim(self):
        if self._sim is None:
            from bayes_s2r import sim

            self._sim = {"sim": sim, "world": sim.load_card("sim_nominal"), "costs": sim.load_costs(), "robots": {}}
        return self._sim

    def _robot(self, world: str):
        s = self._lazy_sim()
        if world not in s["robots"]:
            s["robots"][world] = s["sim"].RealRobot(world)
        return s["robots"][world]

    def _save(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data))
            tmp.replace(self.path)

    @staticmethod
    def _scope(world: str, lineage: str) -> str:
        return world if any(step in _USES_ROBOT for step in lineage.split(_SEP) if step) else "sim"

    def _policy(self, world: str, lineage: str):
        s = self._lazy_sim()
        sim = s["sim"]
        if not lineage:
            return sim.nominal_policy()
        scope = self._scope(world, lineage)
        node = self.data["policies"].get(scope, {}).get(lineage)
        if node is None:
            parent, _, step = lineage.rpartition(_SEP)
            import jax

            _, kind, params = INTERVENTIONS[step]
            params = dict(params)
            if "iterations" in sim.interventions.DEFAULTS[kind]:  # the retraining kinds
                params["iterations"] = self.settings["train_iterations"]
            key = jax.random.fold_in(jax.random.key(self.settings["seed"]), zlib.crc32(lineage.encode()))
            start = time.perf_counter()
            result = sim.run_intervention(key, kind, params, self._policy(world, parent), s["world"],
                                          self._robot(world) if step in _USES_ROBOT else None, costs=s["costs"],
                                          name=step)
            wall = time.perf_counter() - start
            self.brax_seconds += wall
            self.computed += 1
            c = result.cost
            node = {"theta": np.asarray(result.policy.flat(), np.float64).round(7).tolist(),
                    "cost": [c.real, c.compute, c.eng], "real_episodes": int(result.info["real_episodes"]),
                    "unsafe": int(result.info["unsafe"]), "wall_s": round(wall, 2)}
            self.data["policies"].setdefault(scope, {})[lineage] = node
            self._save()
        return sim.LinearPolicy.from_flat(np.asarray(node["theta"], np.float32))

    def node(self, world: str, lineage: str) -> dict[str, Any]:
        """The true J_real, unsafe rate and cost of reaching `lineage` in `world` (Brax on first use)."""
        ev = self.data["evals"].setdefault(world, {})
        if lineage not in ev:
            import jax

            policy = self._policy(world, lineage)
            n = self.settings["eval_episodes"]
            start = time.perf_counter()
            run = self._robot(world).run(jax.random.key(self.settings["seed"] + 1), policy, n)
            self.brax_seconds += time.perf_counter() - start
            ev[lineage] = {"J": float(np.asarray(run.stats.success).mean()), "unsafe_rate": run.unsafe / n}
            self._save()
        out = dict(ev[lineage])
        if lineage:
            out["build"] = self.data["policies"][self._scope(world, lineage)][lineage]
        return out

    def J(self, world: str, lineage: str) -> float:
        return self.node(world, lineage)["J"]

    def worlds(self) -> list[str]:
        return list(WORLDS)

    def shakedown(self, world: str, candidates, episodes: int = 60) -> list[list]:
        """Supervised safety trials of the robot-touching candidates (Brax, cached)."""
        cached = self.data["shakedown"].get(world)
        if cached is None:
            import jax

            from bayes_s2r.campaign.testbed import TestbedExecutor

            ex = TestbedExecutor.__new__(TestbedExecutor)
            ex._sim, ex.robot = self._lazy_sim()["sim"], self._robot(world)
            recs = ex.shakedown(jax.random.key(self.settings["seed"]), candidates, episodes)
            cached = [[r.candidate, r.executions, r.unsafe] for r in recs]
            self.data["shakedown"][world] = cached
            self._save()
        return cached

    def describe(self) -> dict[str, Any]:
        """How the table was built (for the benchmark's JSON)."""
        return {
            "physics": "Brax inverted_pendulum (generalized backend); every node is a real run_intervention "
                       "from its parent policy, J_real measured on the hidden world's card",
            "settings": self.settings, "cache": None if self.path is None else self.path.name,
            "policies_computed": {k: len(v) for k, v in self.data["policies"].items()},
            "nodes_evaluated": {k: len(v) for k, v in self.data["evals"].items()},
            "brax_seconds_this_run": round(self.brax_seconds, 1), "interventions_run_this_run": self.computed,
        }


class SyntheticTable:
    """A closed-form stand-in for `TrueTable` (no physics): each step recovers a share of the
    headroom, `lift[world][step]`. For smoke tests and quick checks of the benchmark code.
    """

    def __init__(self, lift: Mapping[str, Mapping[str, float]], start_J: float = 0.3):
        self.lift, self.start_J = lift, start_J

    def node(self, world: str, lineage: str) -> dict[str, Any]:
        J, build = self.start_J, None
        for step in (s for s in lineage.split(_SEP) if s):
            share = self.lift[world].get(step, 0.0)
            J = J + share * (1 - J) if share >= 0 else J * (1 + share)
            build = {"cost": [0.0, 0.01, 2.0], "real_episodes": 16 if step in _ROBOT else 0,
                     "unsafe": 2 if step == "ft_real" else 0}
        out = {"J": J, "unsafe_rate": 0.0}
        if build is not None:
            out["build"] = build
        return out

    def J(self, world: str, lineage: str) -> float:
        return self.node(world, lineage)["J"]

    def worlds(self) -> list[str]:
        return list(self.lift)

    def shakedown(self, world: str, candidates, episodes: int = 60) -> list[list]:
        return [[c.name, episodes, 0] for c in candidates if c.touches_robot]

    def describe(self) -> dict[str, Any]:
        return {"physics": "none: closed-form synthetic gains (smoke-test setting)", "lift": dict(self.lift)}


def _rng(rng_key) -> np.random.Generator:
    import jax

    return np.random.default_rng(np.asarray(jax.random.key_data(rng_key)).tolist())


class TableExecutor:
    """Runs campaigns on a `TrueTable`: binomial evidence around the true values of `world`.

    Policies are named "pi0", "pi1", ...; the memory maps each to its lineage.
    """

    def __init__(self, table: TrueTable, world: str, *, eval_episodes: int = 48):
        self.table, self.world, self.eval_episodes = table, world, eval_episodes

    def initial_policy(self) -> str:
        return "pi0"

    @staticmethod
    def lineage(policy: str, memory: Mapping[str, Any]) -> str:
        return str(memory.get("lineage", {}).get(policy, ""))

    def true_gains(self, state, ledger) -> dict[str, float]:
        """True ΔJ of every adaptation at the deployed policy (what the oracle reads)."""
        from bayes_s2r.campaign.loop import executor_memory

        lin = self.lineage(state.policy, executor_memory(ledger))
        j0 = self.table.J(self.world, lin)
        return {c.name: self.table.J(self.world, _child(lin, c.name)) - j0
                for c in state.candidates if c.role == "adaptation"}

    def execute(self, rng_key, candidate: Candidate, *, round: int, policy: str,
                memory: Mapping[str, Any]) -> Execution:
        pilot = candidate.role == "diagnosis"  # the only diagnoses here are pilots
        step = candidate.observes if pilot else candidate.name
        if step not in INTERVENTIONS:
            raise InputError("candidate", candidate.name,
                             f"one of {sorted(INTERVENTIONS)} or a pilot of one (pilot_<name>)")
        rng = _rng(rng_key)
        lin = self.lineage(policy, memory)
        child = _child(lin, step)
        parent, node = self.table.node(self.world, lin), self.table.node(self.world, child)
        n = candidate.outcome.episodes if pilot else self.eval_episodes
        records = [PairedEval(step, int(rng.binomial(n, node["J"])), n,
                              int(rng.binomial(n, parent["J"])), n, round=round, policy=policy)]
        build = node["build"]
        built = list(memory.get("built", []))
        # π^m is built once per (policy, m): after a pilot, running m costs only its evaluation
        real, compute, eng = (0.0, 0.0, 0.0) if child in built else build["cost"]
        cost = Cost(real=real + _eval_hours(n), compute=compute, eng=eng)
        if pilot:
            return Execution(tuple(records), cost, None, (), {"built": sorted({*built, child})})
        if candidate.touches_robot:
            runs = build["real_episodes"]
            unsafe = int(rng.binomial(runs, build["unsafe"] / max(runs, 1)))
            records.append(ExecutionOutcome(candidate.name, runs, unsafe, round=round))
        name = f"pi{round + 1}"
        lineage = dict(memory.get("lineage", {}))
        lineage[name] = child
        return Execution(tuple(records), cost, name, (), {"lineage": lineage})

    def evaluate_deployment(self, rng_key, *, round: int, policy: str, episodes: int,
                            memory: Mapping[str, Any]) -> DeploymentEval:
        rng = _rng(rng_key)
        node = self.table.node(self.world, self.lineage(policy, memory))
        return DeploymentEval(policy, episodes, int(rng.binomial(episodes, node["J"])),
                              int(rng.binomial(episodes, node["unsafe_rate"])), round=round)

    def deployment_record(self, episodes: int, seed: int) -> DeploymentEval:
        """The starting policy's deployment record: `episodes` episodes on the hidden world."""
        import jax

        key = jax.random.fold_in(jax.random.key(seed), 0x5EED)  # apart from the campaign's round keys
        return self.evaluate_deployment(key, round=0, policy=self.initial_policy(), episodes=episodes, memory={})

    def shakedown_records(self, candidates) -> tuple[ExecutionOutcome, ...]:
        return tuple(ExecutionOutcome(name, n, u, round=0) for name, n, u in self.table.shakedown(self.world, candidates))


def history_records(table, world: str, candidates, *, episodes: int, seed: int) -> list[PairedEval]:
    """A past campaign on `world`: one paired evaluation of every adaptation from its starting
    policy (`episodes` per arm, binomial around the table's true J). The benchmark fits the
    team's gain prior from such histories of the other worlds (`--gain-prior history`)."""
    rng = np.random.default_rng([seed, *world.encode()])
    j0 = table.J(world, "")
    return [PairedEval(c.name, int(rng.binomial(episodes, table.J(world, c.name))), episodes,
                       int(rng.binomial(episodes, j0)), episodes, policy="pi0")
            for c in candidates if c.role == "adaptation"]


def _child(lineage: str, step: str) -> str:
    return f"{lineage}{_SEP}{step}" if lineage else step


def true_J_of(table: TrueTable, world: str, policy: str, memory: Mapping[str, Any]) -> float:
    """True J_real of a campaign's deployed policy."""
    j = table.J(world, TableExecutor.lineage(policy, memory))
    return float(j) if math.isfinite(j) else float("nan")
