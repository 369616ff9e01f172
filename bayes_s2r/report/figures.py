"""The report's figures: one function per figure, each writing one PNG or saying why not.

Every function takes `ReportData` and a target path and returns a `Figure`: the file
name when something was drawn, or a short note ("no data: ...") when there was nothing
to draw. Matplotlib runs on the Agg backend; posteriors are drawn with ArviZ.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt
import numpy as np

from bayes_s2r.report import data as rd
from bayes_s2r.report import evidence_tables as et
from bayes_s2r.vocab import RESOURCES

__all__ = [
    "STYLE",
    "Figure",
    "plot_believed_realized",
    "plot_budget",
    "plot_decomposition",
    "plot_posterior",
    "plot_risk",
    "plot_sensitivity",
    "plot_stability",
]

STYLE = {
    "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "xtick.labelsize": 9,
    "ytick.labelsize": 9, "legend.fontsize": 9, "axes.spines.top": False,
    "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.25, "figure.dpi": 100,
    "savefig.dpi": 110, "savefig.bbox": "tight", "savefig.facecolor": "white",
}
RESOURCE_UNITS = {"real": "real robot-hours", "compute": "compute hours", "eng": "engineering hours"}
PALETTE = plt.get_cmap("tab10").colors
PASS, FAIL, NEUTRAL = "#2b8a3e", "#c92a2a", "#495057"


class Figure(NamedTuple):
    """One figure of the report.

    Attributes:
        file: the PNG's file name inside the report folder, or None when not drawn.
        note: why nothing was drawn, or a remark on how it was drawn (may be None).
        title: the figure's heading on the page.
        parts: the optional parts it drew (e.g. "pairs"), so its caption describes
            only what is there.
    """

    file: str | None
    note: str | None
    title: str
    parts: tuple[str, ...] = ()


def _colors(names) -> dict[str, tuple]:
    out = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(sorted(set(names) - {"(stop)"}))}
    out["(stop)"] = (0.75, 0.75, 0.75)
    return out


def _save(fig, path: Path) -> str:
    fig.savefig(path)
    plt.close(fig)
    return path.name


# ----------------------------------------------------------------------------- posterior

def plot_posterior(belief, source: str, path: Path, hdi_prob: float = 0.9) -> Figure:
    """Forest plot (ArviZ) of each adaptation candidate's gain: mean and `hdi_prob` HDI."""
    title = "Posterior of each candidate's gain ΔJ"
    if belief is None:
        return Figure(None, f"no data: {source}", title)
    import arviz as az

    names = [n for n in belief.names if not n.startswith("sensitivity:")]
    belief = belief.subset(names)
    with plt.rc_context(STYLE), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig, ax = plt.subplots(figsize=(7.5, 0.55 * len(names) + 1.6))
        az.plot_forest(belief.to_inference_data(), var_names=["gain"], combined=True,
                       hdi_prob=hdi_prob, ax=ax, colors="#1c7ed6", textsize=10,
                       labeller=az.labels.NoVarLabeller())
        ax.axvline(0.0, color=NEUTRAL, lw=1, ls="--")
        ax.set_yticklabels([t.get_text().strip("[]") for t in ax.get_yticklabels()])
        ax.set_xlabel(f"gain ΔJ in success probability (dot: median, thick: interquartile range, "
                      f"thin: {100 * hdi_prob:g}% HDI)")
        ax.set_title("")
        ax.set_title(f"Gain posterior — {source}", loc="left")
        return Figure(_save(fig, path), None, title)


# ----------------------------------------------------------------------------- decisions

