"""`Decision`: what `decide` returns, its plain-text rendering and its ledger record."""

from __future__ import annotations

import dataclasses
import math
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
import pandas as pd

from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.stability import stop_score
from bayes_s2r.decision.utility import Utility
from bayes_s2r.evidence.records import DecisionRecord

__all__ = ["Decision"]


def _package_version() -> str:
    try:
        return version("bayes_s2r")
    except PackageNotFoundError:
        return "0.0.0"


def _jsonable(x: Any) -> Any:
    """Plain JSON data: NaN and ±inf become None, NumPy scalars become Python numbers."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(float(x)) else None
    return x


def _fmt(x: float, width: int = 8) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—".rjust(width)
    return f"{x:+.4f}".rjust(width)


@dataclasses.dataclass(frozen=True)
class Decision:
    """The decision at s_t.

    Attributes:
        table: DataFrame indexed by candidate name: role, mu_dJ, sd_dJ, gain (the decision
            functional of the gain), C_lambda, U0, MV, mv_reason, CVU, cvu_se, ess, ess_min,
            collapsed, Q, ucb_exec, safe, affordable, done, feasible, excluded_reason, and for
            several objectives gain@<objective> and rank. `table.attrs["utility"]` names the
            functional.
        best: name of m_t*, or None for a stop.
        stop_reason: None, "economic" (no feasible Q above the stop's, `stop_Q`), "no_feasible"
            or "budget".
        p_best: Series over the feasible candidates and "(stop)", sums to 1.
        flip_probability: 1 − p_best(best) (best = "(stop)" for a stop).
        weight_robustness: DataFrame resource, current, low, high (CVU and the stop's Q held
            at their estimates).
        lambda_: Series of the resource weights λ_t used.
        utility: "mean", "lcb", "cvar" or "adopt"; `utility_level` the tail level of the first two.
        objectives: objective names in priority order; `front` the Pareto front or the
            lexicographic survivors (empty for one objective).
        j_now, j_source: the current J used by the transition rule and where it came from.
        g0_null: the value of the rest of the campaign from s^∅ that CVU compares with: G0(s^∅);
            with `lookahead_depth=2`, G1(s^∅); with the "rollout" continuation, the base
            policy's value over `config.horizon` decisions.
        transition: repr of the transition rule.
        config: the validated options.
    """

    table: pd.DataFrame
    best: str | None
    stop_reason: str | None
    p_best: pd.Series
    flip_probability: float
    weight_robustness: pd.DataFrame
    lambda_: pd.Series
    utility: str
    utility_level: float
    objectives: tuple[str, ...]
    front: tuple[str, ...]
    j_now: float
    j_source: str
    g0_null: float
    transition: str
    config: DecideConfig

    @property
    def stop_Q(self) -> float:
        """Q of the stop: −β·G0(s^∅) (0 at the terminal round); see `stability.stop_score`."""
        return stop_score(self.g0_null, self.config.beta)

    @property
    def utility_label(self) -> str:
        return Utility(self.utility, self.utility_level).label

    @property
    def _g_label(self) -> str:
        """G0 one decision ahead; G1 with `lookahead_depth=2`; V_base over the horizon for a rollout."""
        if self.config.continuation == "rollout":
            return f"V_base[{self.config.horizon} decisions]"
        return "G1" if self.config.lookahead_depth == 2 else "G0"

    def text(self) -> str:
        """Plain-text rendering: the U0 / CVU / Q decomposition and why each exclusion."""
        t = self.table
        lam = ", ".join(f"{k} {v:g}" for k, v in self.lambda_.items())
        lines = [
            f"Decision: utility={self.utility_label}, beta={self.config.beta:g}, lambda=({lam}), "
            f"J_now={self.j_now:.3f} ({self.j_source}), {self._g_label}(stop branch)={self.g0_null:.4f}, "
            f"Q(stop)={self.stop_Q:+.4f}"
            if not math.isnan(self.g0_null) else
            f"Decision: utility={self.utility_label}, beta={self.config.beta:g}, lambda=({lam}), "
            f"J_now={self.j_now:.3f} ({self.j_source}), terminal round (CVU = 0)",
        ]
        if self.best is not None:
            lines.append(f"Chosen: {self.best}  (p_best {1 - self.flip_probability:.2f}, "
                         f"flip probability {self.flip_probability:.2f})")
        else:
            lines.append(f"Stop: {self.stop_reason}  (p_best(stop) {1 - self.flip_probability:.2f})")
        width = max(9, *(len(n) for n in t.index))
        lines.append(f"{'candidate'.ljust(width)}  {'role':<12}{'mu_dJ':>8} {'C_lambda':>8} {'U0':>8} "
                     f"{'CVU':>8} {'±se':>7} {'Q':>8} {'MV':>8}  feasible")
        for name, r in t.iterrows():
            se = "" if not np.isfinite(r["cvu_se"]) else f"{r['cvu_se']:.4f}"
            lines.append(
                f"{name.ljust(width)}  {r['role']:<12}{_fmt(r['mu_dJ'])} {_fmt(r['C_lambda'])} {_fmt(r['U0'])} "
                f"{_fmt(r['CVU'])} {se:>7} {_fmt(r['Q'])} {_fmt(r['MV'])}  {'yes' if r['feasible'] else 'no'}"
            )
        out = t[~t["feasible"]]
        if len(out):
            lines.append("Excluded:")
            lines += [f"  {n}: {r['excluded_reason']}" for n, r in out.iterrows()]
        if len(self.objectives) > 1:
            lines.append(f"Objectives ({self.config.multi}): {' > '.join(self.objectives)}; "
                         f"{'front' if self.config.multi == 'pareto' else 'survivors'}: {', '.join(self.front)}")
        rob = "; ".join(f"{r.resource} in [{r.low:.4g}, {r.high:.4g}] (now {r.current:.4g})"
                        for r in self.weight_robustness.itertuples())
        lines.append(f"Weight robustness (CVU held at its estimate): {rob}")
        return "\n".join(lines)

    def to_record(self, round: int, seed: int | None = None) -> DecisionRecord:
        """A `DecisionRecord` for the ledger; the table as a list of JSON-ready rows.

        Each row is keyed by `name`, as the campaign loop writes its rows and the report
        reads them.
        """
        rows = [{"name": n, **_jsonable(r.to_dict())} for n, r in self.table.iterrows()]
        extra = _jsonable({
            "utility": self.utility_label,
            "lambda": self.lambda_.to_dict(),
            "p_best": self.p_best.to_dict(),
            "flip_probability": self.flip_probability,
            "weight_robustness": self.weight_robustness.to_dict(orient="records"),
            "objectives": list(self.objectives),
            "front": list(self.front),
            "j_now": self.j_now,
            "transition": self.transition,
            "cvu_samples": self.config.cvu_samples,
            "beta": self.config.beta,
            "stop_Q": self.stop_Q,
        })
        return DecisionRecord(round=round, chosen=self.best, stop_reason=self.stop_reason, table=rows,
                              seed=self.config.seed if seed is None else seed,
                              version=_package_version(), extra=extra)

    def __repr__(self) -> str:
        what = self.best if self.best is not None else f"stop ({self.stop_reason})"
        return (f"Decision({what}, utility={self.utility_label}, flip_probability="
                f"{self.flip_probability:.2f}, {len(self.table)} candidates)")
