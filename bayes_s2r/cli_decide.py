"""`bayes-s2r prior`, `fit`, `decide` and `report`: the toolkit on a user's own ledger.

Registered on the root `app` (`bayes_s2r.cli_root`). Heavy imports stay inside the commands.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from bayes_s2r.cli_root import _console, app, root_devices
from bayes_s2r.errors import InputError
from bayes_s2r.vocab import RESOURCES, Budget, ResourceWeights

__all__ = [
    "UTILITY_CHOICES",
    "decide_command",
    "decision_view",
    "fit_command",
    "parse_resources",
    "print_view",
    "prior_command",
    "report_command",
]


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
MethodOpt = Annotated[str, typer.Option(
    help="Gain posterior: svi (fast; the campaign's default too) or nuts (exact sampling, slower).")]
#: The fit a command runs unless told otherwise: the campaign's (`CAMPAIGN_FIT`), so a decision
#: on the command line matches the loop's. On the example ledger SVI chooses as NUTS does
#: (flip probability 0.40 against 0.39) and answers a first `decide` in 8.8 s against 14.8 s
#: (benchmarks/bench_cli_decide.py, 2 cores).
DEFAULT_METHOD = "svi"
PriorOpt = Annotated[Path | None, typer.Option(
    "--prior", help="JSON file of GainPrior fields (as `bayes-s2r prior --out` writes; default: the "
                    "library's prior).", show_default=False)]
TrainedFromOpt = Annotated[str | None, typer.Option(
    "--trained-from", help="The candidates are alternatives, each trained from this policy, and the best one "
                           "measured is kept: each is valued by what it adds over the deployed one "
                           "(default: each adds to the deployed policy).", show_default=False)]
AdoptedOpt = Annotated[list[str] | None, typer.Option(
    "--adopted", help="POLICY=CANDIDATE: a policy of the ledger that is that candidate's training (with "
                      "--trained-from; once per adopted alternative).", show_default=False)]
PolicyOpt = Annotated[str | None, typer.Option(
    "--policy", help="The deployed policy the gains refer to (default: the policy of the latest round).",
    show_default=False)]


def _alternatives_options(trained_from: str | None, adopted: list[str] | None, policy: str | None) -> dict:
    """`fit_gains` keywords of --trained-from, --adopted and --policy (checked before JAX loads)."""
    out = {} if policy is None else {"current_policy": policy}
    if trained_from is None:
        if adopted:
            raise InputError("--adopted", adopted[0], "--trained-from too (an adopted alternative is trained "
                                                      "from that policy)")
        return out
    trained_from = trained_from.strip()
    if not trained_from:
        raise InputError("--trained-from", trained_from, "a policy label")
    lineage: dict[str, list[str]] = {}
    for item in adopted or ():
        pol, sep, cand = (x.strip() for x in item.partition("="))
        if not sep or not pol or not cand:
            raise InputError("--adopted", item, "POLICY=CANDIDATE")
        if pol == trained_from:
            raise InputError("--adopted", item, f"a policy other than {trained_from} (--trained-from, the policy "
                                                "every alternative is trained from)")
        if pol in lineage:
            raise InputError("--adopted", item, f"each policy once ({pol} repeated)")
        lineage[pol] = [cand]
    return {**out, "trained_from": trained_from, "lineage": lineage}


def _check_policy(records, alternatives: dict) -> None:
    """A --policy that no record of the ledger (nor --trained-from or --adopted) names is a typo:
    the gains would be priced from a policy with no evidence."""
    policy = alternatives.get("current_policy")
    named = {getattr(r, "policy", None) for r in records} | set(alternatives.get("lineage", {}))
    named |= {alternatives.get("trained_from")}
    if policy is not None and policy not in named:
        raise InputError("--policy", policy, "a policy of the ledger's records, one of "
                                             f"{sorted(p for p in named if isinstance(p, str))}")


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
    """The [budget] and [weights] tables of a candidates TOML file, if any.

    An unreadable or malformed file is reported by `load_candidates`, which names the
    problem; it fails before it loads anything heavy.
    """
    import tomllib

    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        from bayes_s2r.evidence.io import load_candidates

        load_candidates(path)
        raise
    _check_tables_without_outcomes(path, data)
    return {k: data[k] for k in ("budget", "weights") if isinstance(data.get(k), dict)}


def _check_tables_without_outcomes(path: Path, data: dict) -> None:
    """Validate each [[candidate]] table but its outcome model, with load_candidates' own
    messages: reading an outcome loads JAX (about 2 s), a typo in a role or a cost need not."""
    from bayes_s2r.evidence.io import _candidate

    tables = data.get("candidate")
    for i, table in enumerate(tables if isinstance(tables, list) else []):
        if isinstance(table, dict):
            _candidate(i, {k: v for k, v in table.items() if k != "outcome"}, str(path))


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


#: The ledger meta key under which a command keeps its last fit of the gains, per method.
FIT_META_KEY = "fit.gains.{method}"

RefitOpt = Annotated[bool, typer.Option(
    "--refit", help="Fit again even when the ledger holds a fit of the same evidence, candidates and "
                    "settings (by default that fit's draws are reused).")]


def _fit_settings(method: str, seed: int, prior, alternatives: dict | None = None) -> dict:
    """What besides the evidence and candidates decides a fit's draws (for the stored fit's key)."""
    import dataclasses

    import jax
    import numpyro

    from bayes_s2r import __version__

    # the package's, JAX's and NumPyro's versions and the device count (parallel or
    # sequential chains) change the draws as surely as the seed does
    return {"method": method, "seed": seed, "prior": dataclasses.asdict(prior) if prior else None,
            "bayes_s2r": __version__, "jax": jax.__version__, "numpyro": numpyro.__version__,
            "devices": jax.local_device_count(), **(alternatives or {})}


def _fit(records, candidates, method: str, seed: int, prior=None, *, ledger: Path | None = None,
         refit: bool = False, alternatives: dict | None = None):
    """The gains belief and the execution-risk bounds, and whether the gains were reused.

    `alternatives`: the keywords of `_alternatives_options` for `fit_gains`.

    With `ledger`, a fit stored there from the same evidence, candidates and settings is
    reused (unless `refit`), and a new fit is stored for the next command.

    Returns:
        (belief, risk, reused).
    """
    from bayes_s2r.belief import fit_exec_risk, fit_gains

    if method not in ("nuts", "svi"):
        raise InputError("--method", method, "nuts or svi")
    risk = fit_exec_risk(records, candidates)
    belief, key = None, None
    if ledger is not None:
        from bayes_s2r.belief.stored import fit_key, from_json
        from bayes_s2r.evidence.ledger import Ledger

        key = fit_key(records, candidates, _fit_settings(method, seed, prior, alternatives))
        if not refit:
            with Ledger(ledger, create=False) as led:
                belief = from_json(led.get_meta(FIT_META_KEY.format(method=method)), key)
    if belief is not None:
        return belief, risk, True
    belief = fit_gains(records, candidates, method=method, seed=seed, **({"prior": prior} if prior else {}),
                       **(alternatives or {}))
    if key is not None:
        _store_fit(ledger, method, belief, key)
    return belief, risk, False


def _store_fit(ledger: Path, method: str, belief, key: str) -> None:
    """Keep the fit in the ledger's meta for the next command; one the meta refuses is not an
    error of the command: the next one fits again."""
    from bayes_s2r.belief.stored import to_json
    from bayes_s2r.evidence.ledger import Ledger

    try:
        with Ledger(ledger, create=False) as led:
            led.set_meta(FIT_META_KEY.format(method=method), to_json(belief, key))
    except InputError:
        pass


_REUSED = ("the belief is the fit stored in the ledger from the same evidence, candidates and settings "
           "(--refit to fit again)")


def _frame_json(frame) -> list[dict]:
    rows = json.loads(frame.reset_index().to_json(orient="records"))
    return rows


@app.command("fit")
def fit_command(
    ledger: LedgerOpt,
    candidates: CandidatesOpt,
    method: MethodOpt = DEFAULT_METHOD,
    prior: PriorOpt = None,
    trained_from: TrainedFromOpt = None,
    adopted: AdoptedOpt = None,
    policy: PolicyOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of the fit.")] = 0,
    refit: RefitOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Fit the belief to a ledger: gains with intervals, diagnostics, execution-risk bounds."""
    _side_tables(candidates)  # a typo in the candidates file is named before JAX loads
    alternatives = _alternatives_options(trained_from, adopted, policy)
    gain_prior = _read_prior(prior)
    records, cands = _open_evidence(ledger, candidates)
    _check_policy(records, alternatives)
    belief, risk, reused = _fit(records, cands, method, seed, gain_prior, ledger=ledger, refit=refit,
                                alternatives=alternatives)
    summary = belief.summary()
    risk_table = risk.table(0.05)
    if as_json:
        typer.echo(json.dumps({"gains": _frame_json(summary), "diagnostics": belief.diagnostics,
                               "exec_risk": _frame_json(risk_table), "fit_reused": reused},
                              default=float, indent=1))
        return
    console = _console()
    console.print(summary.round(4).to_string())
    d = belief.diagnostics
    console.print(f"\ndiagnostics: R-hat max {d['rhat_max']:.3f}, ESS min {d['ess_min']:.0f}, "
                  f"divergences {d['divergences']}, ok={d['ok']}" + (f" ({d['reason']})" if d.get("reason") else ""))
    console.print("\nexecution risk (UCB at 95%):")
    console.print(risk_table.round(4).to_string())
    if reused:
        console.print(f"\n{_REUSED}")


