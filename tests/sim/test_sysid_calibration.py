"""Calibration of identification, a small version of benchmarks/bench_sysid.py: over
synthetic identifications with a known, randomly drawn truth (noisy sensors, latency 0 or 1),
the 90% intervals cover the truth about 90% of the time and are not absurdly wide; the plain
Laplace intervals are far too narrow on the same fits."""

import importlib.util
import json
from pathlib import Path

from scipy import stats as sps

REPS = 12


def _bench():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_sysid.py"
    spec = importlib.util.spec_from_file_location("bench_sysid", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_intervals_cover_the_truth_on_the_cart_pole(tmp_path, compiled):
    out = tmp_path / "sysid.json"
    # the standard horizon reuses the session's compiled rollouts for the data collection
    result = _bench().main(["--tasks", "inverted_pendulum", "--reps", str(REPS), "--out", str(out)])
    assert json.loads(out.read_text()) == result and result["benchmark"] == "sysid"
    (row,) = result["results"]
    assert row["reps"] == REPS and row["latency_hit_rate"] >= 0.9
    cover = row["coverage"]["jackknife"]
    hits = sum(round(c["coverage"] * REPS) for c in cover.values())
    # 3 × 12 intervals at a nominal 90%: below 27 hits has probability < 1% (binomial)
    assert sps.binom.cdf(hits, 3 * REPS, 0.9) > 0.01 and hits >= 27
    for name, c in cover.items():
        assert c["coverage"] >= 0.66, name
        assert c["median_rel_width"] < 0.8, name  # informative, not the prior's width
    laplace = sum(round(c["coverage"] * REPS) for c in row["coverage"]["laplace"].values())
    assert laplace < hits
