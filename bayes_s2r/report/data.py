"""What the report reads from a ledger, as tidy tables.

`load_report_data` takes a `Ledger` (anything with `.records()` and `.get_meta(key,
default)`) or a list of records plus a meta dict, and returns `ReportData`; the functions
below turn it into one pandas DataFrame per figure. Nothing here draws; nothing here
needs anything but the ledger's content (the contract in the campaign's ledger notes).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import DecisionRecord, ExecutionOutcome, RealizedCost, Record
from bayes_s2r.vocab import RESOURCES

__all__ = [
    "ReportData",
    "budget_frame",
    "budget_summary",
    "decision_table",
    "decisions_frame",
    "load_report_data",
    "normalize_meta",
    "table_rows",
]

META_KEYS = ("campaign", "last_completed_round", "deployment")

#: Settings a decision may carry in its `extra` (as `bayes-s2r decide` records them); the
#: report uses them when the ledger's meta has no campaign config.
DECISION_SETTINGS = ("alpha_exec", "delta", "beta", "utility")


@dataclasses.dataclass(frozen=True)
class ReportData:
    """The ledger's content as the report sees it.

    Attributes:
        records: every record, in ledger order.
        meta: the campaign metadata (keys "campaign", "last_completed_round", "deployment").
        decisions: one DecisionRecord per round, sorted by round (the last one written
            wins when a round was decided twice, e.g. after a resume).
    """

    records: tuple[Record, ...]
    meta: Mapping[str, Any]
    decisions: tuple[DecisionRecord, ...]

    @property
    def campaign(self) -> dict[str, Any]:
        c = self.meta.get("campaign")
        return dict(c) if isinstance(c, Mapping) else {}

    def of(self, cls: type[Record]) -> list[Record]:
        return [r for r in self.records if isinstance(r, cls)]

    def setting(self, key: str, default: float) -> float:
        v = self.campaign.get(key, default)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default

    def roles(self) -> dict[str, str]:
        """Candidate name -> role, from the campaign's candidates and the decision tables."""
        out: dict[str, str] = {}
        for d in self.decisions:
            for row in table_rows(d):
                if row.get("role"):
                    out[row["name"]] = row["role"]
        for c in self.campaign.get("candidates") or []:
            if isinstance(c, Mapping) and c.get("name") and c.get("role"):
                out[c["name"]] = c["role"]
        return out

    def robot_touching(self) -> list[str]:
        """Candidates that touch the robot: flagged in the campaign's candidates, or with
        an execution bound in a decision table, or with execution outcomes on record."""
        names: dict[str, None] = {}
        for c in self.campaign.get("candidates") or []:
            if isinstance(c, Mapping) and c.get("touches_robot") is True:
                names[c["name"]] = None
        for d in self.decisions:
            for row in table_rows(d):
                if row.get("ucb_exec") is not None:
                    names[row["name"]] = None
        for r in self.of(ExecutionOutcome):
            names[r.candidate] = None
        return list(names)


def table_rows(d: DecisionRecord) -> list[dict[str, Any]]:
    """The rows of a decision's candidate table, each keyed by `name`.

    Rows written by older versions of `Decision.to_record` carry the name under
    `candidate`; both read the same.
    """
    out = []
    for row in d.payload()["table"] or []:
        if not isinstance(row, Mapping):
            continue
        row = dict(row)
        name = row.pop("candidate", None)
        row.setdefault("name", name)
        if row["name"]:
            out.append(row)
    return out


