"""Training in sim: ES improves a policy; checkpoints round-trip; the shipped one loads."""

import jax
import numpy as np
import pytest

from bayes_s2r.errors import InputError


def test_es_improves_from_zero(sim, world, compiled):
    before = sim.TRACE_COUNTS["rollout"]
    r = sim.train_es(jax.random.key(0), world, config=sim.ESConfig(iterations=8, learning_rate=0.1))
    assert r.fitness.shape == (8,)
    assert r.fitness[-3:].mean() > r.fitness[:3].mean()
    assert r.sim_steps == 8 * 32 * 8 * world.protocol.horizon
    assert sim.TRACE_COUNTS["rollout"] == before  # ES reuses the compiled rollout chunk


def test_cem_retrains_under_dr(sim, world, nominal, compiled):
    spec = sim.DRSpec.from_levels({"latency": 1.0})
    r = sim.train_cem(jax.random.key(1), world, nominal, spec=spec, config=sim.CEMConfig(iterations=3))
    assert r.fitness.shape == (3,) and np.all(np.isfinite(np.asarray(r.policy.flat())))


def test_checkpoint_round_trip(sim, nominal, tmp_path):
    path = sim.save_policy(tmp_path / "p.npz", nominal, {"note": "x"})
    pol, meta = sim.load_policy(path)
    np.testing.assert_array_equal(np.asarray(pol.weights), np.asarray(nominal.weights))
    assert meta == {"note": "x"}
    _, meta = sim.load_policy("nominal")
    assert meta["env"] == "inverted_pendulum" and meta["sim_steps"] > 0
    with pytest.raises(InputError, match="checkpoint"):
        sim.load_policy("missing")
    with pytest.raises(InputError, match="population"):
        sim.train_es(jax.random.key(0), sim.make_world(), config=sim.ESConfig(population=3))
