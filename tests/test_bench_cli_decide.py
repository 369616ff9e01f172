"""The time-to-answer benchmark runs small and reports each case."""

import bench_cli_decide


def test_bench_cli_decide_runs_small():
    out = bench_cli_decide.main(["--repeats", "1", "--", "--method", "svi", "--cvu-samples", "16", "--no-record"])
    cases = {r["case"]: r for r in out["results"]}
    assert list(cases) == ["cold", "warm", "warm_refit"]
    assert [cases[k]["fit_reused"] for k in cases] == [[False], [True], [False]]
    assert all(r["median_s"] > 0 for r in out["results"])
    assert out["settings"]["same_decision_warm_as_cold"] is True
    # each case says the load it ran under; the import floor is reported beside the cases
    assert all(len(r["load_1min"]) == len(r["runs_cpu_s"]) == 1 for r in out["results"])
    assert len(out["settings"]["load_avg_before"]) == 3
    assert out["settings"]["import_floor"]["median_s"] > 0