#: The decision functionals of `decide` (bayes_s2r.decision.config.UTILITIES), named here so a
#: typo is reported before JAX loads; a test keeps the two lists equal.
UTILITY_CHOICES = ("mean", "lcb", "cvar", "adopt")


def _budget(text: str | None, tables: dict, candidates: Path) -> tuple[Budget, str]:
    """The budget from --budget, each resource it leaves out taken from the file's [budget].

    Returns the budget and a line saying where each part came from.
    """
    given = parse_resources(text, "--budget") if text is not None else {}
    table = tables.get("budget", {})
    missing = [k for k in RESOURCES if k not in given and k not in table]
    if missing:
        raise InputError("--budget", text, f"a value for {', '.join(missing)} (or a [budget] table in "
                         f"{candidates} that has it), e.g. real=10,compute=100,eng=40")
    values = {k: given.get(k, table.get(k)) for k in RESOURCES}
    budget = Budget.from_mapping(values, field=f"{candidates}: budget" if not given else "--budget")
    from_file = [k for k in RESOURCES if k not in given]
    where = ("from --budget" if not from_file else f"from {candidates} [budget]" if not given else
             f"{' and '.join(k for k in RESOURCES if k in given)} from --budget; "
             f"{' and '.join(from_file)} from {candidates} [budget]")
    return budget, where


