"""The built-in worlds as `Task`s (`as_task`) and on MJX (`World(backend="mjx")`).

From the same initial states with no sensor noise, the task and the world run the same
episodes: same success, unsafe flag and score, episode by episode, over a batch of ξ that
moves every direction of the built-in space at once.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_s2r.errors import InputError

EPISODES = 16


def _pd():
    from bayes_s2r import sim

    kp, kd = 0.5, 0.1
    return sim.LinearPolicy(jnp.array([[-kp, 0.0, -kd, 0.0], [0.0, -kp, 0.0, -kd]]), jnp.zeros(2))


def _same_episodes(sim, world, policy, key):
    """(world stats, task stats) of EPISODES episodes from the task's initial states."""
    from bayes_s2r.sim.rollout import simulate_batch

    bt = sim.as_task(world, chunk=EPISODES)
    dr = sim.DRSpec.create(width={"mass_scale": 0.4, "damping_scale": 0.3, "gear_scale": 0.3, "latency": 2,
                                  "obs_bias": 0.05, "control_period": 0.004})
    k_xi, k_run = jax.random.split(key)
    xi = sim.sample_params(k_xi, dr, EPISODES)
    values = np.stack([np.asarray(getattr(xi, f), np.float32) for f in sim.PARAM_NAMES], axis=1)
    keys = jax.random.split(k_run, EPISODES)
    # jitted: run eagerly, each of the MJX reset's operations would compile on its own
    reset_fn = jax.jit(jax.vmap(lambda k: bt.task.env.reset(jax.random.split(k, 3)[0]).pipeline_state))
    reset = reset_fn(keys)
    task_stats = sim.simulate_task(None, bt.task, policy, values, space=bt.space, keys=keys)
    world_stats = simulate_batch(k_run, world, policy, xi, init=(reset.q, reset.qd))
    return world_stats, task_stats


@pytest.mark.parametrize("env", ["inverted_pendulum", "reacher"])
def test_task_runs_the_worlds_episodes(sim, env):
    if env == "reacher":
        world, policy = sim.make_world("reacher", protocol=sim.Protocol(horizon=50)), _pd()
    else:
        world, policy = sim.make_world(), sim.nominal_policy()
    w, t = _same_episodes(sim, world, policy, jax.random.key(7))
    assert 0 < int(w.success.sum()) < EPISODES  # the batch of ξ gives both outcomes
    np.testing.assert_array_equal(np.asarray(t.success), np.asarray(w.success))
    np.testing.assert_array_equal(np.asarray(t.unsafe), np.asarray(w.unsafe))
    np.testing.assert_allclose(np.asarray(t.score), np.asarray(w.score), atol=1e-5)


def test_space_matches_params(sim):
    bt = sim.as_task(sim.make_world(params={"mass_scale": 1.3, "latency": 2, "obs_bias": 0.02}))
    assert bt.space.names == sim.PARAM_NAMES
    assert bt.values.tolist() == pytest.approx([1.3, 1.0, 1.0, 2.0, 0.0, 0.02, 0.04])
    again = sim.as_task(sim.make_world(params={"damping_scale": 0.03}))  # any positive scale, as Params
    assert again.task is bt.task and again.space == bt.space  # one task and space: one compile
    assert again.values[1] == pytest.approx(0.03)
    units = {d.param: d.unit for d in sim.DIRECTIONS.values()}  # a sweep level means the same on both paths
    assert {d.name: d.unit for d in bt.space.directions if d.name in units} == pytest.approx(units)
    with pytest.raises(InputError, match="world"):
        sim.as_task("inverted_pendulum")


def test_mjx_backend_runs_the_world(sim, nominal):
    world = sim.make_world(backend="mjx")
    stats = sim.rollout(jax.random.key(0), world, nominal, 8)
    assert bool(stats.success.all()) and not bool(stats.unsafe.any())
    assert sim.RealRobot(world, protocol=sim.Protocol(horizon=100)).oracle().backend == "mjx"
    with pytest.raises(InputError, match="world.backend"):
        sim.make_world(backend="positional")
