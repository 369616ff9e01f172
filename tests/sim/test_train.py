"""Training in sim: ES improves a policy; checkpoints round-trip; the shipped one loads."""

import jax
import numpy as np
import pytest

from bayes_s2r.errors import InputError
from bayes_s2r.sim.rollout import _chunk_fn


def _objective(sim, world, policy, spec=None, episodes=64):
    """The training objective (score + 0.5 · alive share) on fixed episodes, common to both policies."""
    key = jax.random.key(123)
    stats = (sim.rollout_dr(key, world, policy, spec, episodes)[0] if spec is not None
             else sim.rollout(key, world, policy, episodes))
    return float(np.mean(np.asarray(stats.score) + 0.5 * np.asarray(stats.steps_alive) / world.protocol.horizon))


def test_es_improves_from_zero(sim, world, compiled):
    before = _chunk_fn._cache_size()
    r = sim.train_es(jax.random.key(0), world, config=sim.ESConfig(iterations=8, learning_rate=0.1))
    assert r.fitness.shape == (8,)
    assert r.fitness[-3:].mean() > r.fitness[:3].mean()
    assert r.sim_steps == 8 * 32 * 8 * world.protocol.horizon
    assert _chunk_fn._cache_size() == before  # ES reuses the compiled rollout chunk
    zero = sim.LinearPolicy.zeros(world.obs_size, world.act_size)
    assert _objective(sim, world, r.policy) > _objective(sim, world, zero) + 0.05


def test_cem_retrains_under_dr(sim, world, nominal, compiled):
    spec = sim.DRSpec.from_levels({"latency": 1.0})
    r = sim.train_cem(jax.random.key(1), world, nominal, spec=spec, config=sim.CEMConfig(iterations=3))
    assert r.fitness.shape == (3,)
    # the retrained policy does better under the latency it was trained for than its start
    assert _objective(sim, world, r.policy, spec) > _objective(sim, world, nominal, spec) + 0.02


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
