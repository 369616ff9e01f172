"""System identification on a lab's own `sim.Task`: two hidden parameters and the latency are
recovered from noisy logged episodes (closed-loop replay; open-loop too), the posterior feeds DR
rollouts of the same space, the same key gives the same answer, and bad input names its field.

The task is a small Brax `Env` written here (two damped masses on springs, each pushed by a
motor): it compiles in a second, where a physics pipeline takes a minute on a busy CPU. The
hopper notebook runs the same identification on Brax's MJX hopper.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax.envs.base import Env, State
from flax import struct

from bayes_s2r.errors import InputError

EPISODES, HORIZON = 8, 40
TRUTH = {"mass": 1.3, "gear": 0.8, "latency": 1, "obs_noise": 0.01}


@struct.dataclass
class Plant:
    mass: jax.Array
    damping: jax.Array
    gear: jax.Array
    stiffness: jax.Array


class MassSpring(Env):
    """obs = (positions, velocities) [4], action [2]; semi-implicit Euler, dt 0.05."""

    def __init__(self):
        self.sys = Plant(*(jnp.array(v) for v in ([1.0, 2.0], [0.5, 0.5], [2.0, 2.0], [4.0, 4.0])))

    def reset(self, rng):
        q = jax.random.uniform(rng, (4,), minval=-0.5, maxval=0.5)
        return State(q, q, jnp.zeros(()), jnp.zeros(()), {})

    def step(self, state, action):
        s, q = self.sys, state.pipeline_state
        v = q[2:] + 0.05 * (s.gear * action - s.damping * q[2:] - s.stiffness * q[:2]) / s.mass
        q = jnp.concatenate([q[:2] + 0.05 * v, v])
        return state.replace(pipeline_state=q, obs=q, reward=-jnp.sum(q[:2] ** 2))

    observation_size, action_size, backend = 4, 2, "toy"


@pytest.fixture(scope="module")
def setup(sim):
    task = sim.Task.from_brax(MassSpring(), horizon=HORIZON, chunk=EPISODES)
    space = sim.ParamSpace([
        sim.ModelField("mass", "mass[1]"),
        sim.ModelField("gear", "gear"),
        sim.SysFn("stiffness", lambda sys, v: sys.replace(stiffness=sys.stiffness * v), nominal=1.0, unit=0.2),
        sim.Latency(max_steps=2),
        sim.ObsNoise(unit=0.01),
    ])
    policy = sim.Policy.mlp(jax.random.key(0), 4, 2, hidden=(8,))
    keys = jax.random.split(jax.random.key(5), EPISODES)
    real = jnp.broadcast_to(jnp.asarray(space.values(TRUTH)), (EPISODES, len(space.names)))
    _, eps = sim.simulate_task(None, task, policy, real, space=space, keys=keys, record=True)
    return task, space, policy, sim.TaskData.from_episodes(eps, keys)


@pytest.fixture(scope="module")
def fit(sim, setup):
    task, space, policy, data = setup
    return sim.identify(jax.random.key(0), task, data, policy, sim.SIConfig(iterations=20), space=space)


def test_recovers_the_hidden_parameters(sim, setup, fit):
    task, space, policy, _ = setup
    assert fit.mean["latency"] == 1.0 and fit.latency_probs[1] > 0.99 and fit.method == "gradient"
    # one fit: the 99% intervals (a miss has probability 1% each) and narrow 90% ones
    box, narrow = fit.interval(0.99), fit.interval(0.9)
    for name, truth in (("mass", 1.3), ("gear", 0.8), ("stiffness", 1.0)):
        assert box[name][0] <= truth <= box[name][1], name
        assert narrow[name][1] - narrow[name][0] < 0.1 * truth, name
    assert fit.params.tolist() == pytest.approx([fit.mean["mass"], fit.mean["gear"], fit.mean["stiffness"], 1.0, 0.0])
    # SI, then DR around it: a DR of the same space, drawn by the task's rollouts
    dr = fit.to_dr(scale=2.0)
    assert dr.space is space and dr.center[:4].tolist() == pytest.approx(fit.params[:4].tolist())
    assert dr.width[1] == pytest.approx(2.0 * fit.sd["gear"]) and dr.normal[:4].all()
    stats, draws = sim.rollout_dr(jax.random.key(1), task, policy, dr, episodes=EPISODES)
    assert stats.success.shape == (EPISODES,) and np.all(np.asarray(draws)[:, 3] == 1.0)
    assert "gear" in dict(fit.record("si_fit", EPISODES).estimates)


def test_same_key_same_answer(sim, setup, fit):
    task, space, policy, data = setup
    again = sim.identify(jax.random.key(0), task, data, policy, sim.SIConfig(iterations=20), space=space)
    assert again.mean == fit.mean and np.array_equal(again.cov_log, fit.cov_log)
    # DESIGN's argument order, identify(key, task, space, data, policy), is the same call
    design = sim.identify(jax.random.key(0), task, space, data, policy, sim.SIConfig(iterations=20))
    assert design.mean == fit.mean
    with pytest.raises(InputError, match="identify"):
        sim.identify(jax.random.key(0), task, space, data, policy, sim.SIConfig(), config=sim.SIConfig())
    # another key, two directions (the stiffness is right at nominal), the logged actions
    # replayed open loop
    other = sim.identify(jax.random.key(1), task, data, policy, sim.SIConfig(iterations=20, replay="open"),
                         space=space, fit=["gear", "mass"])
    assert not np.array_equal(other.start, fit.start[:2]) and list(other.interval()) == ["gear", "mass"]
    box = other.interval(0.99)
    assert box["gear"][0] <= 0.8 <= box["gear"][1] and box["mass"][0] <= 1.3 <= box["mass"][1]
    assert other.mean["latency"] == 1.0 and other.params[2] == 1.0


def test_bad_input_names_the_field(sim, setup, world, nominal):
    task, space, policy, data = setup
    cases = [
        ("data.action", {"data": data._replace(action=data.action[..., :1])}),
        ("data.obs", {"data": sim.TaskData(*(x[:1] for x in data))}),
        ("data.keys", {"data": data._replace(keys=np.zeros((EPISODES, 2), np.uint32))}),
        ("data", {"data": tuple(data)}),
        ("fit", {"fit": ["latency"]}),
        ("fit", {"fit": ["wheel"]}),
        ("space", {"space": None}),
        ("si.replay", {"config": sim.SIConfig(replay="backwards")}),
    ]
    for field, change in cases:
        args = {"data": data, "space": space} | change
        with pytest.raises(InputError) as err:
            sim.identify(jax.random.key(0), task, args.pop("data"), policy, **args)
        assert err.value.field == field, (field, err.value)
    with pytest.raises(InputError) as err:
        sim.identify(jax.random.key(0), world, data, nominal, space=space)
    assert err.value.field == "space"
    with pytest.raises(InputError) as err:
        sim.identify(jax.random.key(0), world, data, nominal, sim.SIConfig(replay="open"))
    assert err.value.field == "si.replay"
