"""One vocabulary for decision tables: `bayes-s2r demo`, `decide`, its `--json` and the report.

Every place that shows a decision shows the same columns under the same names, with the
decision functional in the gain column's header, and one legend line that states the
formulas the numbers follow (U0 = gain − C_λ, Q = U0 + β·CVU). Plain Python: the command
line imports this before it has decided whether JAX is needed at all.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "COLUMNS",
    "UNITS",
    "amount",
    "clean_runs_needed",
    "gain_header",
    "gate_hint",
    "headers",
    "legend",
    "resources_text",
    "rows_of",
]

#: The columns of a decision table, in order (keys of `rows_of` and of `--json` rows).
COLUMNS = ("gain", "C_lambda", "U0", "CVU", "Q", "p_best")


def gain_header(utility: str | None) -> str:
    """The gain column's header under a decision functional ("mean", "adopt", "lcb(0.1)", ...)."""
    text = str(utility or "mean")
    name, _, level = text.partition("(")
    level = level.rstrip(")")
    if name == "adopt":
        return "E[ΔJ·P(adopt|ΔJ)]"
    if name == "lcb":
        return f"LCB{level or ''}[ΔJ]"
    if name == "cvar":
        return f"CVaR{level or ''}[ΔJ]"
    return "μ_ΔJ"


def headers(utility: str | None) -> dict[str, str]:
    """Column key -> header as printed, for one decision functional."""
    return {"gain": gain_header(utility), "C_lambda": "C_λ", "U0": "U0", "CVU": "CVU", "Q": "Q",
            "p_best": "p_best"}


_MEANING = {
    "mean": "posterior mean gain in J",
    "adopt": "what a try gains when its policy is kept only if its evaluation shows it better",
    "lcb": "a lower quantile of the gain",
    "cvar": "the mean of the gain's lower tail",
}


def legend(utility: str | None, beta: float = 1.0) -> str:
    """One line that says how the printed columns relate (it matches `headers`)."""
    g = gain_header(utility)
    name = str(utility or "mean").partition("(")[0]
    return (f"{g}: {_MEANING.get(name, 'the gain under the decision functional')}; C_λ: cost in J at the "
            f"weights λ; U0 = {g} − C_λ; Q = U0 + {beta:g}·CVU (look-ahead value); p_best: share of posterior "
            "draws in which it is best")


def _number(v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


def clean_runs_needed(unsafe: int, executions: int, alpha: float, delta: float,
                      limit: int = 100_000) -> int | None:
    """How many more executions without an unsafe event bring the Clopper–Pearson upper
    bound at 1 − delta on P(unsafe) to alpha or below; None beyond `limit` runs.

    With no unsafe event the bound after n runs is 1 − delta**(1/n), so n ≥ ln δ / ln(1 − α):
    59 clean runs at α = δ = 0.05.
    """
    from scipy import special

    def ucb(n: int) -> float:
        return 1.0 if n <= unsafe else float(special.betaincinv(unsafe + 1, n - unsafe, 1 - delta))

    if not 0 < alpha < 1 or not 0 < delta < 1:
        return None
    if executions and ucb(executions) <= alpha:
        return 0
    lo, hi = executions, executions + 1
    while ucb(hi) > alpha:  # double until the bound passes, then bisect
        lo, hi = hi, 2 * hi
        if hi - executions > limit:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ucb(mid) <= alpha else (mid, hi)
    return hi - executions


def gate_hint(name: str, unsafe: int, executions: int, alpha: float, delta: float) -> str:
    """What evidence would open the safety gate for a robot-touching candidate."""
    seen = (f"{unsafe} unsafe in {executions} executions on record" if executions
            else "no executions on record")
    if executions and unsafe / executions > alpha:  # clean runs would only dilute a real risk
        return (f"{seen}, a rate above α_exec {alpha:g}: more runs as it is will not open the gate; "
                "make the candidate safer first")
    more = clean_runs_needed(unsafe, executions, alpha, delta)
    if more is None:
        return (f"{seen}; too many unsafe events for the gate at α_exec {alpha:g}, δ {delta:g}: "
                "make the candidate safer before it can run")
    return (f"{seen}; {more} more executions without an unsafe event (ExecutionOutcome records "
            f"with candidate={name}) would open the gate at α_exec {alpha:g}, δ {delta:g}")


def _reason(row: Mapping[str, Any]) -> str:
    """Why an infeasible candidate cannot be chosen, without internal names."""
    text = str(row.get("excluded_reason") or "")
    return re.sub(r"\balpha_exec\b", "α_exec", text)


def rows_of(table, p_best: Mapping[str, float] | None = None,
            gate: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The decision table as rows in the shared vocabulary, best Q first.

    Args:
        table: `Decision.table`, or a report's decision table (indexed by candidate name).
            Without a `gain` column (older records) the mean gain stands in.
        p_best: share of posterior draws under which each candidate is best.
        gate: candidate -> what evidence would open its safety gate (`gate_hint`).

    Returns:
        One dict per candidate: name, role, the `COLUMNS`, feasible, why (empty when
        feasible), gate (what would open the safety gate, empty when it is open), and
        mu_dJ, sd_dJ, cvu_se, MV where the table has them.
    """
    p_best = {} if p_best is None else dict(p_best)
    gate = {} if gate is None else dict(gate)
    out = []
    for name, r in table.iterrows():
        r = r.to_dict()
        gain = _number(r.get("gain", r.get("mu_dJ")))
        row = {"name": str(name), "role": r.get("role"), "gain": gain,
               "C_lambda": _number(r.get("C_lambda")), "U0": _number(r.get("U0")),
               "CVU": _number(r.get("CVU")), "Q": _number(r.get("Q")),
               "p_best": _number(p_best[name]) if name in p_best else math.nan,
               "feasible": bool(r.get("feasible")), "why": "", "gate": gate.get(name, "")}
        if not row["feasible"]:
            row["why"] = _reason(r) or "excluded"
        for extra in ("mu_dJ", "sd_dJ", "cvu_se", "MV"):
            if extra in r:
                row[extra] = _number(r[extra])
        out.append(row)
    return sorted(out, key=lambda x: -x["Q"] if math.isfinite(x["Q"]) else math.inf)


#: Short units of the three budgets, as costs and budgets print.
UNITS = {"real": "robot-h", "compute": "compute-h", "eng": "eng-h"}


def amount(x: float) -> str:
    """A resource amount with three significant digits: 0.747, 0.00427, 2, 12.5."""
    x = float(x)
    if not math.isfinite(x):
        return "—"
    return "0" if x == 0 else f"{x:.3g}" if abs(x) < 1e4 else f"{x:,.0f}"


def resources_text(values: Mapping[str, float], skip_zero: bool = False) -> str:
    """"real 0.747 robot-h, compute 0.00427 compute-h, eng 2 eng-h" (`values` keyed by resource)."""
    parts = [f"{k} {amount(values[k])} {UNITS[k]}" for k in UNITS
             if k in values and not (skip_zero and float(values[k]) == 0)]
    return ", ".join(parts) or "nothing"
