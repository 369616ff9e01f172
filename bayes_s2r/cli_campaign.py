"""`bayes-s2r demo` and `bayes-s2r resume`: a full campaign on the built-in Brax testbed.

Registered on the root `app` of `bayes_s2r.cli_root`. Heavy imports stay inside the commands.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

from bayes_s2r.cli_decide import print_view
from bayes_s2r.cli_root import _console, app
from bayes_s2r.errors import InputError

__all__ = [
    "DEMO_SETTINGS", "decision_summary", "demo_command", "demo_config", "real_world_cards",
    "resume_command",
]

#: Testbed and loop settings of the demo; --quick trades accuracy for a run of about a minute.
#: At least 59 deployment episodes: with none unsafe, fewer cannot bring the 95% upper bound
#: under alpha_deploy = 0.05, so no policy could ever be called deployable.
DEMO_SETTINGS = {
    "full": {"eval_episodes": 48, "train_iterations": 30, "sweep_episodes": 32, "max_rounds": 5,
             "svi_steps": 3000, "cvu_samples": 256, "deploy_episodes": 100},
    "quick": {"eval_episodes": 24, "train_iterations": 8, "sweep_episodes": 16, "max_rounds": 2,
              "svi_steps": 1500, "cvu_samples": 64, "deploy_episodes": 64},
}


def demo_config(mode: str, seed: int):
    """The demo's campaign configuration: a stated budget and prices in J per unit."""
    from bayes_s2r.campaign import CampaignConfig
    from bayes_s2r.vocab import Budget, ResourceWeights

    s = DEMO_SETTINGS[mode]
    return CampaignConfig(
        budget=Budget(real=4.0, compute=1.0, eng=20.0),
        # one robot-hour is worth 2 points of success rate, one engineer-hour 0.5 points
        weights=ResourceWeights(real=0.02, compute=0.05, eng=0.005, scarcity=0.5),
        max_rounds=s["max_rounds"], cvu_samples=s["cvu_samples"], fit_method="svi",
        fit_options={"svi_steps": s["svi_steps"]}, deploy_episodes=s["deploy_episodes"], seed=seed,
    )


def _executor(world: dict[str, Any]):
    from bayes_s2r.campaign.testbed import TestbedExecutor

    return TestbedExecutor(world["card"], eval_episodes=world["eval_episodes"],
                           sweep_episodes=world["sweep_episodes"],
                           train_iterations=world["train_iterations"])


def _budget_text(b) -> str:
    from bayes_s2r.report.columns import resources_text

    return resources_text({"real": b.real, "compute": b.compute, "eng": b.eng})


def decision_summary(decision, t: int, budget, alpha_exec: float, records=()):
    """One screen for one decision: the choice, its stability, and the table in the same
    columns as `bayes-s2r decide` and the report.

    Args:
        decision: the round's `Decision`.
        t: the round.
        budget: the budget before the round.
        alpha_exec: the safety gate's level.
        records: the evidence the decision saw; a closed gate then says how many clean
            executions would open it.
    """
    from bayes_s2r.cli_decide import _choice_line, _gate_hints, decision_view
    from bayes_s2r.report.columns import rows_of

    gate = _gate_hints(decision, list(records), alpha_exec, decision.config.delta)
    rows = rows_of(decision.table, decision.p_best, gate)
    return decision_view(decision, rows, f"[bold]round {t}[/]: " + _choice_line(decision),
                         [f"budget before the round: {_budget_text(budget)}"])


def _execution_line(report, t: int) -> str:
    ex, d = report.execution, report.decision
    believed = float(d.table.loc[d.best, "mu_dJ"])
    pe = [r for r in ex.records if r.KIND == "paired_eval" and r.candidate == d.best and r.round == t]
    if pe:
        r = pe[0]
        realized = (f"realized {r.delta_hat:+.3f} ({r.successes_treated}/{r.episodes_treated} vs "
                    f"{r.successes_control}/{r.episodes_control} on the robot)")
    else:
        realized = "no paired evaluation"
    if ex.policy is None:
        policy = "policy unchanged"
    else:
        policy = f"policy {ex.policy} adopted" if report.adopted else f"policy {ex.policy} not adopted"
    return (f"  ran {d.best}: believed μ_ΔJ {believed:+.3f}, {realized}\n"
            f"  {policy}; spent {_budget_text(ex.cost)}")


def _deployment_line(dep: dict) -> str:
    verdict = "[bold green]deployable[/]" if dep["passes"] else "[bold red]NOT deployable[/]"
    return (f"[bold]stopped[/] ({dep['stop_reason']}) at round {dep['round']}: deployed policy "
            f"{dep['policy']}, J_real {dep['J_real']:.2f} ({dep['successes']}/{dep['episodes']})\n"
            f"  deployment check: unsafe {dep['unsafe']}/{dep['episodes']}, UCB {dep['ucb_unsafe']:.3f} "
            f"vs α_deploy {dep['alpha_deploy']:g}: {verdict}")


