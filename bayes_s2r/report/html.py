"""`make_report`: one self-contained folder (index.html + PNGs) made from the ledger alone.

The page carries a campaign summary (world, budget per resource, final decision,
deployability), a decisions table per round with each round's full candidate table
folded away, and the figures, each with a one-line caption saying how to read it.
Styling is inline CSS; the only script is a few lines that mark each image as loaded
(data-loaded="1") or broken ("0"), which the tests read back from a real browser.
"""

from __future__ import annotations

import html
import math
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bayes_s2r.errors import InputError
from bayes_s2r.report import data as rd
from bayes_s2r.report import evidence_tables as et
from bayes_s2r.report import figures as rf
from bayes_s2r.report.beliefs import report_belief
from bayes_s2r.report.columns import COLUMNS, headers, legend, resources_text, rows_of
from bayes_s2r.report.page_style import CSS, IMAGE_SCRIPT
from bayes_s2r.vocab import RESOURCES

__all__ = ["CAPTIONS", "CAPTION_PARTS", "FIGURE_FILES", "OWNER_META", "make_report", "report_owner"]

FIGURE_FILES = ("posterior.png", "decomposition.png", "budget.png", "believed_realized.png",
                "stability.png", "sensitivity.png", "risk.png")

CAPTIONS = {
    "posterior.png": "Each row is one adaptation candidate: the dot is its posterior median gain in "
                     "success probability, the thick bar its interquartile range, the thin bar its "
                     "90% highest-density interval; right of the "
                     "dashed zero line means the candidate is believed to help.",
    "decomposition.png": "Per round, left: the chosen candidate (or the best one at a stop), right and "
                         "faded: the runner-up. Blue U0 is the believed gain minus the priced cost, "
                         "orange β·CVU the look-ahead value, the black tick Q = U0 + β·CVU; the "
                         "largest Q above 0 is run.",
    "budget.png": "One panel per resource in its own units: the line is the start budget minus the "
                  "realized costs, stepping down after each round; crosses are the budget the "
                  "campaign recorded before the round and should sit on the line.",
    "believed_realized.png": "For each executed adaptation, blue is the gain believed when it was "
                             "chosen (mean and stored HDI), orange the gain then measured in the "
                             "paired evaluation (90% Newcombe interval); orange far from blue means "
                             "the belief was off.",
    "stability.png": "Left: the share of posterior draws under which each candidate (or stopping) "
                     "would be the best choice. Right: the flip probability of the choice made; "
                     "low means the decision is stable.",
    "sensitivity.png": "Mismatch directions ranked by the drop in success when that mismatch is set to "
                       "level 1 (a plausible real-world size), the others nominal, with 90% Newcombe "
                       "intervals.",
    "risk.png": "Left: for each candidate that touches the robot, the Clopper–Pearson upper bound on "
                "P(unsafe execution) from its recorded executions (white diamond: the bound the "
                "last decision used); green passes α_exec (dashed). Right: the deployment check "
                "of the terminal policy against α_deploy, a different event never pooled with it.",
}

#: Added to a caption only when its figure draws that part.
CAPTION_PARTS = {
    ("sensitivity.png", "pairs"): " Right: pair synergy; above 0 the pair hurts more than the sum.",
}

STOP_WORDS = {
    "economic": "economic stop: no feasible candidate has Q above the stop's",
    "budget": "stopped: budget exhausted",
    "no_feasible": "stopped: no feasible candidate",
    "round_limit": "stopped: round limit reached",
}


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _f(v: Any, digits: int = 3) -> str:
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "—"
    return f"{v:.{digits}f}" if abs(v) < 1e4 else f"{v:.3g}"


def _g(v: float) -> str:
    return "—" if not math.isfinite(v) else f"{v:.4g}"


# ----------------------------------------------------------------------------- header

def _final_decision(data: rd.ReportData) -> tuple[str, str]:
    if not data.decisions:
        return "No decisions", ("The ledger holds no decision yet: `bayes-s2r decide` records one, "
                                "and a campaign records one per round.")
    last = data.decisions[-1]
    if last.chosen is None:
        return f"Stopped at round {last.round}", STOP_WORDS.get(last.stop_reason or "",
                                                                  f"stopped ({last.stop_reason})")
    tail = f"; {STOP_WORDS.get(last.stop_reason, last.stop_reason)}" if last.stop_reason else ""
    return f"Round {last.round}: run {last.chosen}", f"latest decision{tail}"


