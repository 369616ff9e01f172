"""Reduced simulation-based calibration of the gains model (the full run: benchmarks/sbc_gains.py).

Datasets are drawn from the model's own prior for one fixed design (so every fit reuses one
compiled sampler) and fitted with the NUTS driver; central 90 % intervals of the true gains
must cover them at the binomial rate, and their ranks among the posterior draws must be
uniform. A miscalibrated posterior (too narrow, biased) fails both.
"""

import numpy as np
import sbc_gains

DATASETS = 24


def test_sbc_coverage_and_ranks_of_the_gains_model():
    cands, eps = sbc_gains.design(num_methods=2, lenses=1, per_group=3, episodes=(0, 15, 60))
    res = sbc_gains.run_sbc(DATASETS, seed=11, cands=cands, eps=eps, num_warmup=200,
                            num_samples=200, num_chains=1, thin=2)
    assert res.traces <= 1                      # one compilation for all datasets
    n = res.covered.size
    assert n == DATASETS * len(cands)
    low, high = sbc_gains.coverage_band(n, 0.9)
    coverage = float(res.covered.mean())
    assert low <= coverage <= high, (coverage, (low, high))
    ranks = sbc_gains.rank_uniformity(res.ranks, res.num_ranked, bins=5)
    assert ranks["p_value"] > 1e-3, ranks
    assert int(np.sum(res.divergences > 0)) <= DATASETS // 8


def test_coverage_band_rejects_a_miscalibrated_rate():
    low, high = sbc_gains.coverage_band(144, 0.9)
    assert low < 0.9 <= high
    assert not low <= 0.7 <= high               # 70 % coverage of 90 % intervals fails


def test_the_script_runs_small_and_prints_the_schema(capsys):
    import json

    result = sbc_gains.main(["--datasets", "2", "--methods", "1", "--lenses", "1", "--per-group", "2",
                             "--warmup", "20", "--samples", "20", "--chains", "1",
                             "--prior", '{"candidate_df": 2}'])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(result))
    assert printed["benchmark"] == "sbc_gains" and {"cores", "backend"} <= set(printed["machine"])
    assert printed["settings"]["prior"] == {"candidate_df": 2}
    assert printed["results"][0]["intervals"] == 2 * printed["settings"]["candidates"]
