"""`bayes-s2r prior`, `fit`, `decide` and `report`: the toolkit on a user's own ledger.

Registered on the root `app` of `bayes_s2r.cli`. Heavy imports stay inside the commands.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from bayes_s2r.cli import _console, app
from bayes_s2r.errors import InputError
from bayes_s2r.vocab import RESOURCES, Budget, ResourceWeights

__all__ = ["decide_command", "fit_command", "parse_resources", "prior_command", "report_command"]


def parse_resources(text: str, field: str, *, allowed=RESOURCES) -> dict[str, float]:
    """Parse "real=10,compute=100,eng=40" into a dict; errors name the option."""
    out: dict[str, float] = {}
    if not isinstance(text, str) or not text.strip():
        raise InputError(field, text, f"comma-separated key=value pairs with keys among {list(allowed)}")
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in allowed:
            raise InputError(field, part, f"key=value with a key among {list(allowed)}")
        if key in out:
            raise InputError(field, part, f"each key once ({key} repeated)")
        try:
            number = float(value)
        except ValueError:
            raise InputError(f"{field}.{key}", value, "a number") from None
        if not math.isfinite(number) or number < 0:
            raise InputError(f"{field}.{key}", value, "a finite number >= 0")
        out[key] = number
    return out


LedgerOpt = Annotated[Path, typer.Option("--ledger", help="The ledger's SQLite file.", show_default=False)]
CandidatesOpt = Annotated[Path, typer.Option("--candidates", help="Candidates TOML file.", show_default=False)]
MethodOpt = Annotated[str, typer.Option(help="Gain posterior: nuts (exact) or svi (fast).")]
PriorOpt = Annotated[Path | None, typer.Option(
    "--prior", help="JSON file of GainPrior fields (as `bayes-s2r prior --out` writes; default: the "
                    "library's prior).", show_default=False)]


def _read_prior(path: Path | None):
    """The GainPrior of a `--prior` JSON file (None: the library's default)."""
    if path is None:
        return None
    from bayes_s2r.campaign.config import _gain_prior

    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise InputError("--prior", str(path), f"a readable JSON file of GainPrior fields ({e})") from None
    try:
        return _gain_prior(data, field="prior")
    except InputError as e:
        raise InputError(e.field, e.value, e.expected, where=f"--prior {path}") from None


def _side_tables(path: Path) -> dict:
    """The [budget] and [weights] tables of a candidates TOML file, if any."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}  # load_candidates reports the problem with the file itself
    return {k: data[k] for k in ("budget", "weights") if isinstance(data.get(k), dict)}


def _weights_table(table: dict, field: str) -> ResourceWeights:
    allowed = (*RESOURCES, "scarcity")
    for key, value in table.items():
        if key not in allowed:
            raise InputError(f"{field}.{key}", value, f"a key among {list(allowed)}")
    return ResourceWeights(**table)


def _open_evidence(ledger_path: Path, candidates_path: Path):
    from bayes_s2r.evidence.io import load_candidates
    from bayes_s2r.evidence.ledger import Ledger

    candidates = load_candidates(candidates_path)
    with Ledger(ledger_path, create=False) as ledger:
        records = ledger.summed_records()   # paired evaluations summed: the fits read totals
    if not records:
        raise InputError("--ledger", str(ledger_path), "a ledger holding evidence (this one is empty)")
    return records, candidates


def _fit(records, candidates, method: str, seed: int, prior=None):
    from bayes_s2r.belief import fit_exec_risk, fit_gains

    if method not in ("nuts", "svi"):
        raise InputError("--method", method, "nuts or svi")
    belief = fit_gains(records, candidates, method=method, seed=seed, **({"prior": prior} if prior else {}))
    risk = fit_exec_risk(records, candidates)
    return belief, risk


def _frame_json(frame) -> list[dict]:
    rows = json.loads(frame.reset_index().to_json(orient="records"))
    return rows


@app.command("fit")
def fit_command(
    ledger: LedgerOpt,
    candidates: CandidatesOpt,
    method: MethodOpt = "nuts",
    prior: PriorOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of the fit.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Fit the belief to a ledger: gains with intervals, diagnostics, execution-risk bounds."""
    gain_prior = _read_prior(prior)
    records, cands = _open_evidence(ledger, candidates)
    belief, risk = _fit(records, cands, method, seed, gain_prior)
    summary = belief.summary()
    risk_table = risk.table(0.05)
    if as_json:
        typer.echo(json.dumps({"gains": _frame_json(summary), "diagnostics": belief.diagnostics,
                               "exec_risk": _frame_json(risk_table)}, default=float, indent=1))
        return
    console = _console()
    console.print(summary.round(4).to_string())
    d = belief.diagnostics
    console.print(f"\ndiagnostics: R-hat max {d['rhat_max']:.3f}, ESS min {d['ess_min']:.0f}, "
                  f"divergences {d['divergences']}, ok={d['ok']}" + (f" ({d['reason']})" if d.get("reason") else ""))
    console.print("\nexecution risk (UCB at 95%):")
    console.print(risk_table.round(4).to_string())


@app.command("decide")
def decide_command(
    ledger: LedgerOpt,
    candidates: CandidatesOpt,
    budget: Annotated[str | None, typer.Option(
        help="Remaining budget, e.g. real=10,compute=100,eng=40 (default: the [budget] table "
             "of the candidates file).", show_default=False)] = None,
    weights: Annotated[str | None, typer.Option(
        help="Resource weights in J per unit, e.g. real=0.02,compute=0.001,eng=0.004,scarcity=0 "
             "(default: the [weights] table of the candidates file, else the package defaults).",
        show_default=False)] = None,
    method: MethodOpt = "nuts",
    prior: PriorOpt = None,
    alpha_exec: Annotated[float, typer.Option(help="Execution-risk level of the gate.")] = 0.05,
    delta: Annotated[float, typer.Option(help="One minus the confidence of the bounds.")] = 0.05,
    beta: Annotated[float, typer.Option(help="Weight of the look-ahead value CVU in Q.")] = 1.0,
    cvu_samples: Annotated[int, typer.Option(help="Simulated outcomes per candidate.")] = 1024,
    utility: Annotated[str, typer.Option(
        help="Decision functional: mean, lcb, cvar, or adopt (a new policy is kept only if it "
             "evaluates better: a try is worth E[max(gain, 0)]).")] = "mean",
    lookahead_depth: Annotated[int, typer.Option(
        help="Decisions the look-ahead sees after the one it scores: 1, or 2 to value a cheap "
             "experiment by the tries it can save (slower: use fewer --cvu-samples, e.g. 128).")] = 1,
    seed: Annotated[int, typer.Option(help="Seed of the fit and the look-ahead.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Which candidate should the next unit of budget go to, on the evidence in a ledger?"""
    from bayes_s2r.decision import decide
    from bayes_s2r.decision.config import UTILITIES
    from bayes_s2r.evidence.io import load_candidates

    load_candidates(candidates)  # a missing or malformed file is named before anything else
    gain_prior = _read_prior(prior)
    if utility not in UTILITIES:
        raise InputError("--utility", utility, " or ".join(UTILITIES))
    tables = _side_tables(candidates)
    if budget is not None:
        b = Budget.from_mapping(parse_resources(budget, "--budget"))
    elif "budget" in tables:
        b = Budget.from_mapping(tables["budget"], field=f"{candidates}: budget")
    else:
        raise InputError("--budget", None, "a budget, e.g. real=10,compute=100,eng=40, or a [budget] "
                         "table in the candidates file")
    if weights is not None:
        w = ResourceWeights(**parse_resources(weights, "--weights", allowed=(*RESOURCES, "scarcity")))
    else:
        w = _weights_table(tables.get("weights", {}), f"{candidates}: weights")
    records, cands = _open_evidence(ledger, candidates)
    belief, risk = _fit(records, cands, method, seed, gain_prior)
    d = decide(belief, cands, b, w, risk=risk, alpha_exec=alpha_exec, delta=delta, beta=beta,
               cvu_samples=cvu_samples, seed=seed, utility=utility, allow_bad_belief=True,
               lookahead_depth=lookahead_depth)
    if as_json:
        typer.echo(json.dumps({
            "best": d.best, "stop_reason": d.stop_reason,
            "flip_probability": float(d.flip_probability),
            "p_best": {k: float(v) for k, v in d.p_best.items()},
            "belief_ok": bool(belief.diagnostics["ok"]),
            "table": json.loads(d.table.reset_index().to_json(orient="records")),
            "weight_robustness": _frame_json(d.weight_robustness),
        }, indent=1))
        return
    console = _console()
    if not belief.diagnostics["ok"]:
        console.print(f"[bold]warning:[/] the belief failed its diagnostics ({belief.diagnostics['reason']})")
    console.print(d.text())


@app.command("prior")
def prior_command(
    past: Annotated[list[Path], typer.Argument(help="Ledgers of past campaigns (one campaign each).",
                                               show_default=False)],
    out: Annotated[Path | None, typer.Option(help="Write the chosen prior's fields here (JSON), for "
                                                  "`fit --prior` and `decide --prior`.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Choose the gains prior's candidate level from past campaigns (`fit_gain_prior`)."""
    import dataclasses

    from bayes_s2r.belief import fit_gain_prior
    from bayes_s2r.evidence.ledger import Ledger

    histories = []
    for path in past:
        if not Path(path).is_file():
            raise InputError("PAST", str(path), "an existing ledger file")
        with Ledger(path, create=False) as ledger:
            histories.append(ledger.records())
    fit = fit_gain_prior(histories)
    fields = dataclasses.asdict(fit.prior)
    if out is not None:
        Path(out).write_text(json.dumps(fields, indent=1) + "\n")
    if as_json:
        typer.echo(json.dumps({"prior": fields, "effects": fit.effects, "at_grid_edge": fit.at_grid_edge,
                               "log_bayes_factor_vs_normal": fit.best_minus_normal}, indent=1))
        return
    _console().print(fit.text() + (f"\nwritten to {out}" if out is not None else ""))


@app.command("report")
def report_command(
    ledger: LedgerOpt,
    out: Annotated[Path, typer.Option(help="Folder to write index.html and figures into.")] = Path("report"),
) -> None:
    """Write the HTML report of the campaign in a ledger."""
    from bayes_s2r.evidence.ledger import Ledger
    from bayes_s2r.report import make_report

    with Ledger(ledger, create=False) as led:
        page = make_report(led, out)
    _console().print(f"report written to {page}")