def _deployment(data: rd.ReportData) -> tuple[str, str, str]:
    dep = et.deployment_check(data)
    if dep is None:
        return "Deployment not checked", "no deployment evaluation in the ledger", "neutral"
    ucb = dep["ucb_unsafe"] if math.isfinite(dep["ucb_unsafe"]) else dep.get("ucb_recomputed", math.nan)
    ok = dep["passes"] if isinstance(dep["passes"], bool) else (ucb <= dep["alpha_deploy"])
    comparable = math.isfinite(ucb) and math.isfinite(dep["alpha_deploy"])
    sign = ("≤" if ucb <= dep["alpha_deploy"] else ">") if comparable else "vs"
    source = " (the library default: the ledger records none)" if dep.get("alpha_source") == "library default" else ""
    detail = (f"policy {dep['policy']}: UCB[P(unsafe)] {_g(ucb)} {sign} α_deploy "
              f"{_g(dep['alpha_deploy'])}{source}"
              + (f"; {dep['unsafe']}/{dep['episodes']} unsafe" if dep["episodes"] else "")
              + (f"; J_real {_g(dep['J_real'])}" if math.isfinite(dep["J_real"]) else ""))
    return ("Deployable" if ok else "Not deployable"), detail, ("pass" if ok else "fail")


def _budget_table(data: rd.ReportData) -> str:
    summary = rd.budget_summary(data)
    if summary is None:
        return ('<p class="note">No start budget: a campaign\'s config holds one, and each decision '
                "that `bayes-s2r decide` records holds the budget it was given.</p>")
    rows = "".join(
        f"<tr><th>{_e(rf.RESOURCE_UNITS[k])}</th><td>{_g(r.start)}</td><td>{_g(r.spent)}</td>"
        f"<td>{_g(r.left)}</td></tr>" for k, r in zip(RESOURCES, summary.itertuples()))
    return ('<table class="budget"><thead><tr><th>budget</th><th>start</th><th>spent</th>'
            f"<th>left</th></tr></thead><tbody>{rows}</tbody></table>")


def _header(data: rd.ReportData, title: str) -> str:
    c = data.campaign
    facts = [("world", c.get("world")), ("seed", c.get("seed")), ("rounds decided", len(data.decisions)),
             ("last completed round", data.meta.get("last_completed_round")),
             ("records", len(data.records))]
    facts = [(k, v) for k, v in facts if v is not None]  # a ledger filled by hand has no world or seed
    for key in ("alpha_exec", "alpha_deploy", "delta", "beta"):
        if key in c:
            facts.append((key.replace("alpha_", "α_").replace("delta", "δ").replace("beta", "β"), c[key]))
    final, final_detail = _final_decision(data)
    dep, dep_detail, dep_class = _deployment(data)
    facts_html = "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in facts)
    return f"""<header>
<h1>{_e(title)}</h1>
<dl class="facts">{facts_html}</dl>
<div class="cards">
  <div class="card"><div class="label">final decision</div><div class="value">{_e(final)}</div>
    <div class="detail">{_e(final_detail)}</div></div>
  <div class="card {dep_class}"><div class="label">deployment</div><div class="value">{_e(dep)}</div>
    <div class="detail">{_e(dep_detail)}</div></div>
</div>
{_budget_table(data)}
</header>"""


# ----------------------------------------------------------------------------- decisions

def _spent_by_round(data: rd.ReportData) -> dict[int, str]:
    """Realized cost per round with units and three significant digits ("0.747 robot-h, 2 eng-h")."""
    totals: dict[int, dict[str, float]] = {}
    for r in data.of(rd.RealizedCost):
        t = totals.setdefault(r.round, dict.fromkeys(RESOURCES, 0.0))
        for k in RESOURCES:
            t[k] += float(getattr(r, k))
    return {t: resources_text(v, skip_zero=True).replace("nothing", "0") for t, v in totals.items()}


def _candidate_table(d, beta: float) -> str:
    """A round's candidates in the columns `bayes-s2r decide` and the demo print."""
    table = rd.decision_table(d)
    if table.empty:
        return '<p class="note">no candidate table recorded</p>'
    extra = rd._extra(d)
    utility = extra.get("utility") if "gain" in table else "mean"  # older tables: the mean gain
    names = headers(utility)
    rows = rows_of(table, extra.get("p_best") or {})
    head = "".join(f"<th>{_e(h)}</th>" for h in ["candidate", "role", *(names[c] for c in COLUMNS),
                                                  "not feasible"])
    body = []
    for r in rows:
        cells = "".join(f'<td class="num">{_f(r[c], 2 if c == "p_best" else 3)}</td>' for c in COLUMNS)
        mark = ' class="chosen"' if r["name"] == d.chosen else ""
        body.append(f"<tr{mark}><th>{_e(r['name'])}</th><td>{_e(r['role'] or '—')}</td>{cells}"
                    f"<td>{_e(r['why'])}</td></tr>")
    return (f'<table class="cands"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
            f'<p class="note">{_e(legend(utility, beta))}</p>')


