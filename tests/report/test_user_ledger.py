"""The report on a team's own ledger (trials imported, then `bayes-s2r decide`), and the
details that must read right on any ledger: verdict, title, captions, costs, overwriting."""

from __future__ import annotations

import importlib.resources
import re

import pytest
from typer.testing import CliRunner

import bayes_s2r.cli_decide  # noqa: F401  (registers decide and report)
from bayes_s2r.campaign.config import CampaignConfig
from bayes_s2r.cli import app
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import DeploymentEval, RealizedCost
from bayes_s2r.report import data as rd
from bayes_s2r.report import evidence_tables as et
from bayes_s2r.report.html import FIGURE_FILES, make_report

EXAMPLES = importlib.resources.files("bayes_s2r") / "examples"


@pytest.fixture(scope="module")
def user_report(tmp_path_factory):
    """A ledger of imported trials plus one clean deployment evaluation, one `decide`, one `report`."""
    folder = tmp_path_factory.mktemp("user")
    ledger = folder / "evidence.sqlite"
    with Ledger(ledger) as led:
        led.import_csv(str(EXAMPLES / "ledger.csv"))
        led.add(DeploymentEval("pi1", 60, 45, 0, round=1))  # 0/60 unsafe: UCB 0.0487 < 0.05
    runner = CliRunner()
    result = runner.invoke(app, ["decide", "--ledger", str(ledger), "--candidates", str(EXAMPLES / "candidates.toml"),
                                 "--method", "svi", "--cvu-samples", "64"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["report", "--ledger", str(ledger), "--out", str(folder / "report")])
    assert result.exit_code == 0, result.output
    return ledger, folder / "report", (folder / "report" / "index.html").read_text()


def test_decisions_recorded_by_decide_fill_the_page(user_report):
    _, _, page = user_report
    assert "No decisions" not in page and "Round 2: run " in page
    drawn = set(re.findall(r'<img src="([^"]+)"', page))
    assert {"posterior.png", "decomposition.png", "stability.png", "budget.png", "sensitivity.png",
            "risk.png"} <= drawn
    # the one empty panel says which records would fill it
    empty = [f for f in FIGURE_FILES if f not in drawn]
    assert page.count("no data: needs ") == len(empty)
    assert "Sim-to-real decisions: evidence.sqlite" in page and "world (unnamed card)" not in page


def test_deployment_check_uses_the_default_level_and_says_so(user_report):
    _, _, page = user_report
    assert "Not deployable" not in page
    assert re.search(r'class="card pass".*?Deployable', page, flags=re.DOTALL)
    assert "α_deploy 0.05 (the library default: the ledger records none)" in page
    import dataclasses

    default = next(f.default for f in dataclasses.fields(CampaignConfig) if f.name == "alpha_deploy")
    assert et.ALPHA_DEPLOY_DEFAULT == default


def test_the_candidate_table_uses_the_shared_columns(user_report):
    _, _, page = user_report
    table = page.split('<table class="cands">')[1].split("</table>")[0]
    heads = re.findall(r"<th>([^<]*)</th>", table.split("</thead>")[0])
    assert heads == ["candidate", "role", "μ_ΔJ", "C_λ", "U0", "CVU", "Q", "p_best", "not feasible"]
    assert "U0 = μ_ΔJ − C_λ" in page


def test_report_refuses_to_overwrite_another_ledgers_report(user_report, tmp_path):
    ledger, out, _ = user_report
    other = tmp_path / "other.sqlite"
    with Ledger(other) as led:
        led.import_csv(str(EXAMPLES / "ledger.csv"))
    before = (out / "index.html").read_text()
    result = CliRunner().invoke(app, ["report", "--ledger", str(other), "--out", str(out)])
    assert result.exit_code == 2 and "--force overwrites it" in result.stderr
    assert (out / "index.html").read_text() == before
    again = CliRunner().invoke(app, ["report", "--ledger", str(ledger), "--out", str(out)])
    assert again.exit_code == 0, again.output  # its own report is rewritten freely
    forced = CliRunner().invoke(app, ["report", "--ledger", str(other), "--out", str(out), "--force"])
    assert forced.exit_code == 0 and str(other.resolve()) in (out / "index.html").read_text()


def test_a_testbed_world_card_names_the_report():
    meta = {"campaign.world": {"card": "real_latency", "eval_episodes": 24}}
    assert rd.normalize_meta(meta)["campaign"]["world"] == "real_latency"


def test_no_caption_describes_a_panel_that_is_not_drawn(campaign, tmp_path):
    records, meta = campaign
    with_pairs = make_report(records, tmp_path / "a", meta=meta, posterior="summary").read_text()
    assert "pair synergy" in with_pairs
    single = [r for r in records if getattr(r, "pair_direction", None) is None]
    without = make_report(single, tmp_path / "b", meta=meta, posterior="summary").read_text()
    assert "sensitivity.png" in without and "pair synergy" not in without


def test_realized_costs_print_with_units(campaign, tmp_path):
    records, meta = campaign
    records = [r for r in records if not (isinstance(r, RealizedCost) and r.round == 1)]
    records.append(RealizedCost("dr_wide", round=1, real=0.746667, compute=0.00426667, eng=2.0))
    page = make_report(records, tmp_path / "r", meta=meta, posterior="summary").read_text()
    assert "real 0.747 robot-h, compute 0.00427 compute-h, eng 2 eng-h" in page
    assert "0.746667" not in page
