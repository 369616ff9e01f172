"""Executors run a chosen candidate and report what happened.

An executor is the campaign's only contact with the world: the Brax testbed's, a
synthetic one for fast tests, or a lab's own callback that drives a real robot. It must
be deterministic given its PRNG key and the state it is handed, so that a resumed
campaign repeats an interrupted round exactly.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

import numpy as np

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import (
    DeploymentEval,
    ExecutionOutcome,
    PairedEval,
    Record,
    SensitivityTrial,
)
from bayes_s2r.vocab import Candidate, Cost

__all__ = ["Execution", "Executor", "SyntheticExecutor", "SyntheticWorld"]


class Execution(NamedTuple):
    """What running one candidate produced.

    Attributes:
        records: evidence for the ledger (paired evaluations, sensitivity trials, execution
            outcomes, SI estimates), all with the round they were measured in.
        cost: the realized cost ΔC.
        policy: for an adaptation, the id of its policy π^m (adopted or not by the loop
            according to its paired evaluation); None otherwise.
        new_candidates: candidates a diagnosis adds to the set (e.g. SI along a direction
            that a sensitivity sweep found to dominate).
        memory: executor state to persist with the round (e.g. policy parameters), as
            JSON-ready data; handed back to the executor on every later call.
    """

    records: tuple[Record, ...]
    cost: Cost
    policy: str | None = None
    new_candidates: tuple[Candidate, ...] = ()
    memory: Mapping[str, Any] = {}


class Executor(Protocol):
    """What the campaign loop needs from a world."""

    def initial_policy(self) -> str:
        """The id of the policy deployed before the campaign starts."""

    def execute(self, rng_key, candidate: Candidate, *, round: int, policy: str,
                memory: Mapping[str, Any]) -> Execution:
        """Run `candidate` once under the deployed `policy`; return its evidence and cost."""

    def evaluate_deployment(self, rng_key, *, round: int, policy: str, episodes: int,
                            memory: Mapping[str, Any]) -> DeploymentEval:
        """Evaluate `policy` under deployment conditions (its own episodes)."""


# --------------------------------------------------------------------------- synthetic

@dataclasses.dataclass(frozen=True)
class SyntheticWorld:
    """A world with known answers, for tests and quick experiments.

    Args:
        start_J: true success rate of the initial policy.
        lift: per adaptation, the share of the remaining headroom (1 − J) it recovers each
            time it runs, so gains shrink as the policy improves.
        unsafe_rate: per robot-touching candidate, the chance that one execution is unsafe.
        sensitivity: per mismatch direction, the logit drop of J at level 1.
        deploy_unsafe_rate: chance that one deployment episode is unsafe.
    """

    start_J: float = 0.3
    lift: Mapping[str, float] = dataclasses.field(default_factory=dict)
    unsafe_rate: Mapping[str, float] = dataclasses.field(default_factory=dict)
    sensitivity: Mapping[str, float] = dataclasses.field(default_factory=dict)
    deploy_unsafe_rate: float = 0.0

    def __post_init__(self):
        if not 0.0 < self.start_J < 1.0:
            raise InputError("world.start_J", self.start_J, "a probability strictly between 0 and 1")
        for name, v in self.lift.items():
            if not -1.0 <= v <= 1.0:
                raise InputError(f"world.lift.{name}", v, "a share of headroom in [-1, 1]")
        for name, v in {**self.unsafe_rate, "deploy": self.deploy_unsafe_rate}.items():
            if not 0.0 <= v <= 1.0:
                raise InputError(f"world.unsafe_rate.{name}", v, "a probability in [0, 1]")

    def true_gain(self, name: str, J: float) -> float:
        """The true ΔJ of adaptation `name` applied to a policy with success rate J."""
        lift = self.lift.get(name, 0.0)
        return lift * (1.0 - J) if lift >= 0 else lift * J


def _rng(rng_key) -> np.random.Generator:
    import jax

    return np.random.default_rng(np.asarray(jax.random.key_data(rng_key)).tolist())


class SyntheticExecutor:
    """Runs candidates in a `SyntheticWorld`: binomial paired evaluations, sensitivity
    trials and unsafe events drawn from known rates (a safety probe records its executions
    of the candidate it observes, at that candidate's unsafe rate). Policies are named "pi0", "pi1", …
    and their true success rates are kept in the persisted memory.
    """

    def __init__(self, world: SyntheticWorld, *, eval_episodes: int = 50, sweep_episodes: int = 40):
        self.world = world
        self.eval_episodes = eval_episodes
        self.sweep_episodes = sweep_episodes

    def initial_policy(self) -> str:
        return "pi0"

    def _J(self, policy: str, memory: Mapping[str, Any]) -> float:
        return float(memory.get("true_J", {}).get(policy, self.world.start_J))

    def execute(self, rng_key, candidate, *, round, policy, memory):
        rng = _rng(rng_key)
        J = self._J(policy, memory)
        n = getattr(candidate.outcome, "episodes", self.eval_episodes)
        records: list[Record] = []
        new_policy, new_memory = None, {}
        if candidate.role == "adaptation":
            J_new = float(np.clip(J + self.world.true_gain(candidate.name, J), 0.0, 1.0))
            new_policy = f"pi{round + 1}"
            records.append(PairedEval(candidate.name, int(rng.binomial(n, J_new)), n,
                                      int(rng.binomial(n, J)), n, round=round, policy=policy))
            true_J = dict(memory.get("true_J", {}))
            true_J[new_policy] = J_new
            new_memory = {"true_J": true_J}
        elif candidate.observed_direction is not None:
            k = candidate.observed_direction
            drop = self.world.sensitivity.get(k, 0.0)
            logit = math.log(J / (1 - J))
            for level in (0.0, 0.5, 1.0):
                p = 1.0 / (1.0 + math.exp(-(logit - drop * level)))
                records.append(SensitivityTrial(k, level, int(rng.binomial(self.sweep_episodes, p)),
                                                self.sweep_episodes, tier="proxy", policy=policy,
                                                round=round))
        elif candidate.observed_safety is not None:
            # a safety probe: short supervised runs of the candidate it observes, whose
            # unsafe events measure that candidate's execution risk
            target = candidate.observed_safety
            runs = int(candidate.outcome.params()[1]) if candidate.outcome is not None else n
            unsafe = int(rng.binomial(runs, self.world.unsafe_rate.get(target, 0.0)))
            records.append(ExecutionOutcome(target, runs, unsafe, round=round))
            return Execution(tuple(records), candidate.cost, None, (), {})
        elif candidate.role == "diagnosis":
            observed = candidate.observes
            J_obs = float(np.clip(J + self.world.true_gain(observed, J), 0.0, 1.0))
            records.append(PairedEval(observed, int(rng.binomial(n, J_obs)), n,
                                      int(rng.binomial(n, J)), n, round=round, policy=policy))
        if candidate.touches_robot:
            runs = n
            unsafe = int(rng.binomial(runs, self.world.unsafe_rate.get(candidate.name, 0.0)))
            records.append(ExecutionOutcome(candidate.name, runs, unsafe, round=round))
        return Execution(tuple(records), candidate.cost, new_policy, (), new_memory)

    def evaluate_deployment(self, rng_key, *, round, policy, episodes, memory):
        rng = _rng(rng_key)
        J = self._J(policy, memory)
        return DeploymentEval(policy, episodes, int(rng.binomial(episodes, J)),
                              int(rng.binomial(episodes, self.world.deploy_unsafe_rate)), round=round)