def _decisions(data: rd.ReportData) -> str:
    if not data.decisions:
        return ('<section><h2>Decisions per round</h2><p class="note">No decisions in the ledger: '
                "the campaign has not decided any round yet.</p></section>")
    df = rd.decisions_frame(data)
    spent = _spent_by_round(data)
    beta = data.setting("beta", 1.0)
    rows = []
    for r in df.itertuples():
        chosen = _e(r.chosen) if isinstance(r.chosen, str) else '<span class="stop">stop</span>'
        stop = r.stop_reason if isinstance(r.stop_reason, str) else "—"
        # at a stop nothing was chosen: the next best is the best feasible candidate
        nxt, q_nxt = (r.runner_up, r.Q_runner_up) if isinstance(r.chosen, str) else (r.lead, r.Q_lead)
        runner = nxt if isinstance(nxt, str) else "—"
        rows.append(
            f"<tr><td>{r.round}</td><td>{chosen}</td><td>{_e(stop)}</td>"
            f'<td class="num">{_f(r.Q_lead) if isinstance(r.chosen, str) else "—"}</td>'
            f"<td>{_e(runner)}</td><td class=\"num\">{_f(q_nxt)}</td>"
            f'<td class="num">{_f(r.p_best_chosen, 2)}</td><td class="num">{_f(r.flip_probability, 2)}</td>'
            f"<td>{_e(spent.get(r.round, '—'))}</td></tr>")
    details = "".join(
        f"<details><summary>Round {d.round}: all candidates</summary>{_candidate_table(d, beta)}</details>"
        for d in data.decisions)
    return f"""<section><h2>Decisions per round</h2>
<table class="decisions"><thead><tr><th>round</th><th>chosen</th><th>stop reason</th><th>Q (chosen)</th>
<th>next best</th><th>Q (next best)</th><th>p_best (chosen)</th><th>flip probability</th>
<th>realized cost</th></tr></thead><tbody>{''.join(rows)}</tbody></table>
{details}</section>"""


def _figure_html(fig: rf.Figure, level: float) -> str:
    caption = CAPTIONS.get(fig.file or "", "") + "".join(
        CAPTION_PARTS[(fig.file, part)] for part in fig.parts if (fig.file, part) in CAPTION_PARTS)
    caption = caption.replace("90%", f"{100 * level:g}%")
    note = f'<p class="note">{_e(fig.note)}</p>' if fig.note else ""
    if fig.file is None:
        return f'<figure class="empty"><h3>{_e(fig.title)}</h3>{note}</figure>'
    return (f'<figure><h3>{_e(fig.title)}</h3><img src="{_e(fig.file)}" alt="{_e(fig.title)}">'
            f"<figcaption>{_e(caption)}</figcaption>{note}</figure>")


# ----------------------------------------------------------------------------- entry point

#: The page's <meta> that names the ledger it was made from, so that `bayes-s2r report`
#: does not overwrite the report of another campaign by mistake.
OWNER_META = "bayes-s2r-ledger"


def _ledger_path(source) -> str | None:
    path = getattr(source, "path", None)
    if not isinstance(path, str) or path == ":memory:":
        return None
    return str(Path(path).resolve())


def report_owner(out_dir) -> str | None:
    """The ledger path a report folder's index.html was made from: "" for a page made from
    records or by an older version, None when there is no page."""
    index = Path(out_dir) / "index.html"
    if not index.is_file():
        return None
    m = re.search(rf'<meta name="{OWNER_META}" content="([^"]*)">', index.read_text(errors="replace"))
    return html.unescape(m.group(1)) if m else ""


