"""Smoke run of benchmarks/bench_scaling.py with tiny settings (one and two host devices).

The two device counts run at once (`--jobs 2`): XLA compiles on one thread, so this halves
the wall time on two cores; the timings of such a run mean nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_scaling_smoke(tmp_path):
    out = tmp_path / "scaling.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_scaling.py"), "--devices", "2", "--envs", "6",
           "--horizon", "5", "--repeats", "1", "--draws", "64", "--candidates", "3", "--outcomes", "8",
           "--gpu", "off", "--timeout", "600", "--jobs", "2", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout)
    assert printed == json.loads(out.read_text())
    assert printed["benchmark"] == "scaling"
    assert {"cores", "backend", "versions"} <= set(printed["machine"])
    assert printed["settings"]["devices"] == [1, 2] and printed["notes"]
    rows = printed["results"]
    assert [(r["backend"], r["devices"]) for r in rows] == [("cpu", 1), ("cpu", 2)], rows
    for r in rows:
        assert "error" not in r, r
        assert r["steps_per_s"] > 0 and r["lookahead_s"] > 0
        assert r["rollout_max_abs_diff"] == 0.0  # same key, same episodes on two devices
        assert r["lookahead_max_abs_diff"] < 1e-4
        assert r["max_abs_diff_vs_single"] == max(r["rollout_max_abs_diff"], r["lookahead_max_abs_diff"])
    assert rows[1]["lookahead_devices"] == 2
