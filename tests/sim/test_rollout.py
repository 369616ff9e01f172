"""Rollouts: outputs depend on the physics, the nominal policy balances, one compile per shape."""

import jax
import numpy as np
import pytest

from bayes_s2r.errors import InputError
from bayes_s2r.sim.rollout import _chunk_fn


def test_nominal_policy_balances_in_sim(sim, world, nominal, compiled):
    s = sim.rollout(jax.random.key(2), world, nominal, 64)
    assert s.success.mean() >= 0.95
    assert not s.unsafe.any()
    assert np.all(np.asarray(s.steps_alive)[np.asarray(s.success)] == world.protocol.horizon)


def test_score_depends_on_state_not_a_constant(sim, world, nominal, compiled):
    good = sim.rollout(jax.random.key(3), world, nominal, 32)
    idle = sim.rollout(jax.random.key(3), world, sim.LinearPolicy.zeros(), 32)
    assert float(good.score.mean()) > 0.8 > float(idle.score.mean())
    assert np.ptp(np.asarray(idle.score)) > 0  # different initial states, different scores
    assert not idle.success.any() and idle.fell.all()  # an unactuated pole falls


def test_physical_parameters_change_the_outcome(sim, world, compiled):
    # An unactuated pole: how fast it falls depends on mass and damping, not on the policy.
    idle = sim.LinearPolicy.zeros()
    key = jax.random.key(4)
    base = np.asarray(sim.rollout(key, world, idle, 16).steps_alive)
    damped = np.asarray(sim.rollout(key, world.with_params(damping_scale=20.0), idle, 16).steps_alive)
    assert damped.mean() > base.mean() + 1
    # Actuator gain: a constant push moves the cart faster with more gear.
    push = sim.LinearPolicy(np.zeros(4, np.float32), np.float32(0.3))
    weak = sim.rollout_trajectories(key, world.with_params(gear_scale=0.5), push, 4)[1]
    strong = sim.rollout_trajectories(key, world, push, 4)[1]
    assert float(np.abs(strong.q[:, 5, 0]).mean()) > float(np.abs(weak.q[:, 5, 0]).mean())


def test_latency_delays_the_action(sim, world, compiled):
    push = sim.LinearPolicy(np.zeros(4, np.float32), np.float32(0.5))
    key = jax.random.key(5)
    q0 = sim.rollout_trajectories(key, world, push, 2)[1].qd[:, :, 0]
    q2 = sim.rollout_trajectories(key, world.with_params(latency=2), push, 2)[1].qd[:, :, 0]
    # with 2 steps of latency the cart starts moving two steps later
    assert float(np.abs(q0[:, 0]).mean()) > 0.1 > float(np.abs(q2[:, 1]).mean())
    assert float(np.abs(q2[:, 2]).mean()) > 0.1


def test_one_compile_per_shape(sim, world, nominal, compiled):
    before = _chunk_fn._cache_size()
    for i, (n, xi) in enumerate([(8, {"mass_scale": 1.4}), (260, {"latency": 3}), (5, {"obs_noise": 0.05})]):
        jax.block_until_ready(sim.rollout(jax.random.key(i), world.with_params(**xi), nominal, n))
    spec = sim.DRSpec.from_levels({"latency": 1.0, "mass": 1.0})
    jax.block_until_ready(sim.rollout_dr(jax.random.key(9), world, nominal, spec, 40))
    # other tests may have compiled other chunk shapes first; these calls add no new trace
    assert _chunk_fn._cache_size() == before >= compiled >= 1


def test_dr_rollout_resamples_per_episode(sim, world, nominal, compiled):
    spec = sim.DRSpec.from_levels({"latency": 1.0})
    s1, xi1 = sim.rollout_dr(jax.random.key(6), world, nominal, spec, 64)
    s2, xi2 = sim.rollout_dr(jax.random.key(6), world, nominal, spec, 64)
    np.testing.assert_array_equal(np.asarray(xi1.latency), np.asarray(xi2.latency))
    np.testing.assert_array_equal(np.asarray(s1.success), np.asarray(s2.success))
    lat = np.asarray(xi1.latency)
    assert set(np.unique(lat)) == {0.0, 1.0, 2.0}
    ok = np.asarray(s1.success)
    assert ok[lat == 0].mean() > ok[lat == 2].mean()  # success follows the drawn latency


def test_rollout_rejects_bad_input(sim, world, nominal):
    with pytest.raises(InputError, match="episodes"):
        sim.rollout(jax.random.key(0), world, nominal, 0)
    with pytest.raises(InputError, match="excitation"):
        sim.rollout_trajectories(jax.random.key(0), world, nominal, 2, excitation=np.zeros((3, 7)))