def _decision_round(records) -> int:
    """The round a new decision is recorded as.

    The round after the latest evidence and the latest decision; the same round as the last
    decision when nothing but decisions was recorded since (the later one then replaces it).
    """
    from bayes_s2r.evidence.records import DecisionRecord

    decided = [i for i, r in enumerate(records) if isinstance(r, DecisionRecord)]
    if decided and decided[-1] == len(records) - 1:
        return records[decided[-1]].round
    rounds = [r.round + 1 for r in records if isinstance(getattr(r, "round", None), int)]
    return max(rounds, default=0)


def _gate_hints(decision, records, alpha: float, delta: float) -> dict[str, str]:
    """For each candidate the safety gate excludes: what execution evidence would open it."""
    from bayes_s2r.evidence.records import ExecutionOutcome
    from bayes_s2r.report.columns import gate_hint

    out = {}
    for name, row in decision.table.iterrows():
        if bool(row.get("safe", True)):
            continue
        mine = [r for r in records if isinstance(r, ExecutionOutcome) and r.candidate == name]
        out[name] = gate_hint(name, sum(r.unsafe for r in mine), sum(r.executions for r in mine), alpha, delta)
    return out


def _short(why: str) -> str:
    """The first words of each reason ("unsafe", "unaffordable", "already run")."""
    return ", ".join(part.split(":")[0].split(" (")[0].strip() for part in why.split(";") if part.strip())


