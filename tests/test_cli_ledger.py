"""`bayes-s2r ledger ...` run in-process: init, import, show, export, and the error path."""

from __future__ import annotations

import importlib.resources
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from bayes_s2r.cli import app
from bayes_s2r.evidence.ledger import Ledger

EXAMPLE_CSV = str(importlib.resources.files("bayes_s2r") / "examples" / "ledger.csv")


@pytest.fixture
def runner():
    return CliRunner()


def _ok(runner, *args):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_init_import_show_export_on_the_example_ledger(runner, tmp_path):
    db = str(tmp_path / "campaign.sqlite")
    assert "created ledger" in _ok(runner, "ledger", "init", db)
    assert "opened existing ledger" in _ok(runner, "ledger", "init", db)

    out = _ok(runner, "ledger", "import", db, EXAMPLE_CSV)
    assert "32 records read, 32 new, 0 already present; the ledger holds 32" in " ".join(
        out.split()
    )
    out = _ok(runner, "ledger", "import", db, EXAMPLE_CSV)
    assert "0 new, 32 already present" in " ".join(out.split())

    shown = _ok(runner, "ledger", "show", db)
    counts_table = shown.split("records 13-32 of 32")[0]  # the most recent 20 are listed by default
    for kind, n in [
        ("paired_eval", 11),
        ("sensitivity_trial", 11),
        ("execution_outcome", 5),
        ("deployment_eval", 1),
        ("realized_cost", 4),
    ]:
        (line,) = [ln for ln in counts_table.splitlines() if f" {kind} " in ln]
        assert str(n) in line.split()

    shown = _ok(runner, "ledger", "show", db, "--kind", "execution_outcome", "--limit", "2")
    assert "records 4-5 of 5" in shown and "probe_dr_wide" in shown and "execs" in shown
    counts_only = _ok(runner, "ledger", "show", db, "--limit", "0")
    assert (
        "32 records" in counts_only and "paired_eval" in counts_only and " of 32" not in counts_only
    )

    for fmt in ("csv", "json"):
        out_file = str(tmp_path / f"export.{fmt}")
        assert "exported 32 records" in _ok(runner, "ledger", "export", db, out_file)
        copy = str(tmp_path / f"copy_{fmt}.sqlite")
        _ok(runner, "ledger", "init", copy)
        _ok(runner, "ledger", "import", copy, out_file)
        with Ledger(db) as a, Ledger(copy) as b:
            assert [r.to_dict() for r in a.records()] == [r.to_dict() for r in b.records()]
    assert len(json.loads((tmp_path / "export.json").read_text())["records"]) == 32


