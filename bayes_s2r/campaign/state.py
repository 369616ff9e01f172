"""Campaign state s_t = (b_t, π_t, q_t, h_t), derived from the ledger alone.

Nothing about a campaign lives only in memory: the budget left is the start budget minus
the realized costs on record, the deployed policy and the candidate set are ledger meta,
and a round counts as completed once its records and meta are committed together. So a
process killed at any point resumes from the last completed round, and re-running a
round that was cut short writes the same records (their ids are content hashes). Steps
outside the rounds (a safety shakedown before the first, the report after the stop) are
committed the same way, with a meta mark of their own (`pending_steps` lists those not done).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from bayes_s2r.campaign.config import CampaignConfig
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.io import candidate_to_mapping
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import DecisionRecord, RealizedCost
from bayes_s2r.vocab import Budget, Candidate, Cost, validate_candidates

__all__ = ["META_KEYS", "CampaignState", "RoundSummary", "init_campaign", "load_state", "pending_steps"]

META_KEYS = {
    "config": "campaign.config",
    "candidates": "campaign.candidates",
    "policy": "campaign.policy",
    "current_J": "campaign.current_J",
    "completed": "campaign.last_completed_round",
    "status": "campaign.status",
    "world": "campaign.world",
    "deployment": "deployment",
    "adoptions": "campaign.adoptions",
    # steps outside the rounds, each marked done in the transaction that commits its result
    "shakedown": "campaign.shakedown",
    "report": "campaign.report",
}


class RoundSummary(NamedTuple):
    """One completed round of the history h_t.

    Attributes:
        round: the round index t.
        chosen: the executed candidate, or None for a stop.
        stop_reason: None, "economic", "budget", "no_feasible" or "round_limit".
        believed_gain: μ_ΔJ,t of the chosen candidate when it was chosen.
        q: its decision score Q.
        flip_probability: 1 − p_best of the choice.
        spent: the realized cost of the round.
    """

    round: int
    chosen: str | None
    stop_reason: str | None
    believed_gain: float | None
    q: float | None
    flip_probability: float | None
    spent: Cost


class CampaignState(NamedTuple):
    """s_t = (b_t, π_t, q_t, h_t) plus what the loop needs to continue.

    Attributes:
        round: the next round to run (= number of completed rounds).
        budget: b_t, the remaining budget.
        policy: id of the deployed policy π_t.
        current_J: the latest measured success rate of π_t (None before any measurement).
        candidates: the state-dependent candidate set M(s_t) before gating.
        done: names of non-repeatable candidates that have run.
        history: RoundSummary of every completed round.
        config: the campaign's configuration.
        status: "running" or "stopped".
        adoptions: policy id -> {"parent", "candidate", "round"}: how each adopted policy
            came to be (the adaptation applied to its parent and the round it ran).
    """

    round: int
    budget: Budget
    policy: str
    current_J: float | None
    candidates: tuple[Candidate, ...]
    done: tuple[str, ...]
    history: tuple[RoundSummary, ...]
    config: CampaignConfig
    status: str
    adoptions: dict | None = None


def _candidates_from_meta(items: list[dict[str, Any]]) -> tuple[Candidate, ...]:
    from bayes_s2r.evidence.io import _candidate  # one parser for TOML tables and stored ones

    return validate_candidates([_candidate(i, t, "ledger meta") for i, t in enumerate(items)])


def init_campaign(ledger: Ledger, candidates, config: CampaignConfig, *, policy: str,
                  world: Any = None) -> None:
    """Write a new campaign's configuration into an empty (campaign-free) ledger.

    Raises:
        InputError: the ledger already holds a campaign (resume it instead).
    """
    cands = validate_candidates(candidates)
    if ledger.get_meta(META_KEYS["config"]) is not None:
        raise InputError("ledger", ledger.path, "a ledger without a campaign (use resume to continue one)")
    if not isinstance(policy, str) or not policy:
        raise InputError("policy", policy, "the id of the deployed policy")
    with ledger.transaction():
        ledger.set_meta(META_KEYS["config"], config.to_dict())
        ledger.set_meta(META_KEYS["candidates"], [candidate_to_mapping(c) for c in cands])
        ledger.set_meta(META_KEYS["policy"], policy)
        ledger.set_meta(META_KEYS["completed"], -1)
        ledger.set_meta(META_KEYS["status"], "running")
        if world is not None:
            ledger.set_meta(META_KEYS["world"], world)


def load_state(ledger: Ledger) -> CampaignState:
    """Rebuild the campaign state from the ledger (the only source of truth)."""
    raw = ledger.get_meta(META_KEYS["config"])
    if raw is None:
        raise InputError("ledger", ledger.path, "a ledger holding a campaign (start one first)")
    config = CampaignConfig.from_dict(raw)
    completed = int(ledger.get_meta(META_KEYS["completed"], -1))
    candidates = _candidates_from_meta(ledger.get_meta(META_KEYS["candidates"]))
    by_name = {c.name: c for c in candidates}
    spent: dict[int, Cost] = {}
    for rec in ledger.records(RealizedCost):
        if rec.round <= completed:
            spent[rec.round] = spent.get(rec.round, Cost()) + Cost(rec.real, rec.compute, rec.eng)
    total = sum(spent.values(), Cost())
    history, done = [], []
    for rec in ledger.records(DecisionRecord):
        if rec.round > completed:
            continue
        row = {}
        for r in rec.payload()["table"] or []:
            if r.get("name") == rec.chosen:
                row = r
        history.append(RoundSummary(
            round=rec.round, chosen=rec.chosen, stop_reason=rec.stop_reason,
            believed_gain=row.get("mu_dJ"), q=row.get("Q"),
            flip_probability=(rec.payload()["extra"] or {}).get("flip_probability"),
            spent=spent.get(rec.round, Cost()),
        ))
        c = by_name.get(rec.chosen)
        if c is not None and not c.repeatable and c.name not in done:
            done.append(c.name)
    history.sort(key=lambda h: h.round)
    return CampaignState(
        round=completed + 1,
        budget=config.budget.spend(total),
        policy=ledger.get_meta(META_KEYS["policy"]),
        current_J=ledger.get_meta(META_KEYS["current_J"]),
        candidates=candidates,
        done=tuple(done),
        history=tuple(history),
        config=config,
        status=ledger.get_meta(META_KEYS["status"], "running"),
        adoptions=ledger.get_meta(META_KEYS["adoptions"], {}),
    )


def pending_steps(ledger: Ledger, *, shakedown: bool = False) -> tuple[str, ...]:
    """The steps outside the rounds that the campaign in `ledger` has not committed yet.

    Args:
        ledger: the campaign's ledger.
        shakedown: whether the campaign starts with a safety shakedown (the testbed's does).

    Returns:
        A subset of ("shakedown", "report"), in the order they run: "shakedown" while a
        campaign that needs one has neither it nor any completed round on record (a ledger
        written before the mark existed counts as done once a round completed), "report"
        once the campaign has stopped and no report was marked written.
    """
    state = load_state(ledger)
    out = []
    if shakedown and ledger.get_meta(META_KEYS["shakedown"]) is None and state.round == 0:
        out.append("shakedown")
    if state.status == "stopped" and ledger.get_meta(META_KEYS["report"]) is None:
        out.append("report")
    return tuple(out)
