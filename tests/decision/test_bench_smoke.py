"""The benchmark script runs with tiny settings and prints the agreed JSON shape."""

import json


def test_bench_decide_smoke(bench_module, tmp_path):
    out = tmp_path / "bench.json"
    res = bench_module.main(["--candidates", "4", "--draws", "300", "--outcomes", "24", "--reps", "1",
                             "--out", str(out)])
    data = json.loads(out.read_text())
    assert data == json.loads(json.dumps(res))
    assert data["benchmark"] == "decide" and {"cores", "backend", "versions"} <= set(data["machine"])
    main = data["results"][0]
    for key in ("cvu_s", "compile_s", "floor_matmul_s", "reference_s", "decide_warm_s", "temp_bytes"):
        assert main[key] > 0, key
    assert main["max_abs_diff_vs_reference"] < 1e-4
    assert [r["case"] for r in data["results"]] == ["main", "scaling", "two_step"]
    two = data["results"][-1]
    assert two["decide_warm_s"] > 0 and two["one_step_warm_s"] > 0 and two["inner_samples"] == 4
