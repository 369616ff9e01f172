"""`bayes-s2r demo` and `bayes-s2r resume`: a full campaign on the built-in Brax testbed.

Registered on the root `app` of `bayes_s2r.cli`. Heavy imports stay inside the commands.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from bayes_s2r.cli import _console, app
from bayes_s2r.errors import InputError

__all__ = ["DEMO_SETTINGS", "demo_command", "demo_config", "resume_command"]

#: Testbed and loop settings of the demo; --quick trades accuracy for a run of about a minute.
DEMO_SETTINGS = {
    "full": {"eval_episodes": 48, "train_iterations": 30, "sweep_episodes": 32, "max_rounds": 5,
             "svi_steps": 1500, "cvu_samples": 256, "deploy_episodes": 100},
    "quick": {"eval_episodes": 24, "train_iterations": 8, "sweep_episodes": 16, "max_rounds": 2,
              "svi_steps": 300, "cvu_samples": 64, "deploy_episodes": 48},
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


def _round_printer(console, progress, task):
    def show(report) -> None:
        d = report.decision
        t = report.state.round - 1 if report.state.status == "running" else report.state.round
        if d is not None:
            table = d.table.sort_values("Q", ascending=False).head(6)
            lines = [f"round {t}: " + (f"chose {d.best}" if d.best else f"stop ({d.stop_reason})")
                     + f"   flip probability {float(d.flip_probability):.2f}"]
            for name, row in table.iterrows():
                mark = "*" if name == d.best else " "
                lines.append(f"  {mark} {name:<12} mu_dJ {row['mu_dJ']:+.3f}  C_lambda {row['C_lambda']:.3f}"
                             f"  U0 {row['U0']:+.3f}  CVU {row['CVU']:+.3f}  Q {row['Q']:+.3f}"
                             + ("" if row["feasible"] else f"  ({row.get('excluded_reason') or 'excluded'})"))
            console.print("\n".join(lines))
        ex = report.execution
        if ex is not None:
            pe = [r for r in ex.records if r.KIND == "paired_eval"]
            realized = f"realized dJ {pe[0].delta_hat:+.3f}" if pe else "no paired evaluation"
            console.print(f"  -> {realized}; spent real {ex.cost.real:.2f} h, compute {ex.cost.compute:.3f} h, "
                          f"eng {ex.cost.eng:.1f} h; policy {'adopted' if report.adopted else 'kept'}")
        if report.deployment is not None:
            dep = report.deployment
            console.print(f"stopped ({dep['stop_reason']}): deployed policy {dep['policy']} J_real "
                          f"{dep['J_real']:.2f}, unsafe UCB {dep['ucb_unsafe']:.3f} vs alpha "
                          f"{dep['alpha_deploy']}: {'deployable' if dep['passes'] else 'NOT deployable'}")
        progress.update(task, completed=min(report.state.round, progress.tasks[task].total))

    return show


def _run(ledger_path: Path, out: Path, world: dict[str, Any] | None, config=None) -> None:
    import jax
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from bayes_s2r.campaign import load_state, run_campaign, start_campaign
    from bayes_s2r.campaign.testbed import testbed_candidates
    from bayes_s2r.evidence.ledger import Ledger
    from bayes_s2r.report import make_report

    console = _console()
    started = time.perf_counter()
    with Ledger(ledger_path) as ledger:
        if world is not None:  # a new campaign
            executor = _executor(world)
            candidates = testbed_candidates(world["eval_episodes"])
            start_campaign(ledger, candidates, config, executor, world=world)
            shakedown = executor.shakedown(jax.random.key(config.seed), candidates)
            ledger.add_many(shakedown)
            console.print(f"campaign on the testbed: sim 'sim_nominal' vs hidden real world '{world['card']}'; "
                          f"budget real {config.budget.real} h, compute {config.budget.compute} h, "
                          f"eng {config.budget.eng} h; {config.max_rounds} rounds at most")
            console.print("safety shakedown before the campaign: " + ", ".join(
                f"{r.candidate} {r.unsafe}/{r.executions} unsafe" for r in shakedown))
        else:
            world = ledger.get_meta("campaign.world")
            if not isinstance(world, dict) or "card" not in world:
                raise InputError("--ledger", str(ledger_path), "a ledger of a testbed campaign (bayes-s2r demo)")
            executor = _executor(world)
        state = load_state(ledger)
        with Progress(TextColumn("[bold]rounds"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), console=console, transient=False) as progress:
            task = progress.add_task("rounds", total=state.config.max_rounds, completed=state.round)
            state = run_campaign(ledger, executor, on_round=_round_printer(progress.console, progress, task))
        page = make_report(ledger, out, posterior="summary")
    console.print(f"report: {page}   ledger: {ledger_path}   ({time.perf_counter() - started:.0f} s)")


@app.command("demo")
def demo_command(
    quick: Annotated[bool, typer.Option("--quick", help="Small settings: about a minute.")] = False,
    world: Annotated[str, typer.Option(help="Hidden real world card of the testbed.")] = "real_actuator",
    out: Annotated[Path, typer.Option(help="Folder for the report and the ledger.")] = Path("report"),
    seed: Annotated[int, typer.Option(help="Seed of the campaign.")] = 0,
) -> None:
    """Run a sim-to-real campaign on the built-in Brax testbed and write its report."""
    mode = "quick" if quick else "full"
    s = DEMO_SETTINGS[mode]
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
    if not ledger.exists():
        raise InputError("--ledger", str(ledger), "an existing ledger file")
    _run(ledger, out or ledger.parent, None)