def plot_decomposition(data: rd.ReportData, path: Path) -> Figure:
    """Per round, U0 and β·CVU of the chosen (or best, at a stop) and of the runner-up, with Q."""
    title = "Decision value per round: U0, β·CVU and Q"
    df = rd.decisions_frame(data)
    if not df.empty:  # rounds without a scored candidate (e.g. a round-limit stop) have no bars
        df = df[df["Q_lead"].notna()].reset_index(drop=True)
    if df.empty:
        return Figure(None, "no data: needs decisions with a candidate table (DecisionRecords: `bayes-s2r decide` records one, a campaign one per round)", title)
    colors = {"U0": "#4c6ef5", "CVU": "#f59f00"}
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(6.5, 2.0 * len(df) + 2), 4.4))
        w, vals, ticks, labels = 0.17, [], [], []
        for i, row in enumerate(df.itertuples()):
            if i:
                ax.axvline(i - 0.5, color=NEUTRAL, lw=0.6, alpha=0.4)
            for j, tag in enumerate(("lead", "runner_up")):
                name = getattr(row, tag)
                if name is None:
                    continue
                x = i + (j - 0.5) * 0.46
                u0, cvu, q = (getattr(row, f"{c}_{tag}") for c in ("U0", "CVU", "Q"))
                cvu_b = row.beta * cvu
                alpha = 1.0 if j == 0 else 0.45
                ax.bar(x - w / 2, u0, w, color=colors["U0"], alpha=alpha)
                ax.bar(x + w / 2, cvu_b, w, color=colors["CVU"], alpha=alpha)
                ax.plot([x - w, x + w], [q, q], color="black", lw=2.2)
                vals += [u0, cvu_b, q]
                ticks.append(x)
                labels.append(name + ("" if j else (" ✓" if row.chosen == name else " (stop)")))
        ax.axhline(0, color=NEUTRAL, lw=0.8)
        ax.set_xticks(ticks, labels, rotation=25, ha="right", rotation_mode="anchor", fontsize=8.5)
        ax.set_xlim(-0.6, len(df) - 0.4)
        ax.grid(axis="x", visible=False)
        finite = [v for v in vals if math.isfinite(v)] or [0.0]
        lo, hi = min(min(finite), 0.0), max(max(finite), 0.0)
        span = (hi - lo) or 1.0
        ax.set_ylim(lo - 0.06 * span, hi + 0.16 * span)
        for i, t in enumerate(df["round"]):
            ax.text(i, 0.985, f"round {t}", transform=ax.get_xaxis_transform(), ha="center",
                    va="top", fontsize=9.5, fontweight="bold", color=NEUTRAL)
        ax.set_ylabel("utility (success-probability units)")
        handles = [plt.Rectangle((0, 0), 1, 1, color=colors["U0"]),
                   plt.Rectangle((0, 0), 1, 1, color=colors["CVU"]),
                   plt.Line2D([0], [0], color="black", lw=2.2)]
        ax.legend(handles, ["U0 = μ − C_λ", "β·CVU", "Q = U0 + β·CVU"],
                  loc="lower left", ncols=3, frameon=False, bbox_to_anchor=(0, 1.0))
        ax.set_xlabel("left of each round: chosen (✓) or best at a stop; right, faded: runner-up",
                      fontsize=9, color=NEUTRAL)
        return Figure(_save(fig, path), None, title)