def make_report(ledger_or_records, out_dir, *, meta: Mapping[str, Any] | None = None,
                title: str | None = None, posterior: str = "auto",
                fit_kwargs: Mapping[str, Any] | None = None, level: float = 0.9) -> Path:
    """Write the campaign report (index.html and its PNG figures) into `out_dir`.

    Args:
        ledger_or_records: a `Ledger`, a tuple `(records, meta)` or a list of records.
        out_dir: the folder to write; created if missing. Figures of earlier reports
            that this one does not draw are removed, so the folder stays consistent. The
            report is drawn in a hidden folder inside it and moved into place at the end,
            index.html last: a write cut short leaves no index.html, never a page with
            missing or foreign figures.
        meta: campaign metadata; merged over the ledger's own.
        title: page title; defaults to "Sim-to-real campaign: <world>", or for a ledger
            without a campaign "Sim-to-real decisions: <ledger file name>".
        posterior: where the gain posterior comes from: "auto" (refit with `fit_gains`
            using the campaign's fit settings, falling back to the stored summaries),
            "refit" or "summary" (instant; the latest round's stored summary). A refit
            costs as much as one round's fit (a minute or more on a small CPU).
        fit_kwargs: keyword arguments passed to `fit_gains` when refitting.
        level: two-sided level of the frequentist intervals (realized gains, sensitivity).

    Returns:
        The path of out_dir/index.html.

    Example:
        >>> import tempfile
        >>> page = make_report([], tempfile.mkdtemp(), posterior="summary")
        >>> "No decisions" in page.read_text()
        True
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InputError("level", level, "a probability strictly between 0 and 1")
    data = rd.load_report_data(ledger_or_records, meta)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("out_dir", str(out), "a folder (or a path where one can be made)")
    out.mkdir(parents=True, exist_ok=True)
    source_path = _ledger_path(ledger_or_records)
    if title is None:
        world = data.campaign.get("world")
        title = (f"Sim-to-real campaign: {world}" if world else
                 f"Sim-to-real decisions: {Path(source_path).name}" if source_path else
                 "Sim-to-real campaign: unnamed world")

    source = report_belief(data, posterior, fit_kwargs)
    for old in out.glob(f"{_STAGING_PREFIX}*"):  # left by a write that was killed
        shutil.rmtree(old, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=out))
    try:
        drawn = _draw(data, source, staging, title, source_path, level)
        _move_into_place(staging, out, drawn)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out / "index.html"


#: Prefix of the hidden folder inside the report folder where a report is drawn before it
#: is moved into place.
_STAGING_PREFIX = ".report-staging-"


def _move_into_place(staging: Path, out: Path, drawn: set[str]) -> None:
    """Replace the report in `out` by the one drawn in `staging`.

    The old index.html goes first and the new one comes last, so a process killed in
    between leaves a folder without a page (seen as unfinished) rather than a page whose
    figures belong to another report. Each move is a rename on one file system.
    """
    (out / "index.html").unlink(missing_ok=True)
    for name in (*FIGURE_FILES, *sorted(drawn - set(FIGURE_FILES))):
        if name in drawn:
            os.replace(staging / name, out / name)
        else:
            (out / name).unlink(missing_ok=True)
    os.replace(staging / "index.html", out / "index.html")


def _draw(data: rd.ReportData, source, out: Path, title: str, source_path: str | None,
          level: float) -> set[str]:
    """Draw the figures into `out` and write the page there; returns the figure files."""
    figs = [rf.plot_posterior(source.belief, source.source, out / "posterior.png")]
    if figs[0].file:
        figs[0] = figs[0]._replace(note=f"Shown instead of a refit: {source.note}."
                                   if source.note else f"Source: {source.source}.")
    figs += [
        rf.plot_decomposition(data, out / "decomposition.png"),
        rf.plot_stability(data, out / "stability.png"),
        rf.plot_budget(data, out / "budget.png"),
        rf.plot_believed_realized(data, out / "believed_realized.png", level),
        rf.plot_sensitivity(data, out / "sensitivity.png", level),
        rf.plot_risk(data, out / "risk.png"),
    ]
    drawn = {f.file for f in figs if f.file}

    from bayes_s2r import __version__

    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<meta name="{OWNER_META}" content="{_e(source_path or '')}">
<style>{CSS}</style></head>
<body><main>
{_header(data, title)}
{_decisions(data)}
<section><h2>Figures</h2>
{''.join(_figure_html(f, level) for f in figs)}
</section>
<footer>Made by bayes_s2r {_e(__version__)} from the ledger alone ({len(data.records)} records).</footer>
</main>
<script>{IMAGE_SCRIPT}</script>
</body></html>
"""
    (out / "index.html").write_text(page, encoding="utf-8")
    return drawn
