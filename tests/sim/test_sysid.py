"""System identification recovers hidden mass, damping, gear and latency from a few episodes,
uses its key, reports intervals and turns its posterior into a DR distribution.

real_dynamics has no sensor noise, so 4 excited episodes pin its scales down; calibration
under noise is checked in test_sysid_calibration.py.
"""

import jax
import numpy as np
import pytest

from bayes_s2r.errors import InputError


@pytest.fixture(scope="module")
def dyn_fit(sim, world, nominal, compiled):
    robot = sim.RealRobot("real_dynamics")
    data = robot.collect(jax.random.key(11), nominal, 4, excitation=0.3)
    result = sim.identify(jax.random.key(0), world, data, nominal, sim.SIConfig(iterations=40))
    return robot, data, result


def test_si_recovers_mass_damping_gear(dyn_fit):
    robot, _, r = dyn_fit
    truth = robot.oracle().params
    assert r.method == "gradient"
    assert r.mean["mass_scale"] == pytest.approx(truth.mass_scale, rel=0.10)
    assert r.mean["damping_scale"] == pytest.approx(truth.damping_scale, rel=0.10)
    assert r.mean["gear_scale"] == pytest.approx(truth.gear_scale, rel=0.05)
    assert r.mean["latency"] == 0.0 and r.latency_probs[0] > 0.99
    assert all(np.isfinite(v) and v >= 0 for v in r.sd.values())


def test_si_record_is_valid(sim, dyn_fit, nominal):
    from bayes_s2r.evidence.records import SystemIdRecord, record_from_dict

    _, data, r = dyn_fit
    rec = r.record("si_retrain", trajectories=data.obs.shape[0], round=1, policy=sim.policy_id(nominal))
    assert isinstance(rec, SystemIdRecord)
    assert record_from_dict(rec.to_dict()) == rec
    assert rec.payload()["estimates"]["mass_scale"]["mean"] == pytest.approx(r.mean["mass_scale"])


def test_si_finds_latency_and_cem_fallback_runs(sim, world, nominal, compiled):
    robot = sim.RealRobot("real_latency")
    data = robot.collect(jax.random.key(12), nominal, 4, excitation=0.3)
    r = sim.identify(jax.random.key(1), world, data, nominal,
                     sim.SIConfig(method="cem", iterations=4, population=16, elite=4))
    assert r.method == "cem"
    assert r.mean["latency"] == 2.0
    assert r.params.latency == 2.0
    assert np.all(np.isfinite(list(r.mean.values())))


def test_same_key_same_answer_other_key_other_start(sim, world, nominal, dyn_fit):
    _, data, r = dyn_fit
    again = sim.identify(jax.random.key(0), world, data, nominal, sim.SIConfig(iterations=40))
    assert again.mean == r.mean and again.sd == r.sd
    other = sim.identify(jax.random.key(1), world, data, nominal, sim.SIConfig(iterations=40))
    assert not np.allclose(other.start, r.start)  # the key draws the starting point
    for f in sim.FITTED:  # ... and both starts reach the same fit
        assert other.mean[f] == pytest.approx(r.mean[f], rel=1e-3)


def test_posterior_becomes_a_dr_distribution(sim, dyn_fit):
    _, _, r = dyn_fit
    spec = r.to_dr()
    for f in sim.FITTED:
        assert float(getattr(spec.center, f)) == pytest.approx(r.mean[f], rel=1e-6)
        assert float(getattr(spec.width, f)) == pytest.approx(r.sd[f], rel=1e-6)
        assert bool(getattr(spec.normal, f))
    assert float(spec.center.latency) == r.mean["latency"]
    wide = r.to_dr(scale=2.0)
    assert float(wide.width.gear_scale) == pytest.approx(2 * r.sd["gear_scale"], rel=1e-6)
    draws = sim.sample_params(jax.random.key(0), spec, 4000)
    for f in sim.FITTED:
        x = np.asarray(getattr(draws, f))
        assert x.mean() == pytest.approx(r.mean[f], abs=4 * r.sd[f] / np.sqrt(4000) + 1e-6)
        # noise-free data leave sds near 1e-7: float32 draws resolve no less than one step at the centre
        step = float(np.spacing(np.float32(r.mean[f])))
        assert x.std() > 0 and x.std() == pytest.approx(r.sd[f], rel=0.1, abs=step)


def test_intervals_and_their_estimators(sim, dyn_fit):
    _, _, r = dyn_fit
    box = r.interval(0.9)
    for f in sim.FITTED:
        lo, hi = box[f]
        assert lo < r.mean[f] < hi
    assert set(r.covariances) == {"jackknife", "sandwich", "laplace"}
    np.testing.assert_array_equal(r.cov_log, r.covariances["jackknife"])
    with pytest.raises(InputError, match="covariance"):
        r.interval(0.9, covariance="bootstrap")
    with pytest.raises(InputError, match="level"):
        r.interval(1.5)


def test_bad_data_and_settings_are_refused(sim, world, nominal, dyn_fit):
    _, data, _ = dyn_fit
    one = data._replace(obs=data.obs[:1], action=data.action[:1], excitation=data.excitation[:1],
                        alive=data.alive[:1], running=data.running[:1])
    with pytest.raises(InputError, match="data.obs"):
        sim.identify(jax.random.key(0), world, one, nominal)
    with pytest.raises(InputError, match="data.excitation"):
        sim.identify(jax.random.key(0), world, data._replace(excitation=data.excitation[:, :10]), nominal)
    with pytest.raises(InputError, match="si.prior_sd"):
        sim.identify(jax.random.key(0), world, data, nominal, sim.SIConfig(prior_sd=0.0))
    with pytest.raises(InputError, match="si.segment"):
        sim.identify(jax.random.key(0), world, data, nominal, sim.SIConfig(segment=1))