def plot_stability(data: rd.ReportData, path: Path) -> Figure:
    """p_best per round (stacked) and the flip probability of the chosen."""
    title = "Decision stability: p_best and flip probability"
    rows = [(d.round, (rd._extra(d).get("p_best") or {}), d.chosen) for d in data.decisions]
    rows = [r for r in rows if r[1]]
    if not rows:
        return Figure(None, "no data: needs decisions that recorded p_best (DecisionRecords from `bayes-s2r decide` or a campaign)", title)
    names = sorted({n for _, p, _ in rows for n in p} - {"(stop)"}) + ["(stop)"]
    colors = _colors(names)
    with plt.rc_context(STYLE):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [3, 2]})
        x = np.arange(len(rows))
        bottom = np.zeros(len(rows))
        for n in names:
            v = np.array([float(p.get(n, 0.0) or 0.0) for _, p, _ in rows])
            if not v.any():
                continue
            a1.bar(x, v, 0.6, bottom=bottom, color=colors[n], label=n, edgecolor="white", lw=0.6)
            bottom += v
        a1.set_xticks(x, [f"round {t}\n{c or '(stop)'}" for t, _, c in rows])
        a1.set_ylim(0, 1.02)
        a1.set_ylabel("p_best (share of posterior draws)")
        a1.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
        a1.grid(axis="x", visible=False)
        flip = [float(rd._extra(d).get("flip_probability", math.nan) or math.nan)
                for d in data.decisions if (rd._extra(d).get("p_best") or {})]
        a2.plot([t for t, _, _ in rows], flip, marker="o", color="#343a40")
        a2.set_ylim(0, 1)
        a2.set_xticks([t for t, _, _ in rows])
        a2.set_xlabel("round")
        a2.set_ylabel("flip probability = 1 − p_best(chosen)")
        fig.tight_layout()
        return Figure(_save(fig, path), None, title)


# ----------------------------------------------------------------------------- budget

def plot_budget(data: rd.ReportData, path: Path) -> Figure:
    """Remaining budget per resource, each on its own axis and units."""
    title = "Budget burn-down per resource"
    df = rd.budget_frame(data)
    if df is None:
        return Figure(None, "no data: needs a start budget (a campaign's config, or the budget a DecisionRecord of `bayes-s2r decide` holds)", title)
    start = rd.budget_summary(data)["start"]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
        for ax, k, c in zip(axes, RESOURCES, ("#e8590c", "#1c7ed6", "#7048e8")):
            ax.step(df["round"], df[k], where="post", color=c, lw=2, label="start − realized costs")
            ax.plot(df["round"], df[k], "o", color=c, ms=4)
            rec = df[f"{k}_recorded"]
            if rec.notna().any():
                ax.plot(df["round"], rec, "x", color="black", ms=7, label="recorded before round")
            ax.axhline(start[k], color=NEUTRAL, ls=":", lw=1)
            ax.axhline(0, color=NEUTRAL, lw=0.8)
            ax.set_ylim(min(0.0, float(df[k].min())) - 0.04 * start[k], 1.08 * max(start[k], 1e-9))
            ax.set_title(RESOURCE_UNITS[k], loc="left")
            ax.set_xticks(df["round"], [*map(str, df["round"][:-1]), "end"])
            ax.set_xlabel("before round")
            left = float(df[k].iloc[-1])
            ax.annotate(f"left {left:g} of {start[k]:g}", (1, 1), xycoords="axes fraction",
                        ha="right", va="bottom", fontsize=8.5, color=NEUTRAL)
        axes[0].set_ylabel("remaining")
        axes[0].legend(loc="lower left", frameon=False, fontsize=8)
        fig.tight_layout()
        return Figure(_save(fig, path), None, title)


# ----------------------------------------------------------------------------- gains

def plot_believed_realized(data: rd.ReportData, path: Path, level: float = 0.9) -> Figure:
    """Believed gain (μ, stored HDI) next to the realized ΔĴ (Newcombe interval)."""
    title = "Believed vs realized gain of each executed adaptation"
    df = et.believed_vs_realized(data, level)
    if df.empty:
        return Figure(None, "no data: needs a PairedEval of a chosen adaptation, with the round of the decision that chose it", title)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(df) + 2.5), 3.8))
        x = np.arange(len(df))
        b_err = np.array([df["believed"] - df["hdi_low"], df["hdi_high"] - df["believed"]])
        r_err = np.array([df["realized"] - df["low"], df["high"] - df["realized"]])
        ax.errorbar(x - 0.12, df["believed"], yerr=np.where(np.isfinite(b_err), b_err, 0),
                    fmt="o", color="#4c6ef5", capsize=4, lw=1.8, label="believed μ (stored HDI)")
        ax.errorbar(x + 0.12, df["realized"], yerr=r_err, fmt="s", color="#e8590c", capsize=4,
                    lw=1.8, label=f"realized ΔĴ ({round(100 * level)}% Newcombe)")
        ax.axhline(0, color=NEUTRAL, lw=0.8)
        ax.set_xticks(x, [f"round {r.round}\n{r.candidate}" for r in df.itertuples()])
        ax.set_xlim(-0.6, len(df) - 0.4)
        ax.set_ylabel("gain in success probability")
        ax.grid(axis="x", visible=False)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, 1.16), ncols=2, frameon=False)
        return Figure(_save(fig, path), None, title)