def normalize_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Meta in the report's shape: a "campaign" mapping (world, seed, start_budget, weights,
    alpha_exec, alpha_deploy, delta, beta, candidates), "last_completed_round", "deployment".

    Accepts the contract's keys and the campaign loop's flat keys ("campaign.config",
    "campaign.world", "campaign.candidates", "campaign.last_completed_round"); values
    already under "campaign" win.
    """
    out = dict(meta)
    camp = dict(meta["campaign"]) if isinstance(meta.get("campaign"), Mapping) else {}
    cfg = meta.get("campaign.config")
    if isinstance(cfg, Mapping):
        # a campaign stores its decide options under "decide" and its fit under "fit"
        # (earlier ledgers, flat); the campaign's own keys win (its seed is not decide's)
        nested = cfg.get("decide") if isinstance(cfg.get("decide"), Mapping) else {}
        fit = cfg.get("fit") if isinstance(cfg.get("fit"), Mapping) else {}
        method = fit.get("inference", {}).get("method") if isinstance(fit.get("inference"), Mapping) else None
        cfg = {**nested, **({"fit_method": method} if method else {}), **cfg}
        for k in ("seed", "weights", "alpha_exec", "alpha_deploy", "delta", "beta", "fit_method",
                  "max_rounds", "utility", "transition_rule"):
            if k in cfg:
                camp.setdefault(k, cfg[k])
        if "budget" in cfg:
            camp.setdefault("start_budget", cfg["budget"])
    for flat, key in (("campaign.world", "world"), ("campaign.candidates", "candidates"),
                      ("campaign.policy", "policy"), ("campaign.adoptions", "adoptions")):
        if flat in meta:
            camp.setdefault(key, meta[flat])
    world = camp.get("world")
    if isinstance(world, Mapping):  # a testbed campaign stores its world card's name as `card`
        camp["world"] = str(world.get("name") or world.get("card") or world.get("world") or "unnamed world")
    out["campaign"] = camp
    if "last_completed_round" not in out and "campaign.last_completed_round" in meta:
        out["last_completed_round"] = meta["campaign.last_completed_round"]
    return out


def _split_source(source, meta):
    if hasattr(source, "records") and hasattr(source, "get_meta"):
        records = source.records()
        ledger_meta = {}
        if callable(getattr(source, "meta", None)):
            ledger_meta = dict(source.meta())
        for key in META_KEYS:  # a ledger without .meta() still answers get_meta
            v = source.get_meta(key, None)
            if v is not None:
                ledger_meta[key] = v
        return records, {**ledger_meta, **dict(meta or {})}
    if isinstance(source, tuple) and len(source) == 2 and isinstance(source[1], Mapping):
        return source[0], {**dict(source[1]), **dict(meta or {})}
    return source, dict(meta or {})


def load_report_data(source, meta: Mapping[str, Any] | None = None) -> ReportData:
    """Read a Ledger, or (records, meta), or a list of records with `meta`.

    Args:
        source: a `Ledger`, a tuple `(records, meta)`, or an iterable of records.
        meta: campaign metadata; merged over (and winning against) the ledger's own.

    Returns:
        ReportData.

    Raises:
        InputError: when `source` holds something that is not an evidence record, or
            `meta` is not a mapping.
    """
    if meta is not None and not isinstance(meta, Mapping):
        raise InputError("meta", meta, "a mapping of meta key -> JSON value, or None")
    records, meta = _split_source(source, meta)
    meta = normalize_meta(meta)
    if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
        raise InputError("records", records, "a Ledger, (records, meta), or a list of records")
    records = tuple(records)
    for i, r in enumerate(records):
        if not isinstance(r, Record):
            raise InputError(f"records[{i}]", r, "an evidence record (bayes_s2r.evidence)")
    latest: dict[int, DecisionRecord] = {}
    for r in records:
        if isinstance(r, DecisionRecord):
            latest[r.round] = r
    decisions = tuple(latest[t] for t in sorted(latest))
    if decisions:  # `bayes-s2r decide` keeps its settings with each decision, not in meta
        extra = _extra(decisions[-1])
        camp = meta["campaign"]
        for key in DECISION_SETTINGS:
            if key in extra and key not in camp:
                camp[key] = extra[key]
    return ReportData(records, meta, decisions)


# ----------------------------------------------------------------------------- per figure

def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def decision_table(d: DecisionRecord) -> pd.DataFrame:
    """The round's candidate table, indexed by name; nulls (NaN in the decision) as NaN."""
    rows = table_rows(d)
    if not rows:
        return pd.DataFrame(columns=["role", "mu_dJ", "U0", "CVU", "Q", "feasible"])
    df = pd.DataFrame(rows).set_index("name")
    for col in ("mu_dJ", "C_lambda", "U0", "MV", "CVU", "Q", "ucb_exec"):
        if col in df:
            df[col] = [_num(v) for v in df[col]]
    if "feasible" not in df:
        df["feasible"] = True
    df["feasible"] = [v is True for v in df["feasible"]]
    return df


def _extra(d: DecisionRecord) -> dict[str, Any]:
    e = d.payload()["extra"]
    return e if isinstance(e, dict) else {}


