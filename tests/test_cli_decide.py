"""`bayes-s2r decide` on a user's own ledger: budgets, the record it leaves, the safety gate's
advice, one table vocabulary, and how fast a typo is reported."""

from __future__ import annotations

import importlib.resources
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import bayes_s2r.cli_campaign
import bayes_s2r.cli_decide
from bayes_s2r.cli import app
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import DeploymentEval, PairedEval, SensitivityTrial

EXAMPLES = importlib.resources.files("bayes_s2r") / "examples"
EXAMPLE_CSV = str(EXAMPLES / "ledger.csv")
EXAMPLE_TOML = str(EXAMPLES / "candidates.toml")
FAST = ["--method", "svi", "--cvu-samples", "64"]

NEW_ROBOT_CANDIDATE = """
[[candidate]]
name = "ft_new_gripper"
role = "adaptation"
lens = "optimization"
method = "FT"
cost = { real = 2.0, compute = 1.0, eng = 2.0 }
touches_robot = true
outcome = { kind = "binomial_paired", episodes = 50 }
"""


@pytest.fixture()
def ledger(tmp_path):
    path = tmp_path / "evidence.sqlite"
    with Ledger(path) as led:
        led.import_csv(EXAMPLE_CSV)
    return path


def _decide(*args):
    result = CliRunner().invoke(app, ["decide", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_partial_budget_takes_the_other_resources_from_the_candidates_file(ledger):
    out = json.loads(_decide("--ledger", str(ledger), "--candidates", EXAMPLE_TOML, "--budget", "real=8",
                             "--no-record", "--json", *FAST))
    assert out["budget"] == {"real": 8.0, "compute": 100.0, "eng": 40.0}  # the file's [budget]
    assert out["stop_reason"] != "budget"
    text = _decide("--ledger", str(ledger), "--candidates", EXAMPLE_TOML, "--budget", "real=8", "--no-record",
                   *FAST)
    assert "real from --budget; compute and eng from" in " ".join(text.split())


def test_a_partial_budget_without_a_budget_table_names_what_is_missing(ledger, tmp_path):
    toml = tmp_path / "candidates.toml"
    text = (EXAMPLES / "candidates.toml").read_text()
    toml.write_text(text.replace("[budget]\nreal = 10.0\ncompute = 100.0\neng = 40.0\n", ""))
    result = CliRunner().invoke(app, ["decide", "--ledger", str(ledger), "--candidates", str(toml),
                                      "--budget", "real=8"])
    assert result.exit_code == 2
    assert "expected a value for compute, eng" in result.stderr


def test_decide_records_its_decision_unless_told_not_to(ledger):
    _decide("--ledger", str(ledger), "--candidates", EXAMPLE_TOML, "--no-record", *FAST)
    with Ledger(ledger, create=False) as led:
        assert led.records("decision") == []
    out = _decide("--ledger", str(ledger), "--candidates", EXAMPLE_TOML, *FAST)
    assert "as round 2" in out  # the example's evidence is from rounds 0 and 1
    with Ledger(ledger, create=False) as led:
        (rec,) = led.records("decision")
    payload = rec.payload()
    assert rec.round == 2 and all("name" in row for row in payload["table"])
    assert payload["extra"]["budget"] == {"real": 10.0, "compute": 100.0, "eng": 40.0}
    assert payload["extra"]["alpha_exec"] == 0.05 and payload["extra"]["belief"]
    # deciding again on the same evidence replaces that round rather than adding one
    _decide("--ledger", str(ledger), "--candidates", EXAMPLE_TOML, "--seed", "1", *FAST)
    with Ledger(ledger, create=False) as led:
        assert {r.round for r in led.records("decision")} == {2}
        led.add(PairedEval("dr_wide", 40, 50, 30, 50, round=2))  # the chosen run's result: the next round
    out = json.loads(_decide("--ledger", str(ledger), "--candidates", EXAMPLE_TOML, "--json", *FAST))
    assert out["recorded_round"] == 3


def test_a_robot_candidate_without_executions_says_what_would_open_the_gate(ledger, tmp_path):
    toml = tmp_path / "candidates.toml"
    toml.write_text((EXAMPLES / "candidates.toml").read_text() + NEW_ROBOT_CANDIDATE)
    out = json.loads(_decide("--ledger", str(ledger), "--candidates", str(toml), "--no-record", "--json", *FAST))
    row = next(r for r in out["table"] if r["name"] == "ft_new_gripper")
    assert not row["feasible"] and row["why"].startswith("unsafe")
    assert "no executions on record; 59 more executions without an unsafe event" in row["gate"]
    assert "ExecutionOutcome" in row["gate"]
    text = " ".join(_decide("--ledger", str(ledger), "--candidates", str(toml), "--no-record", *FAST).split())
    assert "not feasible: ft_new_gripper: unsafe" in text and "59 more executions" in text


def test_an_unmeasured_deployed_policy_is_pointed_out(ledger, tmp_path):
    args = ["--candidates", EXAMPLE_TOML, "--no-record", *FAST]
    measured = json.loads(_decide("--ledger", str(ledger), "--json", *args))
    assert measured["current_J_measured"] and "has not been measured" not in _decide("--ledger", str(ledger), *args)
    path = tmp_path / "sweep_only.sqlite"
    with Ledger(path) as led:
        led.add(SensitivityTrial("latency", 0.5, 30, 50, policy="pi0", round=0))
    out = json.loads(_decide("--ledger", str(path), "--json", *args))
    assert not out["current_J_measured"] and out["current_J"] == 0.5
    text = " ".join(_decide("--ledger", str(path), *args).split())
    assert "warning: the deployed policy's J has not been measured" in text and "deployment_eval row" in text
    with Ledger(path) as led:  # its deployment recorded, the warning goes
        led.add(DeploymentEval("pi0", 60, 21, 0, round=0))
    out = json.loads(_decide("--ledger", str(path), "--json", *args))
    assert out["current_J_measured"] and out["current_J"] == pytest.approx(0.35, abs=0.06)
    assert "has not been measured" not in _decide("--ledger", str(path), *args)


def test_one_vocabulary_with_the_utility_in_the_header(ledger):
    out = json.loads(_decide("--ledger", str(ledger), "--candidates", EXAMPLE_TOML, "--utility", "adopt",
                             "--no-record", "--json", *FAST))
    assert out["columns"]["gain"] == "E[ΔJ·P(adopt|ΔJ)]"
    assert "U0 = E[ΔJ·P(adopt|ΔJ)] − C_λ" in out["legend"]
    for r in out["table"]:
        assert r["U0"] == pytest.approx(r["gain"] - r["C_lambda"])
        assert r["Q"] == pytest.approx(r["U0"] + r["CVU"])
    assert {r["name"] for r in out["table"]} >= set(out["p_best"]) - {"(stop)"}
    text = _decide("--ledger", str(ledger), "--candidates", EXAMPLE_TOML, "--utility", "adopt", "--no-record",
                   *FAST)
    header = next(line for line in text.splitlines() if line.startswith("candidate"))
    assert header.split() == ["candidate", "role", "E[ΔJ·P(adopt|ΔJ)]", "C_λ", "U0", "CVU", "Q", "p_best"]
    assert "U0 = E[ΔJ·P(adopt|ΔJ)] − C_λ" in " ".join(text.split())
    for internal in ("J_now", "belief.extra", "G0(", "C_lambda", "C_lam ", "±se"):
        assert internal not in text


def test_the_demo_shows_a_decision_in_the_same_columns():
    from rich.console import Console

    import bayes_s2r as bs

    cands = [bs.Candidate("dr_wide", "adaptation", "data", cost=bs.Cost(compute=4.0),
                          outcome=bs.BinomialPairedOutcome(episodes=50))]
    belief = bs.GainBelief.from_gaussian(["dr_wide"], [0.1], [0.05], num_draws=1000)
    budget = bs.Budget(real=1, compute=10, eng=1)
    d = bs.decide(belief, cands, budget, bs.ResourceWeights(), cvu_samples=16, utility="adopt")
    console = Console(record=True, width=200)
    bayes_s2r.cli_decide.print_view(console, bayes_s2r.cli_campaign.decision_summary(d, 0, budget, 0.05))
    text = console.export_text()
    header = next(line for line in text.splitlines() if line.startswith("candidate"))
    assert header.split() == ["candidate", "role", "E[ΔJ·P(adopt|ΔJ)]", "C_λ", "U0", "CVU", "Q", "p_best"]
    assert "U0 = E[ΔJ·P(adopt|ΔJ)] − C_λ" in text
    assert "budget before the round: real 1 robot-h, compute 10 compute-h, eng 1 eng-h" in text


def test_the_utility_choices_are_the_library_s():
    from bayes_s2r.decision.config import UTILITIES

    assert bayes_s2r.cli_decide.UTILITY_CHOICES == UTILITIES


@pytest.mark.parametrize("args", [
    ["--candidates", "{bad_toml}"],
    ["--candidates", "{bad_role}"],
    ["--candidates", EXAMPLE_TOML, "--budget", "real=8,gpu=1"],
    ["--candidates", EXAMPLE_TOML, "--utility", "maximum"],
    ["--candidates", EXAMPLE_TOML, "--adopted", "pi1=dr_wide"],
    ["--candidates", EXAMPLE_TOML, "--trained-from", "pi0", "--adopted", "pi1"],
    ["--candidates", EXAMPLE_TOML, "--trained-from", "pi0", "--adopted", "pi0=dr_wide"],
    ["--candidates", EXAMPLE_TOML, "--trained-from", "pi0", "--adopted", "pi1=dr_wide", "--adopted", "pi1=si_calibrate"],
])
def test_a_typo_is_reported_before_jax_loads(tmp_path, args):
    bad = tmp_path / "bad.toml"
    bad.write_text("[budget\n")
    role = tmp_path / "role.toml"
    role.write_text((EXAMPLES / "candidates.toml").read_text().replace('role = "adaptation"', 'role = "adapt"', 1))
    argv = ["bayes-s2r", "decide", "--ledger", str(tmp_path / "x.sqlite"),
            *[a.format(bad_toml=bad, bad_role=role) for a in args]]
    code = ("import sys\nfrom bayes_s2r.cli import main\nsys.argv = " + repr(argv) + "\n"
            "try:\n    main()\nexcept SystemExit as e:\n    print('exit', e.code)\n"
            "print('jax loaded' if 'jax' in sys.modules else 'no jax')\n")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["exit", "2", "no", "jax"], out.stdout + out.stderr


def test_the_command_line_fits_as_the_campaign_does_by_default():
    from bayes_s2r.campaign.config import CAMPAIGN_FIT
    from bayes_s2r.cli_decide import DEFAULT_METHOD

    assert DEFAULT_METHOD == CAMPAIGN_FIT.method


ALTERNATIVES_TOML = """
[budget]
real = 0.0
compute = 20.0
eng = 20.0

""" + "".join(f"""
[[candidate]]
name = "{name}"
role = "adaptation"
lens = "{lens}"
method = "{method}"
cost = {{ compute = 2.0, eng = 1.0 }}
outcome = {{ kind = "binomial_paired", episodes = 400 }}
""" for name, lens, method in (("a", "data", "DR"), ("b", "data", "DR"), ("c", "representation", "DA")))


def test_candidates_that_are_alternatives_are_valued_over_the_deployed_one(tmp_path):
    """a measured +0.3 from p0 and deployed as p1; b then measured against p1. Told that every
    candidate is trained from p0, the fit reads p1 as a: a adds nothing over itself, while read
    as stacked gains a repeated on p1 would add about as much again."""
    toml = tmp_path / "alternatives.toml"
    toml.write_text(ALTERNATIVES_TOML)
    path = tmp_path / "alternatives.sqlite"
    with Ledger(path) as led:
        led.add(PairedEval("a", 280, 400, 160, 400, round=0, policy="p0"))
        led.add(PairedEval("b", 200, 400, 284, 400, round=1, policy="p1"))
    base = ["--ledger", str(path), "--candidates", str(toml), "--policy", "p1", "--method", "svi"]
    fit = CliRunner().invoke(app, ["fit", *base, "--json"])
    assert fit.exit_code == 0, fit.output
    stacked = {r["candidate"]: r for r in json.loads(fit.stdout)["gains"]}
    alternatives = ["--trained-from", "p0", "--adopted", "p1=a"]
    out = json.loads(_decide(*base, *alternatives, "--cvu-samples", "64", "--json"))
    assert out["fit_reused"] is False  # the stacked fit stored by `fit` is another question
    gains = {r["name"]: r["gain"] for r in out["table"]}
    assert stacked["a"]["mean"] > 0.15
    assert abs(gains["a"]) < 0.01 and gains["b"] == pytest.approx(-0.2, abs=0.05)
    assert out["current_J"] == pytest.approx(0.7, abs=0.03)  # J of a's policy, not of p0
    with Ledger(path, create=False) as led:
        (rec,) = led.records("decision")
    assert rec.payload()["extra"]["trained_from"] == "p0"
    assert rec.payload()["extra"]["lineage"] == {"p1": ["a"]}
    wrong = CliRunner().invoke(app, ["decide", *base, "--trained-from", "p0", "--adopted", "p1=zz"])
    assert wrong.exit_code == 2 and "lineage['p1']" in wrong.stderr
    typo = CliRunner().invoke(app, ["fit", *base[:4], "--policy", "p9"])
    assert typo.exit_code == 2 and "--policy" in typo.stderr and "['p0', 'p1']" in typo.stderr
    with Ledger(path, create=False) as led:
        assert len(led.records("decision")) == 1  # the refused commands recorded nothing