def _seen_before(ledger, t: int) -> list:
    """The records committed before round t's decision: the evidence that decision saw (a round's
    decision and what it ran are committed together, the decision first)."""
    if ledger is None:
        return []
    records = ledger.records()
    mark = max((i for i, r in enumerate(records) if r.KIND == "decision" and r.round == t), default=len(records))
    return records[:mark]


def _round_printer(console, progress, task, state0, ledger=None):
    budget = [state0.budget]

    def show(report) -> None:
        t = report.state.round - 1  # the round that was just committed
        d = report.decision
        if d is not None:
            print_view(console, decision_summary(d, t, budget[0], report.state.config.alpha_exec,
                                                 _seen_before(ledger, t)))
        if report.execution is not None:
            console.print(_execution_line(report, t))
        if report.deployment is not None:
            console.print(_deployment_line(report.deployment))
        console.print()
        budget[0] = report.state.budget
        total = progress.tasks[task].total
        if report.deployment is not None:  # stopped: the bar ends where the campaign did
            done = report.deployment["round"]
            progress.update(task, total=max(done, 1), completed=done, description=f"stopped at round {done}")
        else:
            progress.update(task, completed=min(report.state.round, total),
                            description=f"round {min(report.state.round, total)}/{total}")

    return show


#: The testbed settings a demo stores in its ledger (`campaign.world`), which `resume` needs.
_WORLD_SETTINGS = ("eval_episodes", "train_iterations", "sweep_episodes")


def _stored_world(ledger, path: Path) -> dict[str, Any]:
    """The testbed world a demo campaign stored in its ledger, checked field by field."""
    from bayes_s2r.campaign.state import META_KEYS

    world = ledger.get_meta(META_KEYS["world"])
    if not isinstance(world, dict) or "card" not in world:
        raise InputError("--ledger", str(path), "a ledger of a testbed campaign (bayes-s2r demo)")
    if world["card"] not in real_world_cards():
        raise InputError("campaign.world.card", world["card"], f"a real-world card among {real_world_cards()}")
    for key in _WORLD_SETTINGS:
        value = world.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"campaign.world.{key}", value,
                             "a whole number >= 1, as `bayes-s2r demo` stores it")
    return world


def _write_report(ledger, out: Path) -> Path:
    """The campaign's report, as every run writes it (the stored posterior summaries), then
    the mark that it was written: a process killed before the mark rewrites it on resume."""
    from bayes_s2r.campaign.state import META_KEYS
    from bayes_s2r.report import make_report

    page = make_report(ledger, out, posterior="summary")
    if ledger.get_meta(META_KEYS["report"]) is None:
        ledger.set_meta(META_KEYS["report"], {"records": len(ledger)})
    return page


def _report_complete(ledger, out: Path) -> bool:
    """Whether `out` holds a finished report of the campaign: marked written in the ledger,
    with its page and every figure the page shows."""
    import re

    from bayes_s2r.campaign.state import META_KEYS

    index = out / "index.html"
    if ledger.get_meta(META_KEYS["report"]) is None or not index.is_file():
        return False
    figures = re.findall(r'src="([^"]+\.png)"', index.read_text(encoding="utf-8", errors="replace"))
    return all((out / name).is_file() for name in figures)


def _check_report_folder(out: Path, ledger_path: Path) -> None:
    """Refuse to replace, in a folder other than the ledger's own, the report of another
    ledger that still exists (as `report` does)."""
    from bayes_s2r.report.html import report_owner

    if out.resolve() == ledger_path.resolve().parent:  # a campaign folder, perhaps copied whole
        return
    owner = report_owner(out)
    if owner and Path(owner).exists() and not Path(owner).samefile(ledger_path):
        raise InputError("--out", str(out), f"a folder without another campaign's report (it holds the "
                         f"report of the ledger {owner}; choose another --out)")


