"""The Brax testbed as a campaign executor: a nominal sim world and a hidden "real" robot.

Candidates map to the testbed's interventions by `method`:

| method | intervention     | batch means                         | touches the robot |
| ------ | ---------------- | ----------------------------------- | ----------------- |
| SI     | `si_retrain`     | real trajectories logged for the fit | yes (data logging) |
| DR     | `dr_retrain`     | randomization width, in levels       | no                |
| DA     | `obs_augment`    | noise/bias augmentation level        | no                |
| FT     | `real_finetune`  | real fine-tuning episodes            | yes               |

A diagnosis observing "sensitivity:<k>" runs a proxy-tier sweep of the deployed policy in
sim along every direction (so one sweep informs every Ŝ_k). Every adaptation is followed
by a paired evaluation of the new policy against the deployed one on the robot (matched
seeds, charged in robot-hours): its realized gain ΔĴ.

Policies are persisted in the ledger (executor memory) as flat parameter lists, so a
resumed campaign continues with exactly the policies it had. The safety shakedown before
the first round is a committed step of its own (`run_shakedown`), so a campaign killed
during it runs it again on resume instead of deciding without its evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from bayes_s2r.belief.outcomes import BinomialPairedOutcome
from bayes_s2r.campaign.executor import Execution
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import DeploymentEval, ExecutionOutcome, RealizedCost, Record
from bayes_s2r.vocab import Candidate, Cost

__all__ = ["METHOD_KINDS", "TestbedExecutor", "run_shakedown", "testbed_candidates"]

METHOD_KINDS = {"SI": "si_retrain", "DR": "dr_retrain", "DA": "obs_augment", "FT": "real_finetune"}
_INITIAL = "pi0"


def testbed_candidates(eval_episodes: int = 48) -> tuple[Candidate, ...]:
    """The default candidate set of the cart-pole testbed, priced by its cost card.

    Costs are the planning estimates a team would write down before running anything:
    engineering hours from the cost card, robot-hours of data logging / fine-tuning plus
    the paired evaluation on the robot, and compute from the simulated steps.
    """
    out = BinomialPairedOutcome(episodes=eval_episodes)
    eval_h = 2 * eval_episodes * (200 * 0.04 + 20.0) / 3600  # both arms, horizon 8 s + reset 20 s
    return (
        Candidate("si_retrain", "adaptation", "model", method="SI", batch=8,
                  cost=Cost(real=round(8 * 28 / 3600 + eval_h, 3), compute=0.02, eng=6.0),
                  touches_robot=True, repeatable=False, targets="mass", outcome=out),
        Candidate("dr_latency", "adaptation", "data", method="DR", batch=1.0,
                  cost=Cost(real=round(eval_h, 3), compute=0.02, eng=2.0), targets="latency", outcome=out),
        Candidate("dr_wide", "adaptation", "data", method="DR", batch=2.0,
                  cost=Cost(real=round(eval_h, 3), compute=0.02, eng=2.0), targets="latency", outcome=out),
        Candidate("da_obs", "adaptation", "representation", method="DA", batch=1.0,
                  cost=Cost(real=round(eval_h, 3), compute=0.02, eng=2.0), targets="obs_bias", outcome=out),
        Candidate("ft_real", "adaptation", "optimization", method="FT", batch=64,
                  cost=Cost(real=round(64 * 28 / 3600 + eval_h, 3), compute=0.0, eng=4.0),
                  touches_robot=True, targets="latency", outcome=out),
        Candidate("sweep", "diagnosis", "model", observes="sensitivity:latency",
                  cost=Cost(compute=0.01, eng=0.5)),
    )


class TestbedExecutor:
    """Runs candidates on the Brax testbed (see the module docstring).

    Args:
        real: the hidden real world: a card name ("real_latency", "real_dynamics",
            "real_obs_bias", "real_combo") or a `World`.
        eval_episodes: episodes per arm of each paired evaluation on the robot.
        sweep_episodes: episodes per condition of a sensitivity sweep (in sim).
        train_iterations: ES iterations of the sim retraining interventions.
    """

    __test__ = False  # not a pytest class despite the name

    def __init__(self, real: Any = "real_latency", *, eval_episodes: int = 48, sweep_episodes: int = 32,
                 train_iterations: int = 30):
        from bayes_s2r import sim

        self._sim = sim
        self.sim_world = sim.load_card("sim_nominal")
        self.robot = sim.RealRobot(real)
        self.eval_episodes = eval_episodes
        self.sweep_episodes = sweep_episodes
        self.train_iterations = train_iterations
        self.costs = sim.load_costs()

    # ------------------------------------------------------------------ policies
    def initial_policy(self) -> str:
        return _INITIAL

    def _policy(self, name: str, memory: Mapping[str, Any]):
        if name == _INITIAL:
            return self._sim.nominal_policy()
        flat = memory.get("policies", {}).get(name)
        if flat is None:
            raise InputError("policy", name, "a policy stored in the ledger's executor memory")
        return self._sim.LinearPolicy.from_flat(np.asarray(flat, np.float32))

    def _settings(self, candidate: Candidate) -> dict[str, Any]:
        kind = METHOD_KINDS[candidate.method]
        batch = candidate.batch
        if kind == "si_retrain":
            return {"trajectories": int(batch or 8), "iterations": self.train_iterations}
        if kind == "dr_retrain":
            return {"width": float(batch or 1.5), "iterations": self.train_iterations}
        if kind == "obs_augment":
            level = float(batch or 1.0)
            return {"noise_level": level, "bias_level": level, "iterations": self.train_iterations}
        return {"episodes": int(batch or 64)}

    # ------------------------------------------------------------------ execution
    def execute(self, rng_key, candidate: Candidate, *, round: int, policy: str,
                memory: Mapping[str, Any]) -> Execution:
        sim = self._sim
        current = self._policy(policy, memory)
        if candidate.role == "diagnosis" and candidate.observed_direction is not None:
            sweep = sim.sensitivity_sweep(rng_key, self.sim_world, current, levels=(0.0, 0.5, 1.0),
                                          episodes=self.sweep_episodes, policy_name=policy, round=round)
            cost = Cost(compute=self.costs.compute_hours(sweep.sim_steps), eng=candidate.cost.eng)
            return Execution(tuple(sweep.trials), cost)
        if candidate.role != "adaptation" or candidate.method not in METHOD_KINDS:
            raise InputError("candidate", candidate.name,
                             f"an adaptation with method among {sorted(METHOD_KINDS)} or a sensitivity "
                             "diagnosis (the testbed runs nothing else)")
        k_run, k_eval = jax.random.split(rng_key)
        result = sim.run_intervention(k_run, METHOD_KINDS[candidate.method], self._settings(candidate),
                                      current, self.sim_world, self.robot, costs=self.costs,
                                      name=candidate.name, round=round)
        paired = sim.paired_eval(k_eval, self.robot, current, result.policy, self.eval_episodes,
                                 candidate_name=candidate.name, round=round, policy_name=policy)
        records: list[Record] = [r for r in result.records if not isinstance(r, RealizedCost)]
        records.append(paired.record)
        if candidate.touches_robot and not any(isinstance(r, ExecutionOutcome) for r in records):
            records.append(ExecutionOutcome(candidate.name, result.info["real_episodes"],
                                            result.info["unsafe"], round=round))
        cost = result.cost + Cost(real=paired.hours)
        name = f"pi{round + 1}"
        policies = dict(memory.get("policies", {}))
        policies[name] = np.asarray(result.policy.flat(), np.float64).round(7).tolist()
        return Execution(tuple(records), cost, name, (), {"policies": policies})

    def evaluate_deployment(self, rng_key, *, round: int, policy: str, episodes: int,
                            memory: Mapping[str, Any]) -> DeploymentEval:
        run = self.robot.run(rng_key, self._policy(policy, memory), episodes)
        successes = int(np.asarray(run.stats.success).sum())
        return DeploymentEval(policy, episodes, successes, int(run.unsafe), round=round)

    def shakedown(self, rng_key, candidates: Sequence[Candidate], episodes: int = 60) -> tuple[Record, ...]:
        """Supervised safety trials before the campaign: each robot-touching candidate's
        exploration (the deployed policy with fine-tuning-size perturbations) runs under a
        safety operator, so its execution risk has evidence rather than none.

        Returns:
            ExecutionOutcome records (round 0), one per robot-touching candidate.
        """
        base = self._sim.nominal_policy().flat()
        out = []
        for i, c in enumerate(c for c in candidates if c.touches_robot):
            k_eps, k_run = jax.random.split(jax.random.fold_in(rng_key, i))
            thetas = base + 0.05 * jax.random.normal(k_eps, (episodes, base.shape[0]))
            run = self.robot.run(k_run, self._sim.LinearPolicy.from_flat(thetas), episodes)
            out.append(ExecutionOutcome(c.name, episodes, int(run.unsafe), round=0))
        return tuple(out)


def run_shakedown(ledger, executor, *, episodes: int = 60) -> tuple[Record, ...]:
    """Run the campaign's safety shakedown once and commit it: its records and the mark
    that it ran go into the ledger in one transaction.

    The key is the campaign seed's, as in an uninterrupted run, so a shakedown cut short and
    run again on resume writes the same records. Once marked, nothing runs again.

    Args:
        ledger: the campaign's ledger (a campaign must be started in it).
        executor: anything with `shakedown(rng_key, candidates, episodes)`, e.g. a
            `TestbedExecutor`.
        episodes: supervised trials per robot-touching candidate.

    Returns:
        The shakedown's ExecutionOutcome records, as stored.
    """
    from bayes_s2r.campaign.state import META_KEYS, load_state

    state = load_state(ledger)
    mark = ledger.get_meta(META_KEYS["shakedown"])
    if mark is None:
        records = tuple(executor.shakedown(jax.random.key(state.config.seed), state.candidates, episodes))
        with ledger.transaction():
            ledger.add_many(records)
            ids = [r.id for r in records]
            ledger.set_meta(META_KEYS["shakedown"], {"records": ids})
    else:
        ids = list(mark.get("records", [])) if isinstance(mark, dict) else []
    stored = {r.id: r for r in ledger.records(ExecutionOutcome)}
    return tuple(stored[i] for i in ids if i in stored)
