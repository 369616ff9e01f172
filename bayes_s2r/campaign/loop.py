"""The closed loop: decide → execute → record → refit, one committed round at a time.

Each round rebuilds the state from the ledger, fits the belief, calls `decide`, runs the
chosen candidate through the executor and commits the decision, the evidence, the
realized cost and the new state in one transaction. A stop (economic, budget, no
feasible candidate, round limit) runs the deployment check on its own evaluation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax

from bayes_s2r.campaign.config import CampaignConfig
from bayes_s2r.campaign.executor import Execution, Executor
from bayes_s2r.campaign.state import META_KEYS, CampaignState, init_campaign, load_state
from bayes_s2r.decision.transition import AlternativesTransition
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.io import candidate_to_mapping
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import DecisionRecord, DeploymentEval, PairedEval, RealizedCost
from bayes_s2r.vocab import validate_candidates

__all__ = ["RoundReport", "executor_memory", "resume_campaign", "round_decision", "run_campaign", "run_round",
           "start_campaign"]

_EXECUTOR_PREFIX = "executor."
#: Folded into the campaign seed's key for the starting policy's deployment evaluation (apart
#: from every round's t).
_START_KEY = 2**31 - 1


class RoundReport(NamedTuple):
    """What one round did, for progress displays.

    Attributes:
        state: the state after the round.
        decision: the `Decision` of the round (None for a round-limit stop); under a
            chooser that does not call `decide`, its `Choice` (same best/stop_reason/table).
        execution: what the executor returned (None at a stop).
        adopted: whether an adaptation's policy became the deployed one.
        deployment: the deployment check at a stop (a dict), else None.
    """

    state: CampaignState
    decision: Any
    execution: Execution | None
    adopted: bool
    deployment: dict | None


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return _jsonable(value.item())
    return value


def executor_memory(ledger: Ledger) -> dict[str, Any]:
    """The executor state persisted in the ledger (what `Executor` calls receive as `memory`)."""
    return {k[len(_EXECUTOR_PREFIX):]: v for k, v in ledger.meta().items() if k.startswith(_EXECUTOR_PREFIX)}


def start_campaign(ledger: Ledger, candidates, config: CampaignConfig, executor: Executor, *,
                   world: Any = None) -> CampaignState:
    """Write a new campaign into `ledger` and return its initial state."""
    init_campaign(ledger, candidates, config, policy=executor.initial_policy(), world=world)
    return load_state(ledger)


def _round_seed(config: CampaignConfig, t: int) -> int:
    return config.seed * 10_007 + t


def _decision_record(decision, t: int, seed: int, state: CampaignState, belief, rule: str | None = None
                     ) -> DecisionRecord:
    from bayes_s2r import __version__

    table = decision.table.reset_index().rename(columns={"index": "name", "candidate": "name"})
    rows = _jsonable(table.to_dict(orient="records"))
    summary = belief.summary() if belief is not None else None
    extra = {
        "p_best": _jsonable(dict(decision.p_best)),
        "flip_probability": _jsonable(float(decision.flip_probability)),
        "budget": {"real": state.budget.real, "compute": state.budget.compute, "eng": state.budget.eng},
        "lambda": _jsonable([float(x) for x in decision.lambda_]),
        "belief": {} if summary is None else _jsonable(summary.to_dict(orient="index")),
        "hdi_prob": 0.9,
        "current_J": _jsonable(state.current_J),
        "utility": decision.utility,
        "policy": state.policy,
    }
    if rule is not None:
        extra["rule"] = rule
    config = getattr(decision, "config", None)
    if config is not None:  # which continuation stood for the rest of the campaign, and how far
        extra["continuation"] = {"kind": config.continuation, "horizon": config.horizon,
                                 "lookahead_depth": config.lookahead_depth}
    return DecisionRecord(round=t, chosen=decision.best, stop_reason=decision.stop_reason,
                          table=rows, seed=seed, version=__version__, extra=extra)


def _finish(ledger: Ledger, executor: Executor, state: CampaignState, key, reason: str,
            decision_record: DecisionRecord | None) -> dict:
    """Stop: evaluate the deployed policy and check the deployment chance constraint."""
    from bayes_s2r.belief import fit_deploy_risk

    cfg, t = state.config, state.round
    evaluation = executor.evaluate_deployment(key, round=t, policy=state.policy,
                                              episodes=cfg.deploy_episodes, memory=executor_memory(ledger))
    risk = fit_deploy_risk([evaluation], state.policy)
    ucb = float(risk.ucb(cfg.delta))
    deployment = {
        "policy": state.policy, "episodes": evaluation.episodes, "successes": evaluation.successes,
        "unsafe": evaluation.unsafe, "J_real": evaluation.successes / evaluation.episodes,
        "ucb_unsafe": ucb, "alpha_deploy": cfg.alpha_deploy, "delta": cfg.delta,
        "passes": bool(ucb <= cfg.alpha_deploy), "stop_reason": reason, "round": t,
    }
    if decision_record is None:
        decision_record = DecisionRecord(round=t, chosen=None, stop_reason=reason, seed=_round_seed(cfg, t),
                                         version=_version(), extra={"policy": state.policy})
    with ledger.transaction():
        ledger.add_many([decision_record, evaluation])
        ledger.set_meta(META_KEYS["deployment"], deployment)
        ledger.set_meta(META_KEYS["status"], "stopped")
        ledger.set_meta(META_KEYS["completed"], t)
    return deployment


def _version() -> str:
    from bayes_s2r import __version__

    return __version__


def adoption_level(evidence, state: CampaignState) -> DeploymentEval | None:
    """The level of a just-adopted policy that nothing else has measured yet, or None.

    The treated arm of the paired evaluation that adopted π ran π itself: it measures J(π).
    Until a later round evaluates π as the control, this is the only measurement of the
    policy the gains now refer to; without it the belief would put π's level at its prior
    (J ≈ 0.5) and price every gain from there. It is returned as a level-only record for
    the gains fit (it is not evidence of deployment safety and never enters the ledger).
    """
    origin = (state.adoptions or {}).get(state.policy)
    if origin is None:
        return None
    evidence = list(evidence)
    if any(isinstance(r, (PairedEval, DeploymentEval)) and r.policy == state.policy for r in evidence):
        return None
    for r in evidence:
        if (isinstance(r, PairedEval) and r.candidate == origin["candidate"] and r.round == origin["round"]
                and r.policy in (None, origin["parent"])):
            return DeploymentEval(state.policy, episodes=r.episodes_treated, successes=r.successes_treated,
                                  unsafe=0, round=origin["round"])
    return None


def fit_round_belief(evidence, state: CampaignState, seed: int):
    """The gain belief and execution-risk belief of round t, fitted on all evidence so far."""
    from bayes_s2r.belief import fit_exec_risk, fit_gains
    from bayes_s2r.belief.data import alternatives_fit
    from bayes_s2r.belief.inference import SVI

    cfg = state.config
    evidence = list(evidence)
    if isinstance(cfg.transition, AlternativesTransition):
        # each candidate is trained from the start policy: an adopted policy is its candidate
        # (whose treated arm already measures its level)
        policies, level = alternatives_fit(state.policy, state.adoptions), None
    else:
        policies, level = {"current_policy": state.policy}, adoption_level(evidence, state)
    records = evidence + ([level] if level is not None else [])

    def fit(settings, seed):
        # the FitConfig's fields as keywords: a new field reaches fit_gains with no change here
        fields = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
        return fit_gains(records, state.candidates, seed=seed, **policies, **fields)

    belief = fit(cfg.fit, seed)
    if isinstance(cfg.fit.inference, SVI) and not belief.diagnostics.get("ok", False):
        # an optimisation that has not settled gets one longer run before the round gives up on it
        longer = dataclasses.replace(cfg.fit.inference, steps=2 * cfg.fit.inference.steps)
        belief = fit(dataclasses.replace(cfg.fit, inference=longer), seed + 1)
    risk = fit_exec_risk(evidence, state.candidates, sim_prior=cfg.sim_risk_prior or None)
    return belief, risk


def run_round(ledger: Ledger, executor: Executor, *, chooser=None) -> RoundReport:
    """Run the next round of the campaign in `ledger` and commit it.

    Args:
        ledger: the campaign's ledger.
        executor: runs the chosen candidate.
        chooser: the decision rule, `chooser(state, ledger, seed=...) -> Choice` (see
            `bayes_s2r.campaign.strategies`); None runs the toolkit's rule, `decide` with the
            campaign's settings.
    """
    state = load_state(ledger)
    if state.status == "stopped":
        return RoundReport(state, None, None, False, ledger.get_meta(META_KEYS["deployment"]))
    cfg, t = state.config, state.round
    k_exec, k_deploy = jax.random.split(jax.random.fold_in(jax.random.key(cfg.seed), t))
    if t >= cfg.max_rounds:
        deployment = _finish(ledger, executor, state, k_deploy, "round_limit", None)
        return RoundReport(load_state(ledger), None, None, False, deployment)
    if t > 0 and state.budget.exhausted():
        # a round spent the budget and the process stopped before its budget stop was
        # committed: finish as that round would have, with its key
        _, k_prev = jax.random.split(jax.random.fold_in(jax.random.key(cfg.seed), t - 1))
        deployment = _finish(ledger, executor, state, k_prev, "budget", None)
        return RoundReport(load_state(ledger), None, None, False, deployment)

    if t == 0 and cfg.start_deployment_episodes and not _measured(ledger, state.policy):
        state = _measure_start(ledger, executor, state)
    seed = _round_seed(cfg, t)
    if chooser is None:
        decision, belief, rule = *round_decision(state, ledger, seed), None
    else:
        choice = chooser(state, ledger, seed=seed)
        same = choice.decision is not None and (choice.best, choice.stop_reason) == (
            choice.decision.best, choice.decision.stop_reason)
        decision = choice.decision if same else choice  # report what was actually chosen
        belief, rule = choice.belief, choice.rule
        if choice.best is not None and choice.best not in {c.name for c in state.candidates}:
            raise InputError("chooser.best", choice.best, "the name of a candidate of the campaign")
    record = _decision_record(decision, t, seed, state, belief, rule)
    if decision.best is None:
        deployment = _finish(ledger, executor, state, k_deploy, decision.stop_reason, record)
        return RoundReport(load_state(ledger), decision, None, False, deployment)

    candidate = next(c for c in state.candidates if c.name == decision.best)
    execution = executor.execute(k_exec, candidate, round=t, policy=state.policy, memory=executor_memory(ledger))
    adopted, policy, current_J = False, state.policy, state.current_J
    for rec in execution.records:
        if isinstance(rec, PairedEval) and rec.round == t and rec.policy in (None, state.policy):
            current_J = rec.successes_control / rec.episodes_control
            if execution.policy is not None and rec.candidate == candidate.name:
                # a tie keeps the incumbent: 0/48 against 0/48 says nothing for the new policy
                adopted = cfg.accept_regressions or rec.delta_hat > 0
                if adopted:
                    policy = execution.policy
                    current_J = rec.successes_treated / rec.episodes_treated
    cost = execution.cost
    realized = RealizedCost(candidate.name, round=t, real=cost.real, compute=cost.compute, eng=cost.eng)
    candidates = state.candidates
    if execution.new_candidates:
        candidates = validate_candidates([*candidates, *execution.new_candidates])
    with ledger.transaction():
        ledger.add_many([record, *execution.records, realized])
        for key, value in execution.memory.items():
            ledger.set_meta(_EXECUTOR_PREFIX + key, _jsonable(value))
        if execution.new_candidates:
            ledger.set_meta(META_KEYS["candidates"], [candidate_to_mapping(c) for c in candidates])
        ledger.set_meta(META_KEYS["policy"], policy)
        if adopted:
            origin = {"parent": state.policy, "candidate": candidate.name, "round": t}
            ledger.set_meta(META_KEYS["adoptions"], {**(state.adoptions or {}), policy: origin})
        if current_J is not None:
            ledger.set_meta(META_KEYS["current_J"], float(current_J))
        ledger.set_meta(META_KEYS["completed"], t)
    new_state = load_state(ledger)
    if new_state.budget.exhausted():
        deployment = _finish(ledger, executor, new_state, k_deploy, "budget", None)
        return RoundReport(load_state(ledger), decision, execution, adopted, deployment)
    return RoundReport(new_state, decision, execution, adopted, None)


def _measured(ledger: Ledger, policy: str) -> bool:
    """Whether the ledger holds a measurement of `policy`'s J (a deployment evaluation of it, or
    a paired evaluation with it as the control arm)."""
    return any(r.policy == policy for r in ledger.records(DeploymentEval)) or any(
        r.policy in (None, policy) for r in ledger.records(PairedEval))


def _measure_start(ledger: Ledger, executor: Executor, state: CampaignState) -> CampaignState:
    """Evaluate the starting policy's deployment and commit it with its J, before round 0."""
    cfg = state.config
    key = jax.random.fold_in(jax.random.key(cfg.seed), _START_KEY)
    evaluation = executor.evaluate_deployment(key, round=0, policy=state.policy,
                                              episodes=cfg.start_deployment_episodes, memory=executor_memory(ledger))
    with ledger.transaction():
        ledger.add(evaluation)
        ledger.set_meta(META_KEYS["current_J"], evaluation.successes / evaluation.episodes)
    return load_state(ledger)


