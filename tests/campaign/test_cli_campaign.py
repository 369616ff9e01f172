"""`bayes-s2r demo`, `resume` and `decide` as a user runs them.

The demo runs once per module, in a real subprocess (`--quick`); the other commands run in
process through Typer's runner, on its ledger or on the example ledger shipped in the package.
"""

from __future__ import annotations

import importlib.resources
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import bayes_s2r.cli_campaign
import bayes_s2r.cli_decide  # noqa: F401  (registers the commands on the app)
from bayes_s2r.belief import check_gain_prior as bs_check_gain_prior
from bayes_s2r.belief import fit_gain_prior as bs_fit_gain_prior
from bayes_s2r.belief.team_prior import DEFAULT_FIX_PROBS, DEFAULT_SKEWS
from bayes_s2r.cli import app
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import PairedEval

EXAMPLES = importlib.resources.files("bayes_s2r") / "examples"
EXAMPLE_CSV = str(EXAMPLES / "ledger.csv")
EXAMPLE_TOML = str(EXAMPLES / "candidates.toml")


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("bayes-s2r")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from bayes_s2r.cli import main; main()"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    started = time.perf_counter()
    proc = subprocess.run([*_cli(), "demo", "--quick", "--out", str(out)], check=False,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, proc.stdout, time.perf_counter() - started


def test_demo_writes_ledger_and_report(demo):
    out, _, _ = demo
    ledger = out / "ledger.sqlite"
    assert ledger.is_file()
    page = (out / "index.html").read_text()
    figures = re.findall(r'src="([^"]+\.png)"', page)
    assert figures
    for name in figures:
        data = (out / name).read_bytes()
        assert data.startswith(b"\x89PNG"), name
    with Ledger(ledger, create=False) as led:
        assert led.get_meta("campaign.status") == "stopped"
        assert led.get_meta("deployment")["policy"]
        assert led.counts().get("paired_eval", 0) >= 1


def test_demo_prints_one_summary_per_decision(demo):
    out, stdout, _ = demo
    with Ledger(out / "ledger.sqlite", create=False) as led:
        decisions = led.records("decision")
    assert decisions
    for rec in decisions:
        if rec.table:  # a stop at the round limit has no table to show
            what = f"chose {rec.chosen}" if rec.chosen else f"stop ({rec.stop_reason})"
            assert re.search(rf"round {rec.round}: {re.escape(what)}", stdout), stdout
    for column in ("E[ΔJ·P(adopt|ΔJ)]", "C_λ", "U0", "CVU", "Q", "p_best"):  # the campaign's utility is adopt
        assert column in stdout
    assert "stopped (" in stdout and "deployable" in stdout
    assert "report:" in stdout and str(out / "index.html") in stdout.replace("\n", "")
    assert "Traceback" not in stdout


def _copy_demo(out: Path, to: Path, *, report: bool) -> Path:
    for path in out.iterdir():
        if path.name == "ledger.sqlite" or (report and path.suffix in (".html", ".png")):
            shutil.copy(path, to / path.name)
    return to / "ledger.sqlite"


def test_the_shakedown_is_committed_before_the_first_round(demo):
    out, _, _ = demo
    with Ledger(out / "ledger.sqlite", create=False) as led:
        mark = led.get_meta("campaign.shakedown")
        records = led.records()
        assert led.get_meta("campaign.report") is not None
    assert mark and [r.id for r in records[:len(mark["records"])]] == mark["records"]
    assert {r.KIND for r in records[:len(mark["records"])]} == {"execution_outcome"}


def test_resume_on_a_finished_campaign_says_so(demo, tmp_path):
    out, _, _ = demo
    ledger = _copy_demo(out, tmp_path, report=True)
    before = (ledger.stat().st_size, ledger.stat().st_mtime_ns, (tmp_path / "index.html").stat().st_mtime_ns)
    result = CliRunner().invoke(app, ["resume", "--ledger", str(ledger)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "has already finished" in text and "nothing to resume" in text
    assert "deployable" in text and str(tmp_path / "index.html") in result.stdout.replace("\n", "")
    assert "bayes-s2r report" not in text  # it would draw the posterior from another source
    after = (ledger.stat().st_size, ledger.stat().st_mtime_ns, (tmp_path / "index.html").stat().st_mtime_ns)
    assert after == before


@pytest.mark.parametrize("missing", ["index.html", "posterior.png", "everything"])
def test_resume_writes_a_missing_or_partial_report_as_the_demo_did(demo, tmp_path, missing):
    out, _, _ = demo
    ledger = _copy_demo(out, tmp_path, report=missing != "everything")
    if missing != "everything":
        (tmp_path / missing).unlink()
    result = CliRunner().invoke(app, ["resume", "--ledger", str(ledger)])
    assert result.exit_code == 0, result.output
    assert "writing it again" in " ".join(result.stdout.split())

    def page(folder: Path) -> str:
        text = (folder / "index.html").read_text()
        return text.replace(str((folder / "ledger.sqlite").resolve()), "LEDGER")

    assert page(tmp_path) == page(out)  # same posterior source, same figures
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(p.name for p in out.glob("*.png"))


def test_resume_names_a_missing_testbed_setting(tmp_path):
    from bayes_s2r.campaign.state import init_campaign
    from bayes_s2r.campaign.testbed import testbed_candidates
    from bayes_s2r.cli_campaign import demo_config

    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as led:
        world = {"card": "real_latency", "train_iterations": 8, "sweep_episodes": 16}  # no eval_episodes
        init_campaign(led, testbed_candidates(24), demo_config("quick", 0),
                      policy="pi0", world=world)
    result = CliRunner().invoke(app, ["resume", "--ledger", str(path)])
    assert result.exit_code == 2, result.output
    assert "campaign.world.eval_episodes=None: expected a whole number >= 1" in result.stderr
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def example_ledger(tmp_path_factory):
    path = tmp_path_factory.mktemp("example") / "example.sqlite"
    for args in (["ledger", "init", str(path)], ["ledger", "import", str(path), EXAMPLE_CSV]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
    return path


def test_decide_json_on_the_example_ledger(example_ledger):
    result = CliRunner().invoke(app, [
        "decide", "--ledger", str(example_ledger), "--candidates", EXAMPLE_TOML, "--method", "svi",
        "--cvu-samples", "64", "--json"])  # the look-ahead size of the other commands here: compiled once
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    rows = {r["name"]: r for r in out["table"]}
    assert out["best"] in rows and rows[out["best"]]["feasible"] is True
    assert out["stop_reason"] is None
    assert sum(out["p_best"].values()) == pytest.approx(1.0)
    assert out["flip_probability"] == pytest.approx(1.0 - out["p_best"][out["best"]])
    assert {"mu_dJ", "C_lambda", "U0", "CVU", "Q", "feasible"} <= set(rows[out["best"]])
    assert {r["resource"] for r in out["weight_robustness"]} == {"real", "compute", "eng"}


def test_decide_with_the_adopt_utility(example_ledger):
    result = CliRunner().invoke(app, [
        "decide", "--ledger", str(example_ledger), "--candidates", EXAMPLE_TOML, "--method", "svi",
        "--cvu-samples", "64", "--utility", "adopt", "--json"])
    assert result.exit_code == 0, result.output
    rows = [r for r in json.loads(result.stdout)["table"] if r["role"] == "adaptation"]
    # E[ΔJ·P(adopt | ΔJ)] is below what an evaluation that revealed the sign would keep,
    # E[max(ΔJ, 0)] (pointwise θ·P(adopt | θ) ≤ max(θ, 0)); its Gaussian form bounds it
    # up to how far the draws are from Gaussian
    from bayes_s2r.decision.utility import positive_part
    assert all(r["gain"] <= positive_part(r["mu_dJ"], r["sd_dJ"]) + 0.01 for r in rows)
    assert any(abs(r["gain"] - r["mu_dJ"]) > 1e-4 for r in rows)  # not the plain mean
    assert all(r["U0"] == pytest.approx(r["gain"] - r["C_lambda"]) for r in rows)


def test_decide_table_with_budget_and_weights(example_ledger):
    result = CliRunner().invoke(app, [
        "decide", "--ledger", str(example_ledger), "--candidates", EXAMPLE_TOML, "--method", "svi",
        "--cvu-samples", "64", "--budget", "real=0,compute=100,eng=40",
        "--weights", "real=0.02,compute=0.001,eng=0.004"])
    assert result.exit_code == 0, result.output
    assert "chose " in result.stdout and "not feasible: " in result.stdout
    # no robot-hours left: everything that spends them is out
    (line,) = [ln for ln in result.stdout.splitlines() if ln.strip().startswith("not feasible: ft_real:")]
    assert "unaffordable" in line


def test_prior_from_past_ledgers_then_fit_with_it(example_ledger, tmp_path, monkeypatch):
    past = []
    for i, (treated, control) in enumerate([(48, 0), (0, 0), (1, 47), (47, 2)]):
        path = tmp_path / f"past{i}.sqlite"
        with Ledger(path) as ledger:
            ledger.add_many([PairedEval("fix", treated, 48, control, 48), PairedEval("other", 2, 48, 1, 48)])
        past.append(str(path))
    out = tmp_path / "prior.json"
    result = CliRunner().invoke(app, ["prior", *past, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["effects"] == 8 and printed["prior"] == json.loads(out.read_text())
    # the one-fix structure is searched by default (q = 0 among its probabilities: no structure)
    records = [Ledger(p, create=False).records() for p in past]
    expected = bs_fit_gain_prior(records, fix_probs=DEFAULT_FIX_PROBS).prior
    for field in ("candidate_scale", "candidate_df", "fix_prob", "fix_loc", "fix_scale"):
        assert printed["prior"][field] == getattr(expected, field), field
    plain = CliRunner().invoke(app, ["prior", *past, "--no-one-fix", "--json"])
    assert plain.exit_code == 0, plain.output
    assert json.loads(plain.stdout)["prior"]["fix_prob"] == bs_fit_gain_prior(records).prior.fix_prob == 0.0
    text = CliRunner().invoke(app, ["prior", *past])
    assert text.exit_code == 0 and "team gain prior from 8 past effects" in text.stdout
    # the chosen prior is checked against the same campaigns, as check_gain_prior does
    assert printed["check"] == bs_check_gain_prior(records, expected).to_dict()
    assert "prior predictive check on 8 past effects" in text.stdout
    skewed = CliRunner().invoke(app, ["prior", *past, "--skew", "--json"])
    assert skewed.exit_code == 0, skewed.output
    with_skew = bs_fit_gain_prior(records, candidate_skews=DEFAULT_SKEWS, fix_probs=DEFAULT_FIX_PROBS).prior
    assert json.loads(skewed.stdout)["prior"]["candidate_skew"] == with_skew.candidate_skew
    assert "candidate_skew" in printed["prior"] and printed["prior"]["candidate_skew"] == 0.0
    # the file reaches the fit
    import bayes_s2r.belief

    seen = []
    real_fit = bayes_s2r.belief.fit_gains
    monkeypatch.setattr(bayes_s2r.belief, "fit_gains", lambda *a, **k: seen.append(k.get("prior")) or real_fit(*a, **k))
    result = CliRunner().invoke(app, ["fit", "--ledger", str(example_ledger), "--candidates", EXAMPLE_TOML,
                                      "--method", "svi", "--prior", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert seen == [expected]


def test_prior_with_each_methods_mean_from_the_candidates_file(tmp_path):
    rng = np.random.default_rng(0)
    past = []
    for i in range(10):  # "fix" (fine-tuning) usually gains a lot, "other" (DR) little
        path = tmp_path / f"past{i}.sqlite"
        with Ledger(path) as ledger:
            ledger.add_many([PairedEval("fix", int(rng.binomial(48, 0.8)), 48, 14, 48),
                             PairedEval("other", int(rng.binomial(48, 0.3)), 48, 14, 48)])
        past.append(str(path))
    toml = tmp_path / "candidates.toml"
    toml.write_text('[[candidate]]\nname = "fix"\nrole = "adaptation"\nlens = "optimization"\nmethod = "FT"\n'
                    '[[candidate]]\nname = "other"\nrole = "adaptation"\nlens = "data"\nmethod = "DR"\n')
    out = tmp_path / "prior.json"
    result = CliRunner().invoke(app, ["prior", *past, "--method-means", "--own-means", "--candidates", str(toml),
                                      "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    locs = dict(json.loads(result.stdout)["prior"]["method_locs"])
    assert locs["FT"] > locs["DR"] + 1.0
    # the file written reaches the fit as the same prior
    from bayes_s2r.cli_decide import _read_prior

    assert dict(_read_prior(out).method_locs) == locs
    missing = CliRunner().invoke(app, ["prior", *past, "--method-means"])
    assert missing.exit_code != 0 and "--candidates" in missing.output
    # --one-mean keeps one mean for all
    one = CliRunner().invoke(app, ["prior", *past, "--one-mean", "--candidates", str(toml), "--json"])
    assert one.exit_code == 0 and json.loads(one.stdout)["prior"]["method_locs"] == []
    # too few past effects of each method: the text says one mean was kept
    few = CliRunner().invoke(app, ["prior", *past[:4], "--own-means", "--candidates", str(toml)])
    assert few.exit_code == 0 and "no method had 10 past effects" in few.output, few.output
    # shrunk toward a common mean fitted with them: the methods stay apart, DR (few effects far
    # from the common mean) nearer to it than on its own
    shrunk = CliRunner().invoke(app, ["prior", *past, "--shrink", "--no-hierarchy", "--candidates", str(toml),
                                      "--json"])
    assert shrunk.exit_code == 0, shrunk.output
    printed = json.loads(shrunk.stdout)
    means, common = dict(printed["prior"]["method_locs"]), printed["prior"]["gain_loc"]
    assert printed["method_spread"] > 0 and means["FT"] > means["DR"] + 1.0
    assert abs(means["DR"] - common) < abs(locs["DR"] - common)
    # by default once the methods are known, shrunk and the upper levels sized with the candidate level,
    # in the library's proportions
    from bayes_s2r.models.gains import GainPrior

    default = CliRunner().invoke(app, ["prior", *past, "--candidates", str(toml), "--json"])
    assert default.exit_code == 0, default.output
    library, sized = GainPrior(), json.loads(default.stdout)["prior"]
    k = sized["gain_scale"] / library.gain_scale
    assert k != pytest.approx(1.0)
    assert (sized["method_scale"], sized["group_scale"]) == pytest.approx((k * library.method_scale,
                                                                          k * library.group_scale))
    assert abs(dict(sized["method_locs"])["DR"] - sized["gain_loc"]) < abs(locs["DR"] - sized["gain_loc"])
    # --own-means --no-hierarchy keeps each method's own mean and the library's upper levels
    own = CliRunner().invoke(app, ["prior", *past, "--own-means", "--no-hierarchy", "--candidates", str(toml),
                                   "--json"])
    assert own.exit_code == 0 and dict(json.loads(own.stdout)["prior"]["method_locs"]) == locs
    assert json.loads(own.stdout)["prior"]["gain_scale"] == library.gain_scale
    for args in (["--shrink"], ["--shrink", "--one-mean", "--candidates", str(toml)]):
        refused = CliRunner().invoke(app, ["prior", *past, *args])
        assert refused.exit_code != 0 and "--shrink" in refused.output
    # the shared levels sized by the evidence: the multiplier chosen, and the levels scaled by it
    shared = CliRunner().invoke(app, ["prior", *past, "--shared", "--candidates", str(toml), "--json"])
    assert shared.exit_code == 0, shared.output
    printed = json.loads(shared.stdout)
    k = printed["shared_scale"]
    from bayes_s2r import GainPrior

    assert printed["prior"]["gain_scale"] == pytest.approx(GainPrior().gain_scale * k)
    # where the past campaigns started (their control arms at J 14/48), for a campaign not yet measured
    started = CliRunner().invoke(app, ["prior", *past, "--baseline", "--candidates", str(toml), "--json"])
    assert started.exit_code == 0, started.output
    prior = json.loads(started.stdout)["prior"]
    assert prior["baseline_loc"] == pytest.approx(np.log(14 / 34), abs=0.1) and prior["baseline_scale"] == 0.25


def test_prior_with_one_fix_per_campaign(tmp_path):
    """Past campaigns of five candidates where one (a different one each time) took J from 0.2 to
    0.9: --one-fix finds the structure, its prior file reaches the fit, and its predictive
    covers the past arms."""
    rng = np.random.default_rng(1)
    past = []
    for i in range(12):
        path = tmp_path / f"past{i}.sqlite"
        fix = rng.integers(5)
        with Ledger(path) as ledger:
            ledger.add_many([PairedEval(f"c{j}", int(rng.binomial(48, 0.9 if j == fix else 0.22)), 48,
                                        int(rng.binomial(48, 0.2)), 48) for j in range(5)])
        past.append(str(path))
    out = tmp_path / "prior.json"
    result = CliRunner().invoke(app, ["prior", *past, "--one-fix", "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert 0.1 <= printed["prior"]["fix_prob"] < 0.2 and printed["prior"]["fix_loc"] >= 2.0
    assert printed["check"]["coverage"] >= 0.8
    from bayes_s2r.cli_decide import _read_prior

    assert _read_prior(out).fix_prob == printed["prior"]["fix_prob"]
    text = CliRunner().invoke(app, ["prior", *past, "--one-fix"])
    assert text.exit_code == 0 and "one fix with probability" in text.output
    refused = CliRunner().invoke(app, ["prior", *past, "--one-fix", "--shared"])
    assert refused.exit_code != 0 and "--one-fix" in refused.output and "--shared" in refused.output
    # searched by default, and left out by --shared alone, which sizes the shared levels instead
    default = CliRunner().invoke(app, ["prior", *past, "--json"])
    assert default.exit_code == 0 and json.loads(default.stdout)["prior"] == printed["prior"]
    shared = CliRunner().invoke(app, ["prior", *past, "--shared", "--json"])
    assert shared.exit_code == 0 and json.loads(shared.stdout)["prior"]["fix_prob"] == 0.0


@pytest.mark.parametrize("args, message", [
    (["prior", "{tmp}/missing.sqlite"], "PAST='{tmp}/missing.sqlite': expected an existing ledger file"),
    (["prior", "{empty}"], "histories='no PairedEval records'"),
    (["fit", "--ledger", "{one}", "--candidates", EXAMPLE_TOML, "--prior", "{tmp}/none.json"], "--prior="),
    (["fit", "--ledger", "{one}", "--candidates", EXAMPLE_TOML, "--prior", "{badfield}"],
     "--prior {badfield}: prior.scale=2: expected a field among"),
    (["decide", "--ledger", "{one}", "--candidates", EXAMPLE_TOML, "--prior", "{badvalue}"],
     "--prior {badvalue}: prior.candidate_scale=-1: expected a finite number >= 0"),
    (["decide", "--ledger", "{tmp}/missing.sqlite", "--candidates", EXAMPLE_TOML],
     "expected an existing ledger file"),
    (["decide", "--ledger", "{empty}", "--candidates", EXAMPLE_TOML],
     "--ledger='{empty}': expected a ledger holding evidence (this one is empty)"),
    (["decide", "--ledger", "{empty}", "--candidates", EXAMPLE_TOML, "--budget", "real=ten"],
     "--budget.real='ten': expected a number"),
    (["decide", "--ledger", "{empty}", "--candidates", EXAMPLE_TOML, "--budget", "real=1,gpu=2"],
     "--budget='gpu=2': expected key=value with a key among"),
    (["decide", "--ledger", "{empty}", "--candidates", EXAMPLE_TOML, "--budget", "real=-1"],
     "--budget.real='-1': expected a finite number >= 0"),
    (["decide", "--ledger", "{empty}", "--candidates", EXAMPLE_TOML, "--weights", "eng"],
     "--weights='eng': expected key=value"),
    (["decide", "--ledger", "{empty}", "--candidates", "{tmp}/none.toml"], "none.toml"),
    (["fit", "--ledger", "{empty}", "--candidates", EXAMPLE_TOML], "this one is empty"),
    (["fit", "--ledger", "{one}", "--candidates", EXAMPLE_TOML, "--method", "mcmc"],
     "--method='mcmc': expected nuts or svi"),
    (["decide", "--ledger", "{one}", "--candidates", EXAMPLE_TOML, "--method", "hmc"],
     "--method='hmc': expected nuts or svi"),
    (["decide", "--ledger", "{one}", "--candidates", EXAMPLE_TOML, "--utility", "max"],
     "--utility='max': expected mean or lcb or cvar or adopt"),
    (["resume", "--ledger", "{tmp}/missing.sqlite"], "--ledger="),
    (["resume", "--ledger", "{empty}"], "a ledger holding a campaign"),
    (["demo", "--world", "mars", "--out", "{tmp}/demo"], "--world='mars': expected a real-world card"),
    (["demo", "--out", "{empty}"], "--out="),
])
def test_input_errors_exit_2_naming_the_field(tmp_path, args, message):
    empty, one = tmp_path / "empty.sqlite", tmp_path / "one.sqlite"
    Ledger(empty).close()
    with Ledger(one) as ledger:
        ledger.add(PairedEval("dr_narrow", 30, 50, 25, 50))
    (tmp_path / "badfield.json").write_text('{"scale": 2}')
    (tmp_path / "badvalue.json").write_text('{"candidate_scale": -1}')
    subs = {"tmp": str(tmp_path), "empty": str(empty), "one": str(one),
            "badfield": str(tmp_path / "badfield.json"), "badvalue": str(tmp_path / "badvalue.json")}
    result = CliRunner().invoke(app, [a.format(**subs) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert message.format(**subs) in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""
    assert not (tmp_path / "missing.sqlite").exists() and not (tmp_path / "demo").exists()
    with Ledger(empty) as ledger:
        assert len(ledger) == 0 and ledger.get_meta("campaign.config") is None
    with Ledger(one) as ledger:
        assert len(ledger) == 1 and ledger.get_meta("campaign.config") is None
