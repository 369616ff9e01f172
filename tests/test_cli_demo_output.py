"""What the demo prints after its last round: the progress bar ends where the campaign stopped."""

from types import SimpleNamespace

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

import bayes_s2r.cli_campaign as cc
from bayes_s2r.vocab import Budget


def test_the_progress_bar_ends_at_the_round_the_campaign_stopped():
    console = Console(record=True, width=120)
    budget = Budget(real=4, compute=1, eng=20)
    state = SimpleNamespace(round=3, budget=budget, config=SimpleNamespace(alpha_exec=0.05))
    deployment = {"passes": True, "stop_reason": "economic", "round": 3, "policy": "pi2", "J_real": 0.9,
                  "successes": 90, "episodes": 100, "unsafe": 0, "ucb_unsafe": 0.03, "alpha_deploy": 0.05}
    report = SimpleNamespace(state=state, decision=None, execution=None, deployment=deployment)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console) as progress:
        task = progress.add_task("round 3/5", total=5, completed=3)
        cc._round_printer(console, progress, task, state)(report)
        t = progress.tasks[task]
        assert t.description == "stopped at round 3" and t.completed == t.total == 3
    text = console.export_text()
    assert "stopped (economic) at round 3" in text and "α_deploy 0.05" in text
    assert "round 4/5" not in text
