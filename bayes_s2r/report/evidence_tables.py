"""Tables from the experiments on record: realized gains, sensitivity, risk bounds.

Each function reads `ReportData` and returns one pandas DataFrame (or dict) for a figure;
the frequentist intervals come from `bayes_s2r.report.intervals`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd
from scipy import stats

from bayes_s2r.evidence.records import (
    DeploymentEval,
    ExecutionOutcome,
    PairedEval,
    SensitivityTrial,
)
from bayes_s2r.report.data import ReportData, _extra, _num, decision_table
from bayes_s2r.report.intervals import clopper_pearson_upper, newcombe_difference

#: α_deploy of `CampaignConfig` by default: the level a deployment check uses when the
#: ledger records none.
ALPHA_DEPLOY_DEFAULT = 0.05

__all__ = ["ALPHA_DEPLOY_DEFAULT", "believed_vs_realized", "deployment_check", "exec_risk_frame", "sensitivity_frames"]


def believed_vs_realized(data: ReportData, level: float = 0.9) -> pd.DataFrame:
    """Each executed adaptation: believed gain (μ and stored HDI) and realized ΔĴ.

    The realized gain pools the round's PairedEval records of the chosen candidate;
    its interval is Newcombe's hybrid score interval at `level`.
    """
    roles = data.roles()
    evals = data.of(PairedEval)
    rows = []
    for d in data.decisions:
        c = d.chosen
        if c is None or roles.get(c) != "adaptation":
            continue
        mine = [e for e in evals if e.candidate == c and e.round == d.round]
        if not mine:
            continue
        st, nt = sum(e.successes_treated for e in mine), sum(e.episodes_treated for e in mine)
        sc, nc = sum(e.successes_control for e in mine), sum(e.episodes_control for e in mine)
        iv = newcombe_difference(st, nt, sc, nc, level)
        table = decision_table(d)
        b = (_extra(d).get("belief") or {}).get(c) or {}
        mu = _num(table.at[c, "mu_dJ"]) if c in table.index and "mu_dJ" in table else math.nan
        if math.isnan(mu):
            mu = _num(b.get("mean"))
        rows.append({"round": d.round, "candidate": c, "believed": mu,
                     "hdi_low": _num(b.get("hdi_low")), "hdi_high": _num(b.get("hdi_high")),
                     "realized": iv.estimate, "low": iv.low, "high": iv.high,
                     "episodes_treated": nt, "episodes_control": nc})
    return pd.DataFrame(rows)


def sensitivity_frames(data: ReportData, level: float = 0.9):
    """Drop in success rate at level 1 per direction, and pairwise synergy.

    Uses the trials of the policy with the most recent sensitivity trials. Nominal J(0)
    pools every level-0 trial of that policy. Returns `(single, pairs, policy)`: single has
    direction, tier, drop, low, high (Newcombe), j0, j1, n1; pairs has pair, synergy, low,
    high (normal approximation over four independent proportions).
    """
    trials = data.of(SensitivityTrial)
    if not trials:
        return pd.DataFrame(), pd.DataFrame(), None
    last = max(trials, key=lambda r: r.round)
    trials = [r for r in trials if r.policy == last.policy]
    nominal = [r for r in trials if r.level == 0 and (r.pair_level in (None, 0))]
    if not nominal:
        return pd.DataFrame(), pd.DataFrame(), last.policy
    s0, n0 = sum(r.successes for r in nominal), sum(r.episodes for r in nominal)
    at1: dict[str, list[SensitivityTrial]] = {}
    pairs: dict[tuple[str, str], list[SensitivityTrial]] = {}
    for r in trials:
        if r.level == 1 and r.pair_direction is None:
            at1.setdefault(r.direction, []).append(r)
        elif r.level == 1 and r.pair_level == 1:
            pairs.setdefault(tuple(sorted((r.direction, r.pair_direction))), []).append(r)
    single = []
    for k, rs in at1.items():
        s1, n1 = sum(r.successes for r in rs), sum(r.episodes for r in rs)
        iv = newcombe_difference(s0, n0, s1, n1, level)
        tiers = sorted({r.tier for r in rs})
        single.append({"direction": k, "tier": "/".join(tiers), "drop": iv.estimate, "low": iv.low,
                       "high": iv.high, "j0": s0 / n0, "j1": s1 / n1, "n1": n1})
    single_df = pd.DataFrame(single)
    if len(single_df):
        single_df = single_df.sort_values("drop", ascending=False, kind="stable").reset_index(drop=True)
    z = float(stats.norm.ppf(0.5 + level / 2))

    def p_var(s, n):  # add-one-half smoothing keeps the variance away from 0 at 0/n and n/n
        p = (s + 0.5) / (n + 1)
        return s / n, p * (1 - p) / n

    pair_rows = []
    for (k, l), rs in pairs.items():
        if k not in at1 or l not in at1:
            continue
        parts = [p_var(s0, n0)]
        for rr in (at1[k], at1[l], rs):
            parts.append(p_var(sum(r.successes for r in rr), sum(r.episodes for r in rr)))
        (j0, v0), (jk, vk), (jl, vl), (jkl, vkl) = parts
        syn = jk + jl - j0 - jkl  # = ΔJ(k,l) − ΔJ(k) − ΔJ(l) with ΔJ the drop from nominal
        se = math.sqrt(v0 + vk + vl + vkl)
        pair_rows.append({"pair": f"{k} × {l}", "synergy": syn, "low": syn - z * se, "high": syn + z * se})
    return single_df, pd.DataFrame(pair_rows), last.policy


def exec_risk_frame(data: ReportData) -> pd.DataFrame:
    """Per robot-touching candidate: executions, unsafe runs, Clopper–Pearson UCB at
    1 − delta, alpha_exec, whether the bound passes it, and `ucb_decision`, the bound the
    latest decision that scored the candidate used (NaN when none did)."""
    delta, alpha = data.setting("delta", 0.05), data.setting("alpha_exec", 0.05)
    outs = data.of(ExecutionOutcome)
    used: dict[str, float] = {}  # the bound the latest decision that scored it used
    for d in data.decisions:
        table = decision_table(d)
        if "ucb_exec" in table:
            used.update({n: v for n, v in table["ucb_exec"].items() if math.isfinite(v)})
    rows = []
    for name in data.robot_touching():
        mine = [r for r in outs if r.candidate == name]
        n, k = sum(r.executions for r in mine), sum(r.unsafe for r in mine)
        ucb = clopper_pearson_upper(k, n, delta)
        rows.append({"candidate": name, "executions": n, "unsafe": k, "ucb": ucb,
                     "alpha": alpha, "passes": ucb <= alpha,
                     "ucb_decision": used.get(name, math.nan)})
    return pd.DataFrame(rows)


def deployment_check(data: ReportData) -> dict[str, Any] | None:
    """The deployment check: meta "deployment", with the bound recomputed from the
    DeploymentEval of that policy when present (never pooled with execution risk).

    When neither the deployment nor the campaign records α_deploy, the check uses the
    library's default (`ALPHA_DEPLOY_DEFAULT`) and `alpha_source` says so.
    """
    dep = data.meta.get("deployment")
    evals = data.of(DeploymentEval)
    if not isinstance(dep, Mapping) and not evals:
        return None
    dep = dict(dep) if isinstance(dep, Mapping) else {}
    policy = dep.get("policy") or evals[-1].policy
    mine = [e for e in evals if e.policy == policy]
    alpha = _num(dep.get("alpha_deploy", data.campaign.get("alpha_deploy")))
    out = {"policy": policy, "ucb_unsafe": _num(dep.get("ucb_unsafe")),
           # without a level on record the check is against the library's default, said so
           "alpha_deploy": alpha if math.isfinite(alpha) else ALPHA_DEPLOY_DEFAULT,
           "alpha_source": "recorded" if math.isfinite(alpha) else "library default",
           "passes": dep.get("passes"), "J_real": _num(dep.get("J_real")),
           "episodes": sum(e.episodes for e in mine), "unsafe": sum(e.unsafe for e in mine),
           "successes": sum(e.successes for e in mine)}
    if out["episodes"] and not math.isfinite(out["J_real"]):
        out["J_real"] = out["successes"] / out["episodes"]
    if out["episodes"]:
        out["ucb_recomputed"] = clopper_pearson_upper(out["unsafe"], out["episodes"],
                                                      data.setting("delta", 0.05))
    return out
