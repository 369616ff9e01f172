"""Task episodes over a Brax environment (MJX backend): predicates, matched seeds, one compile."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax_task_fixtures import HORIZON, nominal, pendulum_env, pendulum_space, pendulum_task

from bayes_s2r import sim
from bayes_s2r.errors import InputError
from bayes_s2r.sim.task import _chunk_fn


@pytest.fixture(scope="module")
def recorded():
    """Episodes of the nominal policy with latency 0..3 (two of each), recorded."""
    space = pendulum_space()
    values = np.repeat(np.stack([space.values({"latency": k}) for k in range(4)]), 2, axis=0)
    return values, sim.simulate_task(jax.random.key(0), pendulum_task(), nominal(), values, space=space,
                                     record=True)


def test_latency_makes_the_nominal_policy_fail(recorded):
    _values, (stats, _ep) = recorded
    success = np.asarray(stats.success).reshape(4, 2)
    assert success[:2].all() and not success[2:].any()  # FINDINGS: two steps of latency drop it
    assert np.all(np.asarray(stats.terminated) == ~np.asarray(stats.success))
    assert np.all(np.asarray(stats.steps_alive)[stats.success] == HORIZON)


def test_stats_follow_from_the_recorded_episodes(recorded):
    _, (stats, ep) = recorded
    done, reward = np.asarray(ep.done), np.asarray(ep.reward)
    assert ep.obs.shape == (8, HORIZON, 4) and ep.action.shape == (8, HORIZON, 1) and done.shape == (8, HORIZON)
    assert np.all(np.diff(done.astype(int), axis=1) >= 0)  # once done, done for good
    after = np.concatenate([np.zeros((8, 1), bool), done[:, :-1]], axis=1)
    assert np.all(reward[after] == 0.0)  # no reward after termination
    assert np.allclose(np.asarray(stats.score), reward.sum(axis=1))
    # unsafe is the task's predicate: the pole tilted past 0.15 rad at some step
    assert np.array_equal(np.asarray(stats.unsafe), np.any(np.abs(np.asarray(ep.obs)[:, :, 1]) > 0.15, axis=1))
    assert np.asarray(stats.unsafe)[~np.asarray(stats.success)].all()
    # the action is applied after the latency: the seen observations are the noise-free ones here
    assert np.allclose(np.asarray(ep.seen)[:, 1:], np.asarray(ep.obs)[:, :-1], atol=1e-6)


def test_dr_over_a_direction_that_matters_changes_success():
    space = pendulum_space()
    task = pendulum_task()
    calm, _ = sim.rollout_dr(jax.random.key(1), task, nominal(), space.dr({"gear": 0.2}), 16)
    lagged, draws = sim.rollout_dr(jax.random.key(1), task, nominal(), space.dr({"latency": 3}, center={"latency": 0}), 16)
    assert float(calm.success.mean()) == 1.0
    lat = np.asarray(draws)[:, 2]
    ok = np.asarray(lagged.success)
    assert ok[lat <= 1].all() and not ok[lat >= 2].any()
    assert 0.0 < ok.mean() < 1.0


def test_same_key_same_answer_and_one_compile_per_shape():
    space, task = pendulum_space(), pendulum_task()
    dist = space.dr({"gear": 0.3, "obs_noise": 0.02, "latency": 1})
    a, va = sim.rollout_dr(jax.random.key(7), task, nominal(), dist, 8)
    before = _chunk_fn._cache_size()
    b, vb = sim.rollout_dr(jax.random.key(7), task, nominal(), dist, 8)
    _c, vc = sim.rollout_dr(jax.random.key(8), task, nominal(), dist, 13)  # two chunks, same shape
    other = sim.as_policy(nominal())
    other = sim.Policy(other.apply, jax.tree.map(lambda x: 0.9 * x, other.params))
    sim.rollout_dr(jax.random.key(7), task, other, dist, 8)  # new parameters, same structure
    assert _chunk_fn._cache_size() == before
    assert np.array_equal(va, vb) and all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(va, vc[:8])


class PointMass:
    """A tiny Brax environment of one's own: a damped point mass pushed along a line."""

    def __init__(self):
        from flax import struct

        @struct.dataclass
        class Model:
            mass: jax.Array
            damping: jax.Array

        self.sys = Model(jnp.array([1.0]), jnp.array(0.5))

    action_size = 1
    observation_size = 2

    def reset(self, rng):
        from brax.envs.base import State

        x = jax.random.uniform(rng, (2,), minval=-0.1, maxval=0.1)
        return State(x, x, jnp.zeros(()), jnp.zeros(()), {})

    def step(self, state, action):
        x, v = state.pipeline_state
        v = v + 0.1 * (action[0] / self.sys.mass[0] - self.sys.damping * v)
        new = jnp.stack([x + 0.1 * v, v])
        return state.replace(pipeline_state=new, obs=new, reward=-new[0] ** 2,
                             done=(jnp.abs(new[0]) > 0.12).astype(jnp.float32))