def plot_sensitivity(data: rd.ReportData, path: Path, level: float = 0.9) -> Figure:
    """Ranking of mismatch directions by the drop in success at level 1; pair synergy."""
    title = "Sensitivity ranking: drop in success at mismatch level 1"
    single, pairs, policy = et.sensitivity_frames(data, level)
    if single.empty:
        return Figure(None, "no data: needs SensitivityTrial records of one policy at level 0 and at level 1 of a mismatch direction", title)
    with plt.rc_context(STYLE):
        ncols = 2 if not pairs.empty else 1
        fig, axes = plt.subplots(1, ncols, figsize=(10 if ncols == 2 else 7, 0.45 * len(single) + 1.9),
                                 squeeze=False, gridspec_kw={"width_ratios": [3, 2][:ncols]})
        ax = axes[0, 0]
        y = np.arange(len(single))[::-1]
        ax.barh(y, single["drop"], 0.6, color="#74c0fc")
        ax.errorbar(single["drop"], y, xerr=[single["drop"] - single["low"], single["high"] - single["drop"]],
                    fmt="none", color="black", capsize=3, lw=1.2)
        ax.set_yticks(y, [f"{r.direction} ({r.tier})" for r in single.itertuples()])
        ax.axvline(0, color=NEUTRAL, lw=0.8)
        ax.set_xlabel(f"J(0) − J(level 1), {round(100 * level)}% Newcombe interval")
        ax.set_title(f"policy {policy}" if policy else "policy unnamed", loc="left", fontsize=9, color=NEUTRAL)
        ax.grid(axis="y", visible=False)
        if ncols == 2:
            a2 = axes[0, 1]
            yp = np.arange(len(pairs))[::-1]
            a2.errorbar(pairs["synergy"], yp, xerr=[pairs["synergy"] - pairs["low"], pairs["high"] - pairs["synergy"]],
                        fmt="D", color="#862e9c", capsize=3)
            a2.set_yticks(yp, list(pairs["pair"]))
            a2.set_ylim(-0.8, len(pairs) - 0.2)
            a2.axvline(0, color=NEUTRAL, lw=0.8)
            a2.set_xlabel("synergy (> 0: the pair hurts more than the sum)")
            a2.set_title("pairs at (1, 1), normal approximation", loc="left", fontsize=9, color=NEUTRAL)
            a2.grid(axis="y", visible=False)
        fig.tight_layout()
        return Figure(_save(fig, path), None, title, ("pairs",) if ncols == 2 else ())


# ----------------------------------------------------------------------------- risk

