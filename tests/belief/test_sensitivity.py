"""Sensitivity posterior: ranking, synergy detection, proxy discount, outputs, bad input."""

import pytest

from bayes_s2r.belief.sensitivity import fit_sensitivity
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import SensitivityTrial as T
from bayes_s2r.models.sensitivity import SensitivityPrior

N = 200
J0 = 0.9
# true success probabilities, set on the J scale (not drawn from the model being tested)
SINGLE = {"latency": 0.3, "mass": 0.8, "damping": 0.8, "gear": 0.75}
PAIRS = {("damping", "mass"): 0.4,     # synergy 0.8 + 0.8 - 0.4 - 0.9 = +0.3
         ("gear", "mass"): 0.65}       # synergy 0.8 + 0.75 - 0.65 - 0.9 = 0
BASE, NEW = 0.8, 0.5                   # robot_x, bench_x: a small direct trial at BASE, then
                                       # the same new evidence at NEW, direct or proxy


def _trial(direction, level, j, tier="direct", **pair):
    return T(direction, level, round(j * N), N, tier=tier, **pair)


def _evidence():
    recs = [_trial("latency", 0.0, J0), _trial("latency", 0.0, J0, tier="proxy")]
    recs += [_trial(k, 1.0, j) for k, j in SINGLE.items()]
    recs += [_trial(k, 1.0, j, pair_direction=l, pair_level=1.0) for (k, l), j in PAIRS.items()]
    for k in ("robot_x", "bench_x"):
        recs.append(T(k, 1.0, int(BASE * 40), 40, tier="direct"))
    recs += [_trial("robot_x", 1.0, NEW, tier="direct"), _trial("bench_x", 1.0, NEW, tier="proxy")]
    return recs


@pytest.fixture(scope="module")
def belief():
    return fit_sensitivity(_evidence(), num_warmup=300, num_samples=300, num_chains=2, seed=0)


def test_large_drop_ranks_first(belief):
    r = belief.ranking()
    assert r.index[0] == "latency"
    assert r.loc["latency", "p_rank1"] > 0.9
    assert r["p_rank1"].sum() == pytest.approx(1.0)
    assert r.loc["latency", "mean"] == pytest.approx(J0 - SINGLE["latency"], abs=0.08)
    assert r.loc["latency", "hdi_low"] < J0 - SINGLE["latency"] < r.loc["latency", "hdi_high"]
    assert list(r["mean"]) == sorted(r["mean"], reverse=True)


def test_injected_synergy_detected_and_null_pair_not(belief):
    s = belief.synergy(hdi_prob=0.95)
    hit, null = s.loc[("damping", "mass")], s.loc[("gear", "mass")]
    assert hit["hdi_low"] > 0 and hit["mean"] == pytest.approx(0.3, abs=0.1)
    assert null["hdi_low"] < 0 < null["hdi_high"]
    assert hit["p_positive"] > 0.97


def test_proxy_evidence_moves_the_posterior_less_than_direct(belief):
    """Same base evidence, then the same new counts: direct for robot_x, proxy for bench_x."""
    direct, proxy = belief.column("robot_x"), belief.column("sensitivity:bench_x")
    base = J0 - BASE
    assert base < proxy.mean() < direct.mean()
    assert proxy.mean() - base < 0.6 * (direct.mean() - base)
    assert proxy.std() > direct.std()
    pooled_direct = J0 - (BASE * 40 + NEW * N) / (40 + N)
    assert direct.mean() == pytest.approx(pooled_direct, abs=0.06)


def test_outputs_and_diagnostics(belief):
    idata = belief.to_inference_data()
    assert list(idata.posterior["S"].coords["direction"].values) == list(belief.directions)
    assert idata.posterior["S"].shape == (2, 300, len(belief.directions))
    assert idata.posterior["synergy"].shape == (2, 300, 2)
    d = belief.diagnostics
    assert {"rhat_max", "ess_min", "divergences", "ok"} <= set(d)
    assert d["rhat_max"] < 1.05 and d["divergences"] == 0
    assert belief.draws.shape == (600, len(belief.directions))


def test_bad_input():
    ev = _evidence()
    cases = [
        (lambda: fit_sensitivity(ev, method="svi"), "method"),
        (lambda: fit_sensitivity(ev, seed=-1), "seed"),
        (lambda: fit_sensitivity(ev, num_chains=0), "num_chains"),
        (lambda: fit_sensitivity(ev, prior={"scale_b": 1}), "prior"),
        (lambda: fit_sensitivity(ev, prior=SensitivityPrior(scale_b=-1.0)), "prior.scale_b"),
        (lambda: fit_sensitivity(ev, prior=SensitivityPrior(bias_scale=(0.5,))), "prior.bias_scale"),
        (lambda: fit_sensitivity(ev, prior=SensitivityPrior(loc_a=float("nan"))), "prior.loc_a"),
        (lambda: fit_sensitivity(ev, target_accept=1.5), "target_accept"),
        (lambda: fit_sensitivity(ev, policy="nobody"), "policy"),
        (lambda: fit_sensitivity([], num_chains=1), "records"),
    ]
    for call, field in cases:
        with pytest.raises(InputError, match=field):
            call()


def test_bad_queries(belief):
    with pytest.raises(InputError, match="direction"):
        belief.column("wind")
    with pytest.raises(InputError, match="hdi_prob"):
        belief.ranking(hdi_prob=1.0)