def test_jitted_and_eager_episodes_agree():
    task = sim.Task.from_brax(PointMass(), horizon=6, chunk=2, success=lambda ep: ep.ret > -0.05)
    space = sim.ParamSpace([sim.ModelField("mass", "mass[0]", unit=0.5), sim.ObsNoise(unit=0.1),
                            sim.Latency(max_steps=2)])
    policy = sim.Policy.linear(jnp.array([[-1.0, -0.5]]), jnp.array([0.2]))
    dist = space.dr({"mass": 0.5, "obs_noise": 0.05, "latency": 2}, center={"latency": 1})
    values = dist.sample(jax.random.key(1), 2)
    jitted = sim.simulate_task(jax.random.key(3), task, policy, values, space=space, record=True)
    with jax.disable_jit():
        eager_values = dist.sample(jax.random.key(1), 2)
        eager = sim.simulate_task(jax.random.key(3), task, policy, eager_values, space=space, record=True)
    assert np.allclose(values, eager_values)
    for x, y in zip(jax.tree.leaves(jitted), jax.tree.leaves(eager)):
        assert np.allclose(x, y, atol=1e-5)
    # the mass direction reaches the model: heavier, slower
    light = sim.simulate_task(jax.random.key(3), task, policy, jnp.array([[0.5, 0.0, 0.0]]), space=space,
                              record=True)[1]
    heavy = sim.simulate_task(jax.random.key(3), task, policy, jnp.array([[2.0, 0.0, 0.0]]), space=space,
                              record=True)[1]
    assert abs(float(light.obs[0, 2, 1] - light.obs[0, 0, 1])) > abs(float(heavy.obs[0, 2, 1] - heavy.obs[0, 0, 1]))


def test_episode_fn_is_the_simulated_episode_and_differentiable():
    task = sim.Task.from_brax(PointMass(), horizon=5, chunk=2)
    space = sim.ParamSpace([sim.ModelField("mass", "mass[0]"), sim.ModelField("damping", "damping")])
    policy = sim.Policy.linear(jnp.array([[-1.0, -0.5]]), jnp.array([0.3]))
    f = sim.episode_fn(task, policy, space)
    values, keys = jnp.array([[1.0, 1.0], [2.0, 0.5]]), jax.random.split(jax.random.key(0), 2)
    stats, _ = jax.vmap(f, in_axes=(None, 0, 0))(policy.params, values, keys)
    ref = sim.simulate_task(None, task, policy, values, space=space, keys=keys)
    assert all(np.allclose(a, b) for a, b in zip(stats, ref))
    final_x = lambda v: f(policy.params, v, keys[0])[1].obs[-1, 0]
    g = jax.grad(final_x)(values[0])
    assert np.all(np.isfinite(g)) and float(g[0]) != 0.0  # the mass reaches the trajectory


def test_a_keyed_policy_draws_matched_keys():
    task = sim.Task.from_brax(PointMass(), horizon=5, chunk=4)

    def shaky(params, obs, key):  # a stochastic policy: gain plus noise from the key it is given
        return params["gain"] * obs[:1] + 0.3 * jax.random.normal(key, (1,))

    pol = sim.Policy(shaky, {"gain": jnp.array(-1.0)}, keyed=True)
    a = sim.simulate_task(jax.random.key(0), task, pol, episodes=4, record=True)[1].action
    b = sim.simulate_task(jax.random.key(0), task, pol, episodes=4, record=True)[1].action
    c = sim.simulate_task(jax.random.key(1), task, pol, episodes=4, record=True)[1].action
    assert np.array_equal(a, b) and not np.allclose(a, c)
    assert len({round(float(x), 5) for x in np.asarray(a)[:, 0, 0]}) == 4  # each episode its own noise
    paired = sim.paired_eval(jax.random.key(0), task, pol, pol, 4, candidate_name="same")
    assert paired.delta == 0.0


def test_a_policy_on_a_builtin_world_is_a_linear_policy():
    mlp = sim.Policy.mlp(jax.random.key(0), 4, 1, hidden=(4,))
    with pytest.raises(InputError, match="policy"):
        sim.rollout(jax.random.key(0), sim.make_world(), mlp, 2)


def test_flax_mlp_and_linear_policies_both_run():
    task = pendulum_task()
    mlp = sim.Policy.mlp(jax.random.key(0), 4, 1, hidden=(8,))
    lin = sim.Policy.linear(jnp.zeros((1, 4)), jnp.zeros(1))
    at = pendulum_space().point()  # the nominal model, through the compiled episodes of the DR tests
    s_mlp, _ = sim.rollout_dr(jax.random.key(0), task, mlp, at, 4)
    s_lin, _ = sim.rollout_dr(jax.random.key(0), task, lin, at, 4)
    s_nom, _ = sim.rollout_dr(jax.random.key(0), task, nominal(), at, 4)
    assert s_mlp.success.shape == s_lin.success.shape == (4,)
    assert not s_lin.success.any()  # no control: the pole falls
    assert s_nom.success.all()


def test_bad_tasks_are_input_errors():
    env = pendulum_env()
    with pytest.raises(InputError, match="task.env"):
        sim.Task.from_brax(object(), horizon=10)
    with pytest.raises(InputError, match="task.horizon"):
        sim.Task.from_brax(env, horizon=0)
    with pytest.raises(InputError, match="task.action_clip"):
        sim.Task.from_brax(env, horizon=5, action_clip=(1.0, -1.0))
    vector = sim.Task.from_brax(env, horizon=2, chunk=2, success=lambda ep: ep.reward > 0)
    with pytest.raises(InputError, match="task.success"):
        sim.rollout(jax.random.key(0), vector, nominal(), 2)
    with pytest.raises(InputError, match="values"):
        sim.simulate_task(jax.random.key(0), pendulum_task(), nominal(), jnp.zeros((2, 3)), space=pendulum_space())
    with pytest.raises(InputError, match="spec"):
        sim.rollout_dr(jax.random.key(0), pendulum_task(), nominal(), sim.DRSpec.create(), 2)