def test_single_kind_csv_with_kind_option(runner, tmp_path):
    db = str(tmp_path / "l.sqlite")
    f = tmp_path / "trials.csv"
    f.write_text("direction,level,successes,episodes\nmass,0.5,44,50\n")
    _ok(runner, "ledger", "init", db)
    _ok(runner, "ledger", "import", db, str(f), "--kind", "sensitivity_trial")
    assert "sensitivity_trial" in _ok(runner, "ledger", "show", db, "--kind", "sensitivity_trial")


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["ledger", "import", "{db}", "{bad}"],
            "bad.csv, row 3: paired_eval.successes_treated='x': expected a whole number >= 0",
        ),
        (["ledger", "import", "{missing}", "{bad}"], "expected an existing ledger file"),
        (["ledger", "import", "{db}", "{tmp}/nothing.csv"], "expected an existing CSV file"),
        (["ledger", "import", "{db}", "{tmp}/records.txt"], "a file name ending in .csv or .json"),
        (
            ["ledger", "import", "{db}", "{tmp}/x.json", "--kind", "paired_eval"],
            "no --kind with a JSON file",
        ),
        (["ledger", "show", "{db}", "--kind", "nope"], "kind='nope': expected a record kind"),
        (["ledger", "show", "{missing}"], "expected an existing ledger file"),
        (["ledger", "export", "{db}", "{tmp}"], "a file name ending in .csv or .json"),
        (["ledger", "init", "{tmp}"], "not a folder"),
    ],
)
def test_input_errors_exit_2_with_one_line_on_stderr(runner, tmp_path, args, message):
    db = str(tmp_path / "l.sqlite")
    Ledger(db).close()
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "kind,candidate,successes_treated,episodes_treated,successes_control,episodes_control\n"
        "paired_eval,dr,3,5,2,5\npaired_eval,dr,x,5,2,5\n"
    )
    subs = {
        "db": db,
        "bad": str(bad),
        "missing": str(tmp_path / "missing.sqlite"),
        "tmp": str(tmp_path),
    }
    result = runner.invoke(app, [a.format(**subs) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""
    with Ledger(db) as ledger:
        assert len(ledger) == 0  # nothing stored by a rejected command
    assert not (tmp_path / "missing.sqlite").exists()


def test_usage_errors_and_help(runner):
    assert runner.invoke(app, []).exit_code == 2  # no_args_is_help
    assert "ledger" in runner.invoke(app, ["--help"]).stdout
    result = runner.invoke(app, ["ledger", "show", "x.sqlite", "--limit", "-1"])
    assert result.exit_code == 2


def test_cli_module_does_not_import_jax_by_itself():
    # bayes_s2r/__init__ may import JAX for the package's other parts; the CLI module and the
    # evidence package must not add that dependency themselves.
    code = (
        "import importlib.util, sys, types\n"
        "spec = importlib.util.find_spec('bayes_s2r')\n"
        "parent = types.ModuleType('bayes_s2r')\n"
        "parent.__path__ = list(spec.submodule_search_locations)\n"
        "sys.modules['bayes_s2r'] = parent\n"
        "import bayes_s2r.cli, bayes_s2r.evidence\n"
        "print('jax' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


TYPO_CSV = (
    "kind,id,candidate,successes_treated,episodes_treated,successes_control,episodes_control\n"
    "paired_eval,,dr_wide,30,50,20,50\n"
    "paired_eval,t1,dr_typo_friction,30,50,20,50\n"
)
EXAMPLE_CANDIDATES = str(importlib.resources.files("bayes_s2r") / "examples" / "candidates.toml")


def test_import_with_candidates_refuses_a_mistyped_name_and_stores_nothing(runner, tmp_path):
    db = str(tmp_path / "l.sqlite")
    f = tmp_path / "typo.csv"
    f.write_text(TYPO_CSV)
    _ok(runner, "ledger", "init", db)
    result = runner.invoke(app, ["ledger", "import", db, str(f), "--candidates", EXAMPLE_CANDIDATES])
    assert result.exit_code == 2 and result.stdout == ""
    assert "typo.csv, row 3: paired_eval.candidate='dr_typo_friction': expected a candidate" in result.stderr
    with Ledger(db) as ledger:
        assert len(ledger) == 0
    f.write_text(TYPO_CSV.replace("dr_typo_friction", "dr_narrow"))
    assert "2 new" in _ok(runner, "ledger", "import", db, str(f), "--candidates", EXAMPLE_CANDIDATES)


def test_void_takes_a_record_back_and_show_marks_it(runner, tmp_path):
    db = str(tmp_path / "l.sqlite")
    f = tmp_path / "typo.csv"
    f.write_text(TYPO_CSV)
    _ok(runner, "ledger", "init", db)
    _ok(runner, "ledger", "import", db, str(f))
    out = " ".join(_ok(runner, "ledger", "void", db, "t1", "--why", "candidate name mistyped").split())
    assert "voided paired_eval t1" in out and "holds 1 records in use" in out
    for args in ([], ["--kind", "paired_eval"]):
        shown = " ".join(_ok(runner, "ledger", "show", db, *args).split())
        assert "1 records in use, 1 void" in shown
        assert "VOID: candidate name" in shown and "dr_typo_fric" in shown
    with Ledger(db) as ledger:
        assert [r.candidate for r in ledger.records()] == ["dr_wide"]
        assert ledger.get("t1").candidate == "dr_typo_friction"  # kept in the file
    for args, message in [
        (["t1", "--why", "again"], "id='t1': expected a record not already void"),
        (["nope", "--why", "x"], "id='nope': expected the id of a stored record"),
        (["t1", "--why", " "], "why=' ': expected a non-empty reason"),
    ]:
        result = runner.invoke(app, ["ledger", "void", db, *args])
        assert result.exit_code == 2 and result.stderr.startswith("error: ")
        assert message in result.stderr and result.stderr.count("\n") == 1
    assert runner.invoke(app, ["ledger", "void", db, "t1"]).exit_code == 2  # --why is required
    with Ledger(db) as ledger:
        assert ledger.voided()["t1"]["why"] == "candidate name mistyped"


def test_a_ledger_with_any_text_stays_showable_and_exportable(runner, tmp_path):
    db = str(tmp_path / "l.sqlite")
    bad = tmp_path / "surr.json"
    bad.write_text(json.dumps([{"kind": "execution_outcome", "candidate": "\ud800", "executions": 1, "unsafe": 0}]))
    _ok(runner, "ledger", "init", db)
    result = runner.invoke(app, ["ledger", "import", db, str(bad)])
    assert result.exit_code == 2 and "execution_outcome.candidate='\\ud800'" in result.stderr
    good = tmp_path / "astral.json"
    good.write_text(json.dumps([{"kind": "execution_outcome", "candidate": "π_😀", "executions": 1, "unsafe": 0}]))
    _ok(runner, "ledger", "import", db, str(good))
    assert "π_😀" in _ok(runner, "ledger", "show", db)
    for fmt in ("csv", "json"):
        _ok(runner, "ledger", "export", db, str(tmp_path / f"out.{fmt}"))