def decision_view(decision, rows: list[dict], head: str, foot: list[str]):
    """The decision as one screen: a head line, the table in the shared vocabulary, the legend
    and the lines of `foot`. Used by `decide` and by each round of `demo`."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from bayes_s2r.report.columns import COLUMNS, headers, legend

    names = headers(decision.utility_label)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1), collapse_padding=True)
    table.add_column("candidate", no_wrap=True)
    table.add_column("role", no_wrap=True)
    for col in COLUMNS:  # Text headers: "E[ΔJ·P(adopt|ΔJ)]" is not console markup
        table.add_column(Text(names[col]), justify="right", no_wrap=True)
    excluded = [r for r in rows if not r["feasible"]]
    if excluded:
        table.add_column("not feasible", no_wrap=True)
    for r in rows:
        style = "bold green" if r["name"] == decision.best else ("dim" if not r["feasible"] else None)
        cells = [("" if math.isnan(r[c]) else f"{r[c]:.2f}" if c == "p_best" else
                  f"{r[c]:.3f}" if c == "C_lambda" else f"{r[c]:+.3f}") for c in COLUMNS]
        table.add_row(r["name"], str(r["role"]), *cells, *([_short(r["why"])] if excluded else []), style=style)
    lines = [legend(decision.utility_label, decision.config.beta)]
    lines += [f"not feasible: {r['name']}: {r['why']}" + (f"; {r['gate']}" if r["gate"] else "")
              for r in excluded]
    lines += foot
    return Group(Text.from_markup(head), table, Text("\n".join(lines), style="dim"))


def print_view(console, view) -> None:
    """Print a `decision_view` with its table at full width: a narrow or piped console
    (80 columns) would otherwise cut the numbers short; the terminal wraps long lines."""
    table = view.renderables[1]
    wide = console.measure(table, options=console.options.update_width(1000)).maximum
    width = console.width
    console.width = max(width, wide)  # print(width=) cannot go above the console's own width
    try:
        console.print(view)
    finally:
        console.width = width


def _choice_line(decision) -> str:
    if decision.best is not None:
        return (f"[bold]chose [green]{decision.best}[/green][/bold]  (p_best {1 - decision.flip_probability:.2f}, "
                f"flip probability {decision.flip_probability:.2f})")
    return (f"[bold yellow]stop ({decision.stop_reason})[/]  "
            f"(p_best(stop) {1 - decision.flip_probability:.2f})")


def _settings_line(decision) -> str:
    from bayes_s2r.report.columns import UNITS

    lam = ", ".join(f"{k} {v:g} J/{UNITS[k]}" for k, v in decision.lambda_.items())
    stop = ("terminal round: no look-ahead (CVU = 0)" if math.isnan(decision.g0_null)
            else f"stopping scores Q(stop) {decision.stop_Q:+.3f}")
    return (f"utility {decision.utility_label}, β {decision.config.beta:g}, weights λ: {lam}; "
            f"current J {decision.j_now:.3f}; {stop}")


def _robustness_line(decision) -> str:
    rob = "; ".join(f"λ_{r.resource} in [{r.low:.3g}, {r.high:.3g}] (now {r.current:.3g})"
                    for r in decision.weight_robustness.itertuples())
    return f"the choice stays the same while {rob} (each with the others fixed)"


def _record(ledger_path: Path, decision, round_: int, budget: Budget, belief, settings: dict) -> None:
    """Add the decision to the ledger as a DecisionRecord, with what the report reads."""
    import dataclasses

    from bayes_s2r.evidence.ledger import Ledger

    rec = decision.to_record(round=round_)
    summary = belief.summary()
    extra = {**dict(rec.extra), **settings, "budget": dict(zip(RESOURCES, budget.as_array().tolist())),
             "belief": json.loads(summary.to_json(orient="index")), "hdi_prob": 0.9,
             "source": "bayes-s2r decide"}
    with Ledger(ledger_path, create=False) as ledger:
        ledger.add(dataclasses.replace(rec, extra=extra, id=None))


# Without J of the deployed policy every gain is priced from a guess (docs/decide.md, "Measure the
# deployed policy first", says what it changed on the benchmarks).
_UNMEASURED_J = ("[bold]warning:[/] the deployed policy's J has not been measured (no deployment_eval or paired "
                 "control arm of it in the ledger), so every gain is priced from J {j:.1f}, a guess. Record a "
                 "deployment evaluation of it first (a deployment_eval row, docs/formats.md).")


@app.command("decide")
def decide_command(
    ctx: typer.Context,
    ledger: LedgerOpt,
    candidates: CandidatesOpt,
    budget: Annotated[str | None, typer.Option(
        help="Remaining budget, e.g. real=10,compute=100,eng=40; a resource left out is taken from "
             "the [budget] table of the candidates file (default: that table).", show_default=False)] = None,
    weights: Annotated[str | None, typer.Option(
        help="Resource weights in J per unit, e.g. real=0.02,compute=0.001,eng=0.004,scarcity=0 "
             "(default: the [weights] table of the candidates file, else the package defaults).",
        show_default=False)] = None,
    method: MethodOpt = DEFAULT_METHOD,
    prior: PriorOpt = None,
    trained_from: TrainedFromOpt = None,
    adopted: AdoptedOpt = None,
    policy: PolicyOpt = None,
    alpha_exec: Annotated[float, typer.Option(help="Execution-risk level of the gate.")] = 0.05,
    delta: Annotated[float, typer.Option(help="One minus the confidence of the bounds.")] = 0.05,
    beta: Annotated[float, typer.Option(help="Weight of the look-ahead value CVU in Q.")] = 1.0,
    cvu_samples: Annotated[int, typer.Option(help="Simulated outcomes per candidate.")] = 1024,
    utility: Annotated[str, typer.Option(
        help="Decision functional: mean, lcb, cvar, or adopt (a new policy is kept only if its paired "
             "evaluation shows it better: a try is worth E[ΔJ·P(adopt|ΔJ)]).")] = "mean",
    lookahead_depth: Annotated[int, typer.Option(
        help="Decisions the look-ahead sees after the one it scores: 1, or 2 to value a cheap "
             "experiment by the tries it can save (slower: use fewer --cvu-samples, e.g. 128).")] = 1,
    seed: Annotated[int, typer.Option(help="Seed of the fit and the look-ahead.")] = 0,
    refit: RefitOpt = False,
    record: Annotated[bool, typer.Option(
        "--record/--no-record", help="Add the decision to the ledger, so `report` shows it.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Which candidate should the next unit of budget go to, on the evidence in a ledger?"""
    # every check that needs no JAX comes first, so a typo is reported at once: reading the
    # candidates themselves loads the outcome models, and with them JAX (about 2 s)
    tables = _side_tables(candidates)  # a missing or malformed file is named before anything else
    if utility not in UTILITY_CHOICES:
        raise InputError("--utility", utility, " or ".join(UTILITY_CHOICES))
    b, budget_source = _budget(budget, tables, candidates)
    if weights is not None:
        w = ResourceWeights(**parse_resources(weights, "--weights", allowed=(*RESOURCES, "scarcity")))
    else:
        w = _weights_table(tables.get("weights", {}), f"{candidates}: weights")
    alternatives = _alternatives_options(trained_from, adopted, policy)
    gain_prior = _read_prior(prior)
    records, cands = _open_evidence(ledger, candidates)
    _check_policy(records, alternatives)

    from bayes_s2r.decision import decide
    from bayes_s2r.decision.problem import DEFAULT_J_SOURCE
    from bayes_s2r.decision.transition import TRANSITIONS
    from bayes_s2r.report.columns import headers, legend, resources_text, rows_of

    belief, risk, reused = _fit(records, cands, method, seed, gain_prior, ledger=ledger, refit=refit,
                                alternatives=alternatives)
    # alternatives: the look-ahead keeps the best one measured instead of stacking gains
    rule = TRANSITIONS["alternatives"]() if "trained_from" in alternatives else None
    d = decide(belief, cands, b, w, risk=risk, alpha_exec=alpha_exec, delta=delta, beta=beta,
               cvu_samples=cvu_samples, seed=seed, utility=utility, allow_bad_belief=True,
               lookahead_depth=lookahead_depth, transition=rule, devices=root_devices(ctx))
    gate = _gate_hints(d, records, alpha_exec, delta)
    j_measured = d.j_source != DEFAULT_J_SOURCE
    rows = rows_of(d.table, d.p_best, gate)
    round_ = _decision_round(records) if record else None
    if record:
        _record(ledger, d, round_, b, belief, {"alpha_exec": alpha_exec, "delta": delta, "beta": beta,
                                               **alternatives})
    if as_json:
        typer.echo(json.dumps({
            "best": d.best, "stop_reason": d.stop_reason, "utility": d.utility_label,
            "columns": {"name": "candidate", "role": "role", **headers(d.utility_label),
                        "why": "not feasible", "gate": "what would open the safety gate"},
            "legend": legend(d.utility_label, beta),
            "flip_probability": float(d.flip_probability),
            "p_best": {k: float(v) for k, v in d.p_best.items()},
            "stop_Q": float(d.stop_Q), "current_J": float(d.j_now), "current_J_measured": j_measured,
            "belief_ok": bool(belief.diagnostics["ok"]), "fit_reused": reused,
            "budget": dict(zip(RESOURCES, b.as_array().tolist())),
            "table": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
                      for r in rows],
            "weight_robustness": _frame_json(d.weight_robustness),
            "recorded_round": round_,
        }, indent=1))
        return
    console = _console()
    if not belief.diagnostics["ok"]:
        console.print(f"[bold]warning:[/] the belief failed its diagnostics ({belief.diagnostics['reason']})")
    if not j_measured:
        console.print(_UNMEASURED_J.format(j=d.j_now))
    foot = [f"budget: {resources_text(dict(zip(RESOURCES, b.as_array().tolist())))} ({budget_source})",
            _settings_line(d), _robustness_line(d)]
    if reused:
        foot.append(_REUSED)
    foot.append(f"recorded in {ledger} as round {round_} (--no-record to skip)" if record
                else "not recorded (--no-record)")
    print_view(console, decision_view(d, rows, _choice_line(d), foot))


