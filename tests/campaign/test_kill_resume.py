"""A demo campaign killed at each commit point, then resumed, ends as an uninterrupted one.

The demo's command-line flow (`_run` and `resume`) runs here on the testbed's candidates
with a synthetic executor in place of the Brax testbed, so a whole campaign takes seconds.
A kill is modelled two ways: in process, an exception that no handler catches, raised right
after the k-th commit (or in the middle of moving the report into place); and for the
shakedown and the report, a real child process that SIGKILLs itself at that point (the
report's child resumes a campaign stopped right after its last commit, so it does not
compile the rounds again). Either way the resumed ledger must hold the same records and
meta, and the report folder the same page and figures, as a campaign that was never stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import bayes_s2r as bs
from bayes_s2r import cli_campaign
from bayes_s2r.campaign import load_state, testbed
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.report import html as report_html

WORLD = {"card": "real_latency", "eval_episodes": 24, "train_iterations": 2, "sweep_episodes": 16}
LIFT = {"si_retrain": 0.2, "dr_latency": 0.35, "dr_wide": 0.25, "da_obs": 0.05, "ft_real": 0.1}
UNSAFE = {"si_retrain": 0.0, "ft_real": 0.02}
#: The commits of this campaign, in order; the last is the report's mark.
COMMITS = ("start", "shakedown", "round 0", "round 1", "stop", "report")


class FakeTestbed(bs.SyntheticExecutor):
    """The testbed's interface on a synthetic world: a shakedown whose unsafe counts come
    from the key, like the testbed's."""

    def __init__(self):
        super().__init__(bs.SyntheticWorld(start_J=0.4, lift=LIFT, unsafe_rate=UNSAFE,
                                           sensitivity={"latency": 1.0}),
                         eval_episodes=WORLD["eval_episodes"], sweep_episodes=WORLD["sweep_episodes"])

    def shakedown(self, rng_key, candidates, episodes=60):
        out = []
        for i, c in enumerate(c for c in candidates if c.touches_robot):
            rng = np.random.default_rng(np.asarray(jax.random.key_data(jax.random.fold_in(rng_key, i))).tolist())
            out.append(bs.ExecutionOutcome(c.name, episodes, int(rng.binomial(episodes, UNSAFE[c.name])),
                                           round=0))
        return tuple(out)


def config():
    return bs.CampaignConfig(
        budget=bs.Budget(real=4.0, compute=1.0, eng=20.0),
        weights=bs.ResourceWeights(real=0.02, compute=0.05, eng=0.005, scarcity=0.5),
        max_rounds=2, cvu_samples=16, fit_method="svi", fit_options={"svi_steps": 400},
        deploy_episodes=64, seed=1)


class Killed(BaseException):
    """Stands for the process dying: no `except Exception` on the way catches it."""


def use_fake_testbed(monkeypatch) -> None:
    monkeypatch.setattr(cli_campaign, "_executor", lambda world: FakeTestbed())


def kill_after_commit(monkeypatch, k: int, die) -> None:
    """Call `die()` right after the k-th committed transaction (counting from 1)."""
    original = Ledger.transaction
    commits = [0]

    @contextlib.contextmanager
    def transaction(self):
        outermost = not self._depth
        with original(self) as ledger:
            yield ledger
        if outermost:
            commits[0] += 1
            if commits[0] == k:
                die()

    monkeypatch.setattr(Ledger, "transaction", transaction)


def kill_while_moving_the_report(monkeypatch, die) -> None:
    """Call `die()` once the first figure of the report has been moved into place."""
    moves = [0]
    original = os.replace

    def replace(src, dst):
        original(src, dst)
        moves[0] += 1
        if moves[0] == 1:
            die()

    monkeypatch.setattr(report_html.os, "replace", replace)


def raise_killed():
    raise Killed


def snapshot(folder: Path) -> dict:
    """What must match an uninterrupted run: records, meta, the page and its figures."""
    with Ledger(folder / "ledger.sqlite", create=False) as ledger:
        records = [(r.KIND, r.id) for r in ledger.records()]
        meta = ledger.meta()
    page = (folder / "index.html").read_text(encoding="utf-8")
    page = page.replace(str((folder / "ledger.sqlite").resolve()), "LEDGER")
    figures = {p.name: p.read_bytes() for p in sorted(folder.glob("*.png"))}
    leftovers = sorted(p.name for p in folder.glob(".report-staging-*"))
    return {"records": records, "meta": meta, "page": page, "figures": figures, "leftovers": leftovers}


def run_demo(folder: Path) -> None:
    cli_campaign._run(folder / "ledger.sqlite", folder, dict(WORLD), config())


def resume(folder: Path) -> None:
    cli_campaign.resume_command(ledger=folder / "ledger.sqlite", out=None)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    use_fake_testbed(mp)
    commits = [0]
    original = Ledger.transaction

    @contextlib.contextmanager
    def counting(self):
        outermost = not self._depth
        with original(self) as ledger:
            yield ledger
        commits[0] += outermost

    mp.setattr(Ledger, "transaction", counting)
    try:
        folder = tmp_path_factory.mktemp("uninterrupted")
        run_demo(folder)
    finally:
        mp.undo()
    return snapshot(folder), commits[0]


def test_the_campaign_commits_each_step(uninterrupted):
    snap, commits = uninterrupted
    meta = snap["meta"]
    assert meta["campaign.status"] == "stopped" and meta["campaign.report"]
    assert meta["campaign.shakedown"]["records"]
    kinds = [k for k, _ in snap["records"]]
    assert kinds[:2] == ["execution_outcome", "execution_outcome"]  # the shakedown comes first
    assert commits == len(COMMITS)
    assert sum(k == "decision" for k in kinds) == 3  # two rounds and the stop at the round limit
    assert set(snap["figures"]) and not snap["leftovers"]


