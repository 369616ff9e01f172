"""Smoke run of benchmarks/bench_rollouts.py with tiny arguments (no timing assertions)."""

import importlib.util
import json
from pathlib import Path


def test_bench_rollouts_smoke(tmp_path, compiled, world):
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_rollouts.py"
    spec = importlib.util.spec_from_file_location("bench_rollouts", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "r.json"
    # the standard horizon and chunk reuse the session's compiled rollout
    result = bench.main(["--envs", "8", "--steps", str(world.protocol.horizon), "--chunk", "256",
                         "--repeats", "1", "--mujoco-envs", "2", "--out", str(out)])
    assert json.loads(out.read_text()) == result
    assert result["benchmark"] == "rollouts"
    assert {"cores", "backend", "versions"} <= set(result["machine"])
    assert {"jax", "brax", "mujoco"} <= set(result["machine"]["versions"])
    (row,) = result["results"]
    assert row["envs"] == 8
    assert row["steps_per_s"] > 0 and row["mujoco_loop_steps_per_s"] > 0 and row["ratio"] > 0
    assert 0.0 <= row["success_rate"] <= 1.0


def test_importing_the_testbed_and_brax_prints_nothing_on_stdout():
    # mujoco.mjx announces its missing optional GPU backend on stdout; a benchmark's stdout
    # must stay one JSON object
    import subprocess
    import sys

    code = "import bayes_s2r.sim\nfrom brax.io import mjcf\nfrom brax.generalized import pipeline"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert proc.stdout == ""
