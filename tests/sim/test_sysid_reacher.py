"""The reacher's robot side: excited data collection, identification and real fine-tuning.

Each of these failed with shape errors before (a one-actuator excitation, a cart-pole replay,
a flat policy read back as a cart-pole's). One short protocol, as in test_reacher.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

EPISODES = 8


@pytest.fixture(scope="module")
def reacher(sim):
    return sim.make_world("reacher", protocol=sim.Protocol(horizon=50))


@pytest.fixture(scope="module")
def pd(sim):
    kp, kd = 0.5, 0.1
    return sim.LinearPolicy(jnp.array([[-kp, 0.0, -kd, 0.0], [0.0, -kp, 0.0, -kd]]), jnp.zeros(2))


@pytest.fixture(scope="module")
def hidden(sim, reacher):
    """A reacher with weaker motors, more damping, one step of latency and noisy sensors."""
    params = reacher.params._replace(gear_scale=0.8, damping_scale=1.2, latency=1.0, obs_noise=0.005)
    return sim.RealRobot(sim.World(name="hidden_reacher", env="reacher", params=params,
                                   protocol=reacher.protocol, kind="real"))


@pytest.fixture(scope="module")
def data(hidden, pd):
    return hidden.collect(jax.random.key(5), pd, EPISODES, excitation=0.3)


def test_collect_logs_every_actuator_and_the_targets(hidden, data):
    assert data.obs.shape == (EPISODES, 50, 4)
    assert data.action.shape == data.excitation.shape == (EPISODES, 50, 2)
    assert data.setup.shape == (EPISODES, 2) and data.running.shape == (EPISODES, 50)
    assert np.abs(data.excitation).max() <= 0.3
    assert not np.allclose(data.excitation[..., 0], data.excitation[..., 1])  # one signal per motor
    assert hidden.episodes_run == EPISODES


def test_identify_on_the_reacher(sim, reacher, pd, hidden, data):
    r = sim.identify(jax.random.key(0), reacher, data, pd)
    truth = hidden.oracle().params
    assert r.mean["latency"] == 1.0 and r.latency_probs[1] > 0.9
    # one fit: check the 99% intervals (a miss has probability 1% each); the coverage of the
    # 90% intervals over many fits is what benchmarks/bench_sysid.py measures
    box, narrow = r.interval(0.99), r.interval(0.9)
    for f in ("damping_scale", "gear_scale"):
        lo, hi = box[f]
        assert lo <= getattr(truth, f) <= hi
        assert (narrow[f][1] - narrow[f][0]) / getattr(truth, f) < 0.2
    # the link mass barely moves an arm driven through heavily geared motors: its interval
    # stays about as wide as the prior's (exp(±1.645 · 0.5) at 90%)
    lo, hi = narrow["mass_scale"]
    assert lo <= truth.mass_scale <= hi and hi / lo > 3.0


def test_real_finetune_and_si_retrain_on_the_reacher(sim, reacher, pd, hidden):
    res = sim.run_intervention(jax.random.key(3), "real_finetune", {"episodes": 8, "population": 4},
                               pd, reacher, hidden)
    assert res.policy.weights.shape == (2, 4) and res.policy.bias.shape == (2,)
    assert res.info["real_episodes"] == 8
    # as many episodes as `data` (same excitation): identification reuses its compiled replay
    si = sim.run_intervention(jax.random.key(4), "si_retrain",
                              {"trajectories": EPISODES, "si_iterations": 10, "iterations": 2}, pd, reacher, hidden)
    assert si.info["si"].mean["latency"] == 1.0
    assert si.policy.weights.shape == (2, 4)
    assert [r.KIND for r in si.records] == ["system_id", "execution_outcome", "realized_cost"]