@app.command("prior")
def prior_command(
    past: Annotated[list[Path], typer.Argument(
        help="Past campaigns, one each: a ledger, or a .csv / .json file of its trials.", show_default=False)],
    out: Annotated[Path | None, typer.Option(help="Write the chosen prior's fields here (JSON), for "
                                                  "`fit --prior` and `decide --prior`.")] = None,
    skew: Annotated[bool, typer.Option(
        "--skew", help="Also search the candidate level's skew (a few large gains among many small "
                       "ones; GainPrior.candidate_skew).")] = False,
    method_means: Annotated[bool | None, typer.Option(
        "--method-means/--one-mean",
        help="Give each method its own prior mean, fitted on its past candidates' effects (GainPrior.method_locs; "
             "needs --candidates), or one mean for all. Default: each method's own when --candidates is given.",
        show_default=False)] = None,
    candidates: Annotated[Path | None, typer.Option(
        "--candidates", help="Candidates TOML file naming the past candidates' methods (for each method's mean).",
        show_default=False)] = None,
    shrink: Annotated[bool | None, typer.Option(
        "--shrink/--own-means",
        help="Shrink each method's mean toward a common mean fitted with it, averaged over the posterior of the "
             "methods' spread (fit_gain_prior's gain_locs, method_spreads and integrate_method_spread), or fit "
             "each on its own. Needs --candidates. Default: shrunk when each method has its own mean.",
        show_default=False)] = None,
    hierarchy: Annotated[bool | None, typer.Option(
        "--hierarchy/--no-hierarchy",
        help="Size the levels above the candidate's (the gain, method and group levels) with the fitted candidate "
             "level, or keep the library's (fit_gain_prior's scale_hierarchy). Default: sized when the methods' "
             "means are shrunk, except with --shared.",
        show_default=False)] = None,
    shared: Annotated[bool, typer.Option(
        "--shared", help="Size the levels one campaign's candidates share by the evidence (fit_gain_prior's "
                         "shared_scales; 0 makes them independent given the prior).")] = False,
    one_fix: Annotated[bool | None, typer.Option(
        "--one-fix/--no-one-fix",
        help="Also search the one-fix structure (at most one candidate of a campaign is the fix; "
             "GainPrior.fix_prob, fix_loc, fix_scale; probability 0 is none), sized by each past campaign's "
             "effects taken jointly; with --candidates each method's own probability, shrunk toward one by the "
             "evidence (GainPrior.method_fix_probs). Not with --shared. Default: searched, except with --shared.",
        show_default=False)] = None,
    fix_per_method: Annotated[bool | None, typer.Option(
        "--fix-per-method/--no-fix-per-method",
        help="With the one-fix structure, also search a fix per method (GainPrior.fix_unit): each method works in "
             "a campaign with its probability, and then all its candidates are fixes; kept only by a log Bayes "
             "factor above 1 over one fix per campaign. Needs --candidates. Default: searched with --candidates "
             "and the one-fix structure.",
        show_default=False)] = None,
    baseline: Annotated[bool, typer.Option(
        "--baseline", help="Also fit where the team's policies start (GainPrior.baseline_loc, baseline_scale) to the "
                           "past campaigns' starting policies, so that gains are priced at the J a campaign "
                           "usually starts from before it measures its own.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Choose the gains prior's candidate level from past campaigns (`fit_gain_prior`), then check
    the chosen prior's predictive against them (`check_gain_prior`)."""
    import dataclasses

    from bayes_s2r.belief import check_gain_prior, fit_gain_prior
    from bayes_s2r.belief.team_prior import (
        DEFAULT_FIX_PROBS,
        DEFAULT_LOCS,
        DEFAULT_METHOD_FIX_CONCENTRATIONS,
        DEFAULT_METHOD_LOCS,
        DEFAULT_METHOD_SPREADS,
        DEFAULT_SHARED_SCALES,
        DEFAULT_SKEWS,
        MIN_EFFECTS_FOR_LOC,
    )
    from bayes_s2r.evidence.io import read_csv, read_json
    from bayes_s2r.evidence.ledger import Ledger

    if method_means and candidates is None:
        raise InputError("--candidates", None, "a candidates TOML file naming the methods, with --method-means")
    if shrink and (candidates is None or method_means is False):
        raise InputError("--shrink", True, "--candidates naming the methods, and not --one-mean")
    if method_means is None:  # each method's own mean when the methods are known (docs/decide.md, team prior)
        method_means = candidates is not None
    if shrink is None:  # shrunk, with the hierarchy sized, by default (docs/decide.md, team prior)
        shrink = method_means
    if hierarchy is None:  # --shared sizes those levels by the evidence instead
        hierarchy = shrink and not shared
    if one_fix and shared:
        raise InputError("--one-fix", True, "off with --shared (the two are not searched together)")
    if one_fix is None:  # searched by default (docs/decide.md, "When at most one candidate is the fix")
        one_fix = not shared
    if fix_per_method and (candidates is None or not one_fix):
        raise InputError("--fix-per-method", True, "--candidates naming the methods, and the one-fix search on")
    if fix_per_method is None:  # searched by default (docs/decide.md, "When a method works for all of its candidates")
        fix_per_method = candidates is not None and one_fix
    methods = None
    if candidates is not None:
        from bayes_s2r.evidence.io import load_candidates

        methods = {c.name: c.method for c in load_candidates(candidates) if c.method}
    histories = []
    for path in past:
        if not Path(path).is_file():
            raise InputError("PAST", str(path), "an existing ledger file")
        suffix = Path(path).suffix.lower()
        if suffix in (".csv", ".json"):  # a past campaign's trials as exported or written by hand
            histories.append((read_csv if suffix == ".csv" else read_json)(path)[0])
            continue
        with Ledger(path, create=False) as ledger:
            histories.append(ledger.records())
    # shrunk means: toward a fitted common mean, averaged over the spread (docs/decide.md, team prior)
    fit = fit_gain_prior(histories, candidate_skews=DEFAULT_SKEWS if skew else (0.0,), methods=methods,
                         gain_locs=DEFAULT_LOCS if shrink else None, scale_hierarchy=hierarchy,
                         method_locs=DEFAULT_METHOD_LOCS if method_means and not shrink else None,
                         method_spreads=DEFAULT_METHOD_SPREADS if shrink else None, integrate_method_spread=shrink,
                         shared_scales=DEFAULT_SHARED_SCALES if shared else None, baseline_level=baseline,
                         fix_probs=DEFAULT_FIX_PROBS if one_fix else None,
                         method_fix_concentrations=DEFAULT_METHOD_FIX_CONCENTRATIONS if one_fix and methods else None,
                         fix_units=("candidate", "method") if fix_per_method and methods else ("candidate",))
    fields = dataclasses.asdict(fit.prior)
    check = check_gain_prior(histories, fit.prior, methods=methods)
    if out is not None:
        Path(out).write_text(json.dumps(fields, indent=1) + "\n")
    if as_json:
        typer.echo(json.dumps({"prior": fields, "effects": fit.effects, "at_grid_edge": fit.at_grid_edge,
                               "log_bayes_factor_vs_normal": fit.best_minus_normal,
                               **({"method_spread": fit.method_spread} if shrink else {}),
                               **({"shared_scale": fit.shared_scale} if shared else {}),
                               **({"method_fix_concentration":  # null: one fix probability for all methods
                                   None if math.isinf(fit.method_fix_concentration) else fit.method_fix_concentration}
                                  if fit.method_fix_concentration is not None else {}),
                               **({"fix_unit_log_evidence": fit.fix_unit_log_evidence} if fix_per_method else {}),
                               "check": check.to_dict()}, indent=1))
        return
    few = ""
    if method_means and not shrink and not fit.prior.method_locs:  # asked for, or the default, yet nothing to fit
        few = (f"\nno method had {MIN_EFFECTS_FOR_LOC} past effects of its candidates (named in {candidates}): "
               "one mean for all")
    hint = ""
    if check.verdict.startswith("wider") and not shared:
        hint = "\n--shared sizes the levels a campaign's candidates share by the same history"
    _console().print(fit.text() + few + "\n" + check.text() + hint + (f"\nwritten to {out}" if out is not None else ""))


@app.command("report")
def report_command(
    ledger: LedgerOpt,
    out: Annotated[Path, typer.Option(help="Folder to write index.html and figures into.")] = Path("report"),
    force: Annotated[bool, typer.Option(
        "--force", help="Overwrite a report in OUT that was made from another ledger.")] = False,
) -> None:
    """Write the HTML report of the campaign (or the decisions) in a ledger."""
    from bayes_s2r.evidence.ledger import Ledger
    from bayes_s2r.report import make_report
    from bayes_s2r.report.html import report_owner

    owner = report_owner(out)
    if not ledger.is_file():
        raise InputError("--ledger", str(ledger), "an existing ledger file")
    if owner is not None and owner != str(ledger.resolve()) and not force:
        made_from = f"the ledger {owner}" if owner else "another ledger"
        raise InputError("--out", str(out), f"a folder without another campaign's report (it holds the report "
                         f"of {made_from}; --force overwrites it, or choose another --out)")
    with Ledger(ledger, create=False) as led:
        page = make_report(led, out)
    _console().print(f"report written to {page}")