def _ranked(table: pd.DataFrame) -> list[str]:
    if "Q" not in table:
        return []
    feas = table[table["feasible"] & table["Q"].notna()]
    return list(feas.sort_values("Q", ascending=False, kind="stable").index)


def decisions_frame(data: ReportData) -> pd.DataFrame:
    """One row per round: chosen (or the best feasible at a stop), runner-up, Q, U0, CVU,
    flip probability and p_best of the chosen."""
    beta = data.setting("beta", 1.0)
    rows = []
    for d in data.decisions:
        table, extra = decision_table(d), _extra(d)
        ranked = _ranked(table)
        lead = d.chosen if d.chosen in table.index else (ranked[0] if ranked else None)
        runner = next((n for n in ranked if n != lead), None)
        row = {"round": d.round, "chosen": d.chosen, "stop_reason": d.stop_reason,
               "lead": lead, "runner_up": runner, "beta": beta,
               "flip_probability": _num(extra.get("flip_probability")),
               "p_best_chosen": _num((extra.get("p_best") or {}).get(d.chosen or "(stop)"))}
        for tag, name in (("lead", lead), ("runner_up", runner)):
            for col in ("U0", "CVU", "Q"):
                row[f"{col}_{tag}"] = _num(table.at[name, col]) if name and col in table else math.nan
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in ("chosen", "stop_reason", "lead", "runner_up"):  # keep None, not NaN
        if col in df:
            df[col] = pd.Series([r[col] for r in rows], dtype=object)
    return df


def _realized_costs(data: ReportData) -> pd.DataFrame:
    rows = [{"round": r.round, **{k: getattr(r, k) for k in RESOURCES}} for r in data.of(RealizedCost)]
    df = pd.DataFrame(rows, columns=["round", *RESOURCES])
    return df.groupby("round")[list(RESOURCES)].sum() if len(df) else df.set_index("round")


def _start_budget(data: ReportData) -> dict[str, float] | None:
    sb = data.campaign.get("start_budget")
    if isinstance(sb, Mapping) and all(isinstance(sb.get(k), (int, float)) for k in RESOURCES):
        return {k: float(sb[k]) for k in RESOURCES}
    costs = _realized_costs(data)
    for d in data.decisions:  # fall back on the first recorded pre-round budget
        b = _extra(d).get("budget")
        if isinstance(b, Mapping) and all(isinstance(b.get(k), (int, float)) for k in RESOURCES):
            # what was spent before that round was spent from the start budget too
            before = costs[costs.index < d.round].sum() if len(costs) else {}
            return {k: float(b[k]) + float(before.get(k, 0.0)) for k in RESOURCES}
    return None


def budget_summary(data: ReportData) -> pd.DataFrame | None:
    """Per resource: start, spent (sum of realized costs), left; None without a start budget."""
    start = _start_budget(data)
    if start is None:
        return None
    costs = _realized_costs(data)
    spent = {k: float(costs[k].sum()) if len(costs) else 0.0 for k in RESOURCES}
    return pd.DataFrame({"start": start, "spent": spent,
                         "left": {k: start[k] - spent[k] for k in RESOURCES}}).loc[list(RESOURCES)]


def budget_frame(data: ReportData) -> pd.DataFrame | None:
    """Remaining budget per resource before each round and after the last one.

    Columns: round (the budget is the one left *before* that round; the last row is the
    end of the campaign), `<resource>` (start minus realized costs of earlier rounds) and
    `<resource>_recorded` (the pre-round budget the campaign stored, NaN where absent).
    """
    start = _start_budget(data)
    if start is None:
        return None
    costs = _realized_costs(data)
    rounds = sorted({d.round for d in data.decisions} | set(costs.index.tolist()))
    if not rounds:
        return None
    recorded = {d.round: _extra(d).get("budget") or {} for d in data.decisions}
    rows = []
    for t in [*rounds, rounds[-1] + 1]:
        used = costs[costs.index < t].sum() if len(costs) else pd.Series(0.0, index=list(RESOURCES))
        row = {"round": t}
        for k in RESOURCES:
            row[k] = start[k] - float(used.get(k, 0.0))
            row[f"{k}_recorded"] = _num(recorded.get(t, {}).get(k))
        rows.append(row)
    return pd.DataFrame(rows)
