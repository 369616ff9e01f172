"""Smoke run of benchmarks/bench_locomotion.py with tiny arguments (no timing assertions)."""

import bench_locomotion


def test_bench_locomotion_runs_small():
    out = bench_locomotion.main(["--task", "ant", "--batches", "4", "--steps", "5", "--repeats", "1",
                                 "--native-threads", "1"])
    mjx, native = out["rows"]
    assert (mjx["row"], native["row"]) == ("mjx_dr", "native")
    assert mjx["env_steps_per_s"] > 0 and native["env_steps_per_s"] > 0
    assert mjx["ratio_to_native"] == mjx["env_steps_per_s"] / native["env_steps_per_s"]
    assert mjx["n_frames"] == native["n_frames"] == 5
