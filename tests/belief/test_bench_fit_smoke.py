"""bench_fit runs end to end with tiny arguments and prints the benchmark schema."""

import json

import bench_fit


def test_bench_fit_smoke(tmp_path, capsys):
    out = tmp_path / "fit.json"
    result = bench_fit.main(["--candidates", "8", "--rows", "200", "--big-rows", "2000",
                             "--warmup", "50", "--samples", "50", "--svi-steps", "100", "--repeats", "1",
                             "--out", str(out)])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert set(result) == {"benchmark", "machine", "settings", "results"}
    assert result["benchmark"] == "fit"
    assert {"cores", "load_avg", "versions"} <= set(result["machine"])
    names = [r["name"] for r in result["results"]]
    assert names == ["nuts_first", "nuts_warm", "svi_first", "svi_warm", "nuts_warm_big"]
    by = {r["name"]: r for r in result["results"]}
    for r in result["results"]:
        assert r["wall_s"] > 0 and r["candidates"] == 8
    for k in ("ess_bulk_min", "ess_per_s", "rhat_max", "divergences", "ok"):
        assert k in by["nuts_first"] and k in by["nuts_warm"]
    assert by["svi_warm"]["max_abs_mean_diff_vs_nuts"] >= 0
    assert by["nuts_warm_big"]["rows"] == 2000 and by["nuts_warm_big"]["ratio_vs_rows"] > 0
