"""The reacher behind the `World` interface: physics-dependent outcomes, ES, DR, cards, errors.

One short protocol for the whole module, so the reacher rollout compiles once (one chunk shape).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_s2r.errors import InputError
from bayes_s2r.sim.rollout import _chunk_fn
from bayes_s2r.vocab import check_shared_interface

EPISODES = 32


@pytest.fixture(scope="module")
def protocol(sim):
    return sim.Protocol(horizon=50)


@pytest.fixture(scope="module")
def reacher(sim, protocol):
    return sim.make_world("reacher", protocol=protocol)


@pytest.fixture(scope="module")
def pd(sim):
    """A proportional-derivative controller toward the target pose (gains in action units)."""
    kp, kd = 0.5, 0.1
    return sim.LinearPolicy(jnp.array([[-kp, 0.0, -kd, 0.0], [0.0, -kp, 0.0, -kd]]), jnp.zeros(2))


@pytest.fixture(scope="module")
def compiled_reacher(sim, reacher, pd):
    jax.block_until_ready(sim.rollout(jax.random.key(0), reacher, pd, 4))
    return _chunk_fn._cache_size()


def test_world_shapes_and_cards(sim, reacher, protocol):
    assert (reacher.act_size, reacher.obs_size) == (2, 4)
    assert len(reacher.interface.action_bounds) == 4  # two (low, high) pairs
    assert sim.load_card("reacher_sim", protocol=protocol).params == sim.nominal_params()
    real = sim.RealRobot("reacher_real_latency", protocol=protocol)
    assert real.env == "reacher" and real.oracle().params.latency == 2.0
    check_shared_interface(reacher.interface, real.interface)
    p = sim.nominal_params()._replace(mass_scale=2.0)
    edited = sim.apply_params(reacher.sys, p, reacher.n_frames, reacher.pole_link)
    np.testing.assert_allclose(edited.link.inertia.mass, reacher.sys.link.inertia.mass * np.array([2.0, 2.0, 1.0]),
                               rtol=1e-6)
    assert float(edited.opt.timestep) == pytest.approx(0.01)


def test_outcome_depends_on_physics(sim, reacher, pd, compiled_reacher):
    key = jax.random.key(1)
    zero = sim.LinearPolicy.zeros(reacher.obs_size, reacher.act_size)
    idle = sim.rollout(key, reacher, zero, EPISODES)
    good, traj = sim.rollout_trajectories(key, reacher, pd, EPISODES)
    assert not idle.success.any() and not idle.unsafe.any()
    assert good.success.mean() >= 0.9 and not good.unsafe.any()
    assert float(good.score.mean()) > float(idle.score.mean()) + 0.3
    assert np.ptp(np.asarray(idle.score)) > 0  # different targets, different scores
    assert traj.action.shape == (EPISODES, 50, 2) and traj.q.shape == (EPISODES, 50, 4)
    # two steps of latency destabilise the controller: the arm whips past the speed limit
    late = sim.rollout(key, reacher.with_params(latency=2), pd, EPISODES)
    assert late.success.mean() < 0.2 and late.unsafe.mean() > 0.5 and late.fell.all() == late.unsafe.all()
    # heavier links move differently under the same commands
    heavy = sim.rollout_trajectories(key, reacher.with_params(mass_scale=3.0, gear_scale=0.7), pd, EPISODES)[1]
    assert float(np.abs(np.asarray(heavy.q[:, 5, :2] - traj.q[:, 5, :2])).max()) > 1e-3
    assert _chunk_fn._cache_size() == compiled_reacher  # one compile for this shape


def test_dr_rollouts_resample(sim, reacher, pd, compiled_reacher):
    spec = sim.DRSpec.from_levels({"latency": 1.0, "mass": 1.0})
    s1, xi1 = sim.rollout_dr(jax.random.key(2), reacher, pd, spec, 64)
    s2, xi2 = sim.rollout_dr(jax.random.key(2), reacher, pd, spec, 64)
    _, xi3 = sim.rollout_dr(jax.random.key(3), reacher, pd, spec, 64)
    np.testing.assert_array_equal(np.asarray(xi1.mass_scale), np.asarray(xi2.mass_scale))
    np.testing.assert_array_equal(np.asarray(s1.success), np.asarray(s2.success))
    assert not np.array_equal(np.asarray(xi1.mass_scale), np.asarray(xi3.mass_scale))
    lat, ok = np.asarray(xi1.latency), np.asarray(s1.success)
    assert set(np.unique(lat)) == {0.0, 1.0, 2.0}
    assert ok[lat == 0].mean() > ok[lat == 2].mean()  # success follows the drawn latency


def test_sweep_and_paired_eval(sim, reacher, pd, compiled_reacher):
    r = sim.sensitivity_sweep(jax.random.key(4), reacher, pd, directions=["mass", "latency"],
                              levels=(0.0, 1.0), episodes=16)
    assert r.ranking[0] == "latency" and len(r.trials) == 4
    zero = sim.LinearPolicy.zeros(reacher.obs_size, reacher.act_size)
    p = sim.paired_eval(jax.random.key(5), reacher, zero, pd, 16, candidate_name="pd")
    assert p.delta > 0.5 and p.ci_low > 0
    assert _chunk_fn._cache_size() == compiled_reacher


def test_es_improves_a_reacher_policy(sim, reacher, compiled_reacher):
    r = sim.train_es(jax.random.key(6), reacher, config=sim.ESConfig(iterations=6, learning_rate=0.1))
    assert r.policy.weights.shape == (2, 4) and r.policy.bias.shape == (2,)
    assert r.fitness[-2:].mean() > r.fitness[:2].mean()
    flat = r.policy.flat()
    assert flat.shape == (10,)
    np.testing.assert_array_equal(np.asarray(sim.LinearPolicy.from_flat(flat, 2).weights), np.asarray(r.policy.weights))
    assert _chunk_fn._cache_size() == compiled_reacher  # ES reuses the compiled chunk


def test_bad_input_names_the_field(sim, reacher, pd):
    with pytest.raises(InputError, match="world.env"):
        sim.make_world("walker")
    with pytest.raises(InputError, match="policy.weights"):
        sim.rollout(jax.random.key(0), reacher, sim.LinearPolicy.zeros(), 2)  # a cart-pole policy
    with pytest.raises(InputError, match="excitation"):
        sim.rollout_trajectories(jax.random.key(0), reacher, pd, 2, excitation=np.zeros((2, 50)))
    with pytest.raises(InputError, match="policy.theta"):
        sim.LinearPolicy.from_flat(jnp.zeros(7), 2)
    with pytest.raises(InputError, match="protocol.hold_steps"):
        sim.Protocol(hold_steps=0)
    with pytest.raises(InputError, match="protocol.speed_limit"):
        sim.Protocol(speed_limit=-1.0)
    with pytest.raises(InputError, match="protocol.reach_tolerance"):
        sim.Protocol(reach_tolerance=float("nan"))


def test_apply_params_is_differentiable_in_the_mass_scale(sim, reacher):
    """Identification differentiates through ξ; the reacher scales two links at once."""
    def total_mass(scale):
        p = sim.nominal_params()._replace(mass_scale=scale)
        return sim.apply_params(reacher.sys, p, reacher.n_frames, reacher.pole_link).link.inertia.mass.sum()

    base = reacher.sys.link.inertia.mass
    assert float(jax.grad(total_mass)(1.5)) == pytest.approx(float(base[0] + base[1]), rel=1e-6)