def _run(ledger_path: Path, out: Path, world: dict[str, Any] | None, config=None) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from bayes_s2r.campaign import load_state, run_campaign, start_campaign
    from bayes_s2r.campaign.state import pending_steps
    from bayes_s2r.campaign.testbed import run_shakedown, testbed_candidates
    from bayes_s2r.evidence.ledger import Ledger

    console = _console()
    started = time.perf_counter()
    # Brax says on every load that it is no longer maintained; the demo's reader cannot act on it
    warnings.filterwarnings("ignore", message="Brax System", category=UserWarning)
    resuming = world is None
    with Ledger(ledger_path) as ledger:
        # Every step that touches the world is committed before the next starts (the
        # shakedown, each round, the report), so resume repeats what an uninterrupted run does.
        if not resuming:  # a new campaign
            executor = _executor(world)
            start_campaign(ledger, testbed_candidates(world["eval_episodes"]), config, executor, world=world)
            console.print(f"[bold]campaign on the testbed[/]: sim 'sim_nominal' vs hidden real world "
                          f"'{world['card']}'\n  budget {_budget_text(config.budget)}; "
                          f"{config.max_rounds} rounds at most")
        else:
            world = _stored_world(ledger, ledger_path)
            executor = _executor(world)
            state = load_state(ledger)
            console.print(f"[bold]resuming the campaign[/] on '{world['card']}' at round {state.round}: "
                          f"budget left {_budget_text(state.budget)}, deployed policy {state.policy}\n")
        if "shakedown" in pending_steps(ledger, shakedown=True):
            with console.status("safety shakedown on the robot (compiling the rollouts first)"):
                shakedown = run_shakedown(ledger, executor)
            console.print("  safety shakedown: " + ", ".join(
                f"{r.candidate} {r.unsafe}/{r.executions} unsafe" for r in shakedown) + "\n")
        state = load_state(ledger)
        total = state.config.max_rounds
        columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task(f"round {min(state.round, total)}/{total}", total=total,
                                     completed=min(state.round, total))
            state = run_campaign(ledger, executor,
                                 on_round=_round_printer(progress.console, progress, task, state, ledger))
        page = _write_report(ledger, out)
    console.print(f"report: {page}\nledger: {ledger_path}\n({time.perf_counter() - started:.0f} s)")


def real_world_cards() -> list[str]:
    """Names of the hidden real worlds shipped with the testbed."""
    from importlib import resources

    cards = resources.files("bayes_s2r.sim") / "cards"
    return sorted(f.name[:-5] for f in cards.iterdir() if f.name.startswith("real_") and f.name.endswith(".toml"))


@app.command("demo")
def demo_command(
    quick: Annotated[bool, typer.Option("--quick", help="Small settings: about a minute.")] = False,
    world: Annotated[str, typer.Option(help="Hidden real world card of the testbed.")] = "real_latency",
    out: Annotated[Path, typer.Option(help="Folder for the report and the ledger.")] = Path("report"),
    seed: Annotated[int, typer.Option(help="Seed of the campaign.")] = 0,
) -> None:
    """Run a sim-to-real campaign on the built-in Brax testbed and write its report."""
    mode = "quick" if quick else "full"
    s = DEMO_SETTINGS[mode]
    if world not in real_world_cards():
        raise InputError("--world", world, f"a real-world card among {real_world_cards()}")
    if out.exists() and not out.is_dir():
        raise InputError("--out", str(out), "a folder (or a path where one can be made)")
    out.mkdir(parents=True, exist_ok=True)
    ledger_path = out / "ledger.sqlite"
    for suffix in ("", "-wal", "-shm"):  # the demo always starts a fresh campaign
        Path(str(ledger_path) + suffix).unlink(missing_ok=True)
    spec = {"card": world, "eval_episodes": s["eval_episodes"], "train_iterations": s["train_iterations"],
            "sweep_episodes": s["sweep_episodes"]}
    _run(ledger_path, out, spec, demo_config(mode, seed))


@app.command("resume")
def resume_command(
    ledger: Annotated[Path, typer.Option("--ledger", help="The campaign's ledger.", show_default=False)],
    out: Annotated[Path | None, typer.Option(help="Report folder (default: next to the ledger).")] = None,
) -> None:
    """Continue an interrupted testbed campaign from its last completed round."""
    from bayes_s2r.campaign.state import META_KEYS, load_state
    from bayes_s2r.evidence.ledger import Ledger

    if not ledger.is_file():
        raise InputError("--ledger", str(ledger), "an existing ledger file")
    out = out or ledger.parent
    if out.exists() and not out.is_dir():
        raise InputError("--out", str(out), "a folder (or a path where one can be made)")
    with Ledger(ledger, create=False) as led:
        state = load_state(led)
        deployment = led.get_meta(META_KEYS["deployment"])
        if state.status == "stopped":
            console = _console()
            if _report_complete(led, out):
                console.print(f"the campaign in {ledger} has already finished ({len(state.history)} rounds): "
                              "nothing to resume.")
            else:  # stopped while its report was written, or the report was removed since
                _check_report_folder(out, ledger)
                console.print(f"the campaign in {ledger} has finished ({len(state.history)} rounds); "
                              "its report was missing or incomplete: writing it again.")
                _write_report(led, out)
            if isinstance(deployment, dict):
                console.print(_deployment_line(deployment))
            console.print(f"its report: {out / 'index.html'}")
            return
        _stored_world(led, ledger)  # a clear error before the testbed loads
    _check_report_folder(out, ledger)
    _run(ledger, out, None)