def plot_risk(data: rd.ReportData, path: Path) -> Figure:
    """Execution-risk UCB per robot-touching candidate vs α_exec; deployment UCB vs α_deploy."""
    title = "Risk bounds: execution (per candidate) and deployment (terminal policy)"
    ex = et.exec_risk_frame(data)
    dep = et.deployment_check(data)
    if ex.empty and dep is None:
        return Figure(None, "no data: needs ExecutionOutcome records of a robot-touching candidate, or a DeploymentEval of the deployed policy", title)
    delta = data.setting("delta", 0.05)
    with plt.rc_context(STYLE):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, max(2.6, 0.5 * len(ex) + 1.8)),
                                     gridspec_kw={"width_ratios": [3, 2]})
        if ex.empty:
            a1.text(0.5, 0.5, "no robot-touching candidate", ha="center", va="center",
                    transform=a1.transAxes, color=NEUTRAL)
            a1.set_axis_off()
        else:
            y = np.arange(len(ex))[::-1]
            a1.barh(y, ex["ucb"], 0.55, color=[PASS if p else FAIL for p in ex["passes"]])
            for yi, r in zip(y, ex.itertuples()):
                text = (f"{r.unsafe}/{r.executions} unsafe, UCB {r.ucb:.3f}" if r.executions
                        else "never run: UCB 1")
                if r.ucb > 0.6:  # a long bar: write inside it
                    a1.annotate(text, (r.ucb, yi), xytext=(-12, 0), textcoords="offset points",
                                va="center", ha="right", fontsize=8.5, color="white")
                else:
                    a1.annotate(text, (max(r.ucb, r.alpha), yi), xytext=(5, 0),
                                textcoords="offset points", va="center", fontsize=8.5)
            used = ex["ucb_decision"].to_numpy(dtype=float)
            if np.isfinite(used).any():
                a1.plot(used, y, "D", color="black", ms=6, mfc="white", clip_on=False)
            a1.axvline(ex["alpha"].iloc[0], color="black", ls="--", lw=1.2)
            a1.annotate(f"α_exec = {ex['alpha'].iloc[0]:g}", (ex["alpha"].iloc[0], len(ex) - 0.45),
                        ha="left", fontsize=8.5, xytext=(3, 0), textcoords="offset points")
            a1.set_yticks(y, list(ex["candidate"]))
            a1.set_xlim(0, min(1.0, 2.0 * max(ex["ucb"].max(), ex["alpha"].iloc[0])))
            a1.set_ylim(-0.6, len(ex) - 0.1)
            a1.set_xlabel(f"P(unsafe execution), Clopper–Pearson UCB at {1 - delta:g}"
                          + ("\n◇ the bound the last decision used" if np.isfinite(used).any() else ""))
            a1.set_title("execution risk, per robot-touching candidate", loc="left", fontsize=10)
            a1.grid(axis="y", visible=False)
        if dep is None:
            a2.text(0.5, 0.5, "no deployment check recorded", ha="center", va="center",
                    transform=a2.transAxes, color=NEUTRAL)
            a2.set_axis_off()
        else:
            ucb = dep["ucb_unsafe"] if math.isfinite(dep["ucb_unsafe"]) else dep.get("ucb_recomputed", math.nan)
            alpha = dep["alpha_deploy"]
            ok = dep["passes"] if isinstance(dep["passes"], bool) else (ucb <= alpha)
            a2.barh([0], [ucb], 0.45, color=PASS if ok else FAIL)
            if math.isfinite(alpha):
                a2.axvline(alpha, color="black", ls="--", lw=1.2)
                a2.annotate(f"α_deploy = {alpha:g}", (alpha, 0.3), fontsize=8.5, xytext=(3, 0),
                            textcoords="offset points")
            note = f"{dep['unsafe']}/{dep['episodes']} unsafe" if dep["episodes"] else "no evaluation record"
            a2.annotate(f"UCB {ucb:.3f}\n{note}", (max(ucb, alpha if math.isfinite(alpha) else 0.0), 0),
                        xytext=(5, 0), textcoords="offset points", va="center", fontsize=8.5)
            a2.set_yticks([0], [f"policy {dep['policy']}"])
            a2.set_ylim(-0.6, 0.6)
            top = max(ucb, alpha if math.isfinite(alpha) else 0.0)
            a2.set_xlim(0, min(1.0, 2.4 * top) if top > 0 else 1.0)
            a2.set_xlabel("P(unsafe in deployment), UCB")
            a2.set_title("deployment: " + ("deployable" if ok else "NOT deployable"), loc="left",
                         color=PASS if ok else FAIL, fontsize=10)
            a2.grid(axis="y", visible=False)
        fig.tight_layout()
        return Figure(_save(fig, path), None, title)