def round_decision(state: CampaignState, ledger: Ledger, seed: int, *, beta: float | None = None,
                   terminal: bool | None = None, cvu_samples: int | None = None):
    """Fit round t's belief on the ledger's evidence and call `decide` with the campaign's
    `DecideConfig` and the round's own settings (its seed, whether it is the last round, the
    rounds left); `beta`, `terminal` and `cvu_samples` override the campaign's β, "last round"
    and look-ahead samples. Returns (decision, belief)."""
    from bayes_s2r.decision import decide

    cfg, t = state.config, state.round
    belief, risk = fit_round_belief(ledger.summed_records(), state, seed)
    beta = cfg.decide.beta if beta is None else beta
    terminal = (t == cfg.max_rounds - 1) if terminal is None else terminal
    per_round = {
        "beta": beta, "terminal": terminal, "seed": seed,
        # two decisions ahead only where two more rounds remain and CVU counts
        "lookahead_depth": cfg.decide.lookahead_depth if t < cfg.max_rounds - 2 and beta > 0 else 1,
        "horizon": 0 if terminal else max(cfg.max_rounds - t - 1, 0),
        **({} if cvu_samples is None else {"cvu_samples": cvu_samples}),
    }
    decision = decide(
        belief, state.candidates, state.budget, cfg.weights, risk=risk, config=cfg.decide, reference=cfg.budget,
        current_J=state.current_J, done=state.done, transition=cfg.transition, **per_round,
    )
    return decision, belief


def run_campaign(ledger: Ledger, executor: Executor, *,
                 on_round: Callable[[RoundReport], None] | None = None, chooser=None) -> CampaignState:
    """Run rounds until the campaign stops; `on_round` sees every round's report.

    `chooser` is the decision rule of every round (default: the toolkit's, see `run_round`).
    """
    while True:
        report = run_round(ledger, executor, chooser=chooser)
        if on_round is not None:
            on_round(report)
        if report.state.status == "stopped":
            return report.state


def resume_campaign(ledger: Ledger, executor: Executor, **kwargs) -> CampaignState:
    """Continue a campaign from its last completed round (same result as never stopping)."""
    load_state(ledger)  # a clear error if the ledger holds no campaign
    return run_campaign(ledger, executor, **kwargs)