@pytest.mark.parametrize("k", range(1, len(COMMITS)), ids=COMMITS[:-1])
def test_a_kill_after_any_commit_resumes_to_the_same_campaign(uninterrupted, tmp_path, monkeypatch, k):
    expected, _ = uninterrupted
    use_fake_testbed(monkeypatch)
    with monkeypatch.context() as mp:
        kill_after_commit(mp, k, raise_killed)
        with pytest.raises(Killed):
            run_demo(tmp_path)
    resume(tmp_path)
    assert snapshot(tmp_path) == expected


def test_a_kill_while_the_report_moves_into_place(uninterrupted, tmp_path, monkeypatch):
    expected, _ = uninterrupted
    use_fake_testbed(monkeypatch)
    with monkeypatch.context() as mp:
        kill_while_moving_the_report(mp, raise_killed)
        with pytest.raises(Killed):
            run_demo(tmp_path)
    assert not (tmp_path / "index.html").exists()  # cut short: no page rather than a partial one
    resume(tmp_path)
    assert snapshot(tmp_path) == expected


def test_a_removed_report_is_written_again_and_a_complete_one_left_alone(uninterrupted, tmp_path, monkeypatch):
    expected, _ = uninterrupted
    use_fake_testbed(monkeypatch)
    run_demo(tmp_path)
    (tmp_path / "risk.png").unlink()
    resume(tmp_path)
    assert snapshot(tmp_path) == expected
    page = tmp_path / "index.html"
    before = page.stat().st_mtime_ns
    resume(tmp_path)  # nothing to do
    assert page.stat().st_mtime_ns == before


# --------------------------------------------------------------------------- real kills

def _child(folder: str, point: str) -> None:
    """Run the demo flow in this process and SIGKILL it at `point` ("shakedown": during the
    shakedown's commit, before any round; "report": resuming a campaign whose stop is
    committed, while the report is moved into place)."""
    mp = pytest.MonkeyPatch()
    use_fake_testbed(mp)

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if point == "shakedown":
        original = testbed.run_shakedown

        def run_shakedown(ledger, executor, **kw):
            state = load_state(ledger)
            executor.shakedown(jax.random.key(state.config.seed), state.candidates)
            die()  # the robot ran, nothing was committed
            return original(ledger, executor, **kw)

        mp.setattr(testbed, "run_shakedown", run_shakedown)
        run_demo(Path(folder))
    else:
        kill_while_moving_the_report(mp, die)
        resume(Path(folder))


@pytest.mark.parametrize("point", ["shakedown", "report"])
def test_a_real_sigkill_resumes_to_the_same_campaign(uninterrupted, tmp_path, monkeypatch, point):
    expected, _ = uninterrupted
    if point == "report":  # everything but the report committed, as a kill right after the stop leaves it
        with monkeypatch.context() as mp:
            use_fake_testbed(mp)
            kill_after_commit(mp, COMMITS.index("stop") + 1, raise_killed)
            with pytest.raises(Killed):
                run_demo(tmp_path)
        assert not (tmp_path / "index.html").exists()
    here = Path(__file__).resolve().parent
    code = f"import sys; sys.path.insert(0, {str(here)!r}); import test_kill_resume as t; " \
           f"t._child({str(tmp_path)!r}, {point!r})"
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr
    use_fake_testbed(monkeypatch)
    resume(tmp_path)
    assert snapshot(tmp_path) == expected


# --------------------------------------------------------------------------- the loop alone

def _all_in_campaign(folder: Path) -> list:
    """A campaign whose first round spends the whole budget, so it stops for "budget" in a
    commit of its own after that round's; returns its records (kind, id)."""
    cands = (bs.Candidate("all_in", "adaptation", "data", cost=bs.Cost(1.0, 1.0, 1.0),
                          outcome=bs.BinomialPairedOutcome(episodes=40)),)
    cfg = bs.CampaignConfig(budget=bs.Budget(1.0, 1.0, 1.0), weights=bs.ResourceWeights(0.01, 0.01, 0.01),
                            max_rounds=3, cvu_samples=16, fit_options={"svi_steps": 400}, deploy_episodes=40,
                            seed=2)
    executor = bs.SyntheticExecutor(bs.SyntheticWorld(start_J=0.3, lift={"all_in": 0.6}))
    with Ledger(folder / "ledger.sqlite") as ledger:
        if ledger.get_meta("campaign.config") is None:
            bs.start_campaign(ledger, cands, cfg, executor)
        bs.resume_campaign(ledger, executor)
        return [(r.KIND, r.id) for r in ledger.records()], ledger.get_meta("deployment")


def test_the_all_in_campaign_stops_for_budget_after_its_first_round(tmp_path):
    records, deployment = _all_in_campaign(tmp_path)
    assert deployment["stop_reason"] == "budget" and deployment["round"] == 1
    assert [k for k, _ in records].count("decision") == 2  # the round's, and the stop's without a table


def test_a_kill_between_a_round_and_its_budget_stop(tmp_path, monkeypatch):
    for name in ("whole", "cut"):
        (tmp_path / name).mkdir()
    expected = _all_in_campaign(tmp_path / "whole")
    with monkeypatch.context() as mp:
        kill_after_commit(mp, 2, raise_killed)  # the start, then round 0
        with pytest.raises(Killed):
            _all_in_campaign(tmp_path / "cut")
    assert _all_in_campaign(tmp_path / "cut") == expected
