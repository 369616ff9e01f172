"""Sensitivity sweeps: latency ranks first for the nominal policy; pair trials on a grid."""

import numpy as np
import pytest

from bayes_s2r.errors import InputError


def test_sweep_ranks_latency_first(sweep_result):
    assert sweep_result.ranking[0] == "latency"
    t = sweep_result.table
    single = t[t.pair_direction.isna()]
    lat = single[single.direction == "latency"].set_index("level").success_rate
    assert lat[0.0] >= 0.9 and lat[1.0] <= 0.2


def test_sweep_trials_are_records(sim, sweep_result):
    from bayes_s2r.evidence.records import SensitivityTrial, record_from_dict

    trials = sweep_result.trials
    n_single = len(sim.DIRECTIONS) * 2
    assert len(trials) == n_single + 4
    assert all(isinstance(r, SensitivityTrial) and r.tier == "proxy" and r.episodes == 16 for r in trials)
    pairs = trials[n_single:]
    assert {(r.direction, r.pair_direction) for r in pairs} == {("latency", "mass")}
    assert sorted((r.level, r.pair_level) for r in pairs) == [(0.5, 0.5), (0.5, 1.0), (1.0, 0.5), (1.0, 1.0)]
    for r in trials:
        assert record_from_dict(r.to_dict()) == r
    # level 0 of every direction is the same nominal condition on the same episodes
    zero = {r.successes for r in trials[:n_single] if r.level == 0.0}
    assert len(zero) == 1


def test_rank_directions_known_answer(sim):
    import pandas as pd

    rows = [("a", 0.0, 1.0, 0.9), ("a", 1.0, 0.5, 0.5), ("b", 0.0, 1.0, 0.9), ("b", 1.0, 0.2, 0.3),
            ("c", 0.0, 1.0, 0.9), ("c", 1.0, 0.5, 0.2)]
    t = pd.DataFrame([{"direction": d, "level": lv, "success_rate": s, "mean_score": sc,
                       "pair_direction": None} for d, lv, s, sc in rows])
    assert sim.rank_directions(t) == ["b", "c", "a"]


def test_sweep_rejects_bad_input(sim, world, nominal):
    import jax

    with pytest.raises(InputError, match="directions"):
        sim.sensitivity_sweep(jax.random.key(0), world, nominal, directions=["friction"])
    with pytest.raises(InputError, match="pairs"):
        sim.sensitivity_sweep(jax.random.key(0), world, nominal, pairs=[("mass", "mass")])
    with pytest.raises(InputError, match="levels"):
        sim.sensitivity_sweep(jax.random.key(0), world, nominal, levels=[np.nan])
