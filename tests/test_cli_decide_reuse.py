"""`fit` and `decide` reuse the fit stored in the ledger while its inputs are unchanged, answer
exactly as a fresh fit with the same seed does, and fit again when the evidence changes."""

from __future__ import annotations

import importlib.resources
import json

import pytest
from typer.testing import CliRunner

import bayes_s2r.cli_campaign
import bayes_s2r.cli_decide  # noqa: F401  (registers fit and decide)
from bayes_s2r.cli import app
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import PairedEval

EXAMPLES = importlib.resources.files("bayes_s2r") / "examples"
FAST = ["--method", "svi", "--cvu-samples", "64"]


@pytest.fixture()
def ledger(tmp_path):
    path = tmp_path / "evidence.sqlite"
    with Ledger(path) as led:
        led.import_csv(str(EXAMPLES / "ledger.csv"))
    return path


def _run(command, ledger, *args):
    result = CliRunner().invoke(app, [command, "--ledger", str(ledger), "--candidates",
                                      str(EXAMPLES / "candidates.toml"), "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _decide(ledger, *args):
    return _run("decide", ledger, *FAST, *args)


def _answer(out):
    """Everything a decision says, but whether its fit was reused."""
    return {k: v for k, v in out.items() if k not in ("fit_reused", "recorded_round")}


def test_a_second_decide_reuses_the_fit_and_answers_exactly_as_a_fresh_fit(ledger):
    first = _decide(ledger)
    second = _decide(ledger)  # the first recorded its decision: that is not evidence
    fresh = _decide(ledger, "--refit")
    assert (first["fit_reused"], second["fit_reused"], fresh["fit_reused"]) == (False, True, False)
    assert _answer(second) == _answer(first) == _answer(fresh)
    with Ledger(ledger, create=False) as led:
        assert led.get_meta("fit.gains.svi")["key"]


def test_a_fit_is_reused_by_the_next_decide_and_says_so(ledger):
    fitted = _run("fit", ledger, "--method", "svi")
    assert fitted["fit_reused"] is False
    assert _run("fit", ledger, "--method", "svi") == {**fitted, "fit_reused": True}
    assert _decide(ledger, "--no-record")["fit_reused"] is True
    result = CliRunner().invoke(app, ["decide", "--ledger", str(ledger), "--candidates",
                                      str(EXAMPLES / "candidates.toml"), "--no-record", *FAST])
    assert result.exit_code == 0 and "--refit to fit again" in " ".join(result.stdout.split())


def test_one_more_record_or_a_voided_one_makes_a_new_fit(ledger):
    before = _decide(ledger, "--no-record")
    with Ledger(ledger, create=False) as led:
        led.add(PairedEval("dr_wide", 40, 50, 30, 50, round=1))
    more = _decide(ledger, "--no-record")
    assert more["fit_reused"] is False
    assert _decide(ledger, "--no-record")["fit_reused"] is True
    with Ledger(ledger, create=False) as led:
        led.void(led.records("paired_eval")[0].id, "entered twice")
    voided = _decide(ledger, "--no-record")
    assert voided["fit_reused"] is False
    assert [r["mu_dJ"] for r in voided["table"]] != [r["mu_dJ"] for r in before["table"]]


def test_another_seed_or_candidate_set_is_another_fit_and_a_budget_is_not(ledger, tmp_path):
    _decide(ledger, "--no-record")
    assert _decide(ledger, "--no-record", "--budget", "real=8")["fit_reused"] is True  # not a fit input
    assert _decide(ledger, "--no-record", "--seed", "1")["fit_reused"] is False
    assert _decide(ledger, "--no-record")["fit_reused"] is False  # the seed-1 fit took its place
    text = (EXAMPLES / "candidates.toml").read_text()
    spaced, dearer = tmp_path / "spaced.toml", tmp_path / "dearer.toml"
    spaced.write_text(text.replace("cost = {", "cost =  {"))  # the same candidates, written otherwise
    dearer.write_text(text.replace("real = 0.0, compute = 2.0, eng = 6.0", "real = 0.0, compute = 2.0, eng = 7.0"))
    assert _run("decide", ledger, *FAST, "--no-record")["fit_reused"] is True
    for toml, reused in ((spaced, True), (dearer, False)):
        result = CliRunner().invoke(app, ["decide", "--ledger", str(ledger), "--candidates", str(toml),
                                          "--json", "--no-record", *FAST])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["fit_reused"] is reused
