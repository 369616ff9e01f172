"""benchmarks/bench_regime.py: a tiny end-to-end run, and the table's arithmetic on known rows."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))  # the benchmarks import their `common` module
    try:
        spec = importlib.util.spec_from_file_location("bench_regime", BENCH / "bench_regime.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCH))


def _row(world, nominal, si, dr, oracle, best="si"):
    arms = {}
    for name, J in (("nominal", nominal), ("si", si), ("dr_wide", dr), ("oracle", oracle)):
        gap = oracle - nominal
        arms[name] = {"J": J, "score": J, "real_episodes": 6 if name == "si" else 0,
                      "gap_closed": (J - nominal) / gap}
    return {"world": world, "arms": arms,
            "decision": {"best": best, "stop_reason": None, "shakedown": {"si": [1, 66], "ft_real": [60, 60]}}}


def test_summary_shares_and_verdict(bench):
    rows = [_row(0, 0.0, 0.9, 0.2, 1.0), _row(1, 0.1, 0.8, 0.1, 0.9), _row(2, 0.0, 1.0, 0.3, 1.0, best="dr_wide")]
    s = bench.summarize(rows)
    # pooled share: (mean J_si - mean J_nom) / (mean J_oracle - mean J_nom) = (0.9 - 1/30) / (29/30 - 1/30)
    assert s["arms"]["si"]["gap_closed_pooled"] == pytest.approx((0.9 - 1 / 30) / (29 / 30 - 1 / 30), abs=1e-4)
    assert s["arms"]["oracle"]["gap_closed_pooled"] == 1.0 and s["arms"]["nominal"]["gap_closed_pooled"] == 0.0
    assert s["arms"]["dr_wide"]["gap_closed_by_world"] == [0.2, 0.0, 0.3]
    assert s["arms"]["si"]["real_episodes_per_world"] == 6
    assert s["si_minus_dr_wide"]["mean"] == pytest.approx(0.7, abs=1e-4) and s["si_minus_dr_wide"]["ci95"][0] > 0
    assert s["choices"] == {"si": 2, "dr_wide": 1} and s["si_chosen_share"] == pytest.approx(0.6667, abs=1e-4)
    assert s["regime_reproduced"] is True
    # the choices' worth on the truth: si, si, dr_wide -> 0.9, 0.8, 0.3 against the better arm 0.9, 0.8, 1.0
    assert s["chosen_J_mean"] == pytest.approx(2.0 / 3, abs=1e-4)
    assert s["best_of_si_dr_J_mean"] == pytest.approx(2.7 / 3, abs=1e-4)
    assert s["si_protocol_unsafe"] == [3, 198]
    # DR as good as SI: not the regime
    flat = [_row(i, 0.0, 0.9, 0.9 - 0.01 * i, 1.0) for i in range(3)]
    assert bench.summarize(flat)["regime_reproduced"] is False


def test_tiny_run_records_arms_gap_and_decision(bench, tmp_path):
    out = tmp_path / "regime.json"
    result = bench.main(["--worlds", "1", "--si-episodes", "2", "--si-iterations", "1", "--si-latencies", "1",
                         "--train-iterations", "1", "--dr-iterations", "1", "--dr-episodes", "2",
                         "--eval-episodes", "8", "--pilot-episodes", "8", "--shakedown", "8",
                         "--svi-steps", "200", "--cvu-samples", "16", "--out", str(out)])
    assert json.loads(out.read_text()) == result
    assert result["benchmark"] == "regime" and result["command"].startswith("python benchmarks/bench_regime.py")
    assert {"cores", "backend", "versions"} <= set(result["machine"]) and result["wall_s"] > 0
    (row,) = result["results"]
    lo, hi = result["settings"]["mass"]
    assert lo <= row["truth"]["mass_scale"] <= hi
    assert set(row["arms"]) == {"nominal", "si", "dr_wide", "oracle"}
    for arm in row["arms"].values():
        assert 0.0 <= arm["J"] <= 1.0 and arm["J_ci95"][0] <= arm["J"] <= arm["J_ci95"][1]
    assert row["arms"]["si"]["real_episodes"] == 2 and row["arms"]["dr_wide"]["real_episodes"] == 0
    gap = row["arms"]["oracle"]["J"] - row["arms"]["nominal"]["J"]
    assert row["gap"] == pytest.approx(gap, abs=1e-4)
    if gap >= 0.05:
        assert row["arms"]["si"]["gap_closed"] == pytest.approx((row["arms"]["si"]["J"] - row["arms"]["nominal"]["J"])
                                                                / gap, abs=1e-3)
    else:
        assert row["arms"]["si"]["gap_closed"] is None
    d = row["decision"]
    assert set(d["table"]) == {"si", "dr_wide", "ft_real"}
    assert d["best"] in {"si", "dr_wide", "ft_real", None} and (d["best"] is None) == (d["stop_reason"] is not None)
    # 10 safe executions cannot bound SI's unsafe rate below 5%: the gate closes it
    assert d["shakedown"]["si"] == [row["arms"]["si"]["collection_unsafe"], 10]
    assert d["table"]["si"]["ucb_exec"] > 0.05 and not d["table"]["si"]["feasible"]
    assert "unsafe" in d["table"]["si"]["excluded_reason"]
    assert d["table"]["dr_wide"]["ucb_exec"] is None or d["table"]["dr_wide"]["ucb_exec"] == 0
    assert result["summary"]["choices"] and "si_chosen_share" in result["summary"]
