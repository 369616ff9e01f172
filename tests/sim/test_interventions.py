"""Interventions: new policies, realized costs and records; real gaps are actually recovered."""

import jax
import numpy as np
import pytest

from bayes_s2r.errors import InputError


@pytest.fixture(scope="module")
def latency_robot(sim):
    return sim.RealRobot("real_latency")


def _real_success(sim, robot, policy, key=99, n=64):
    return float(np.mean(robot.run(jax.random.key(key), policy, n).stats.success))


def test_si_then_retrain_recovers_latency_gap(sim, world, nominal, latency_robot, compiled):
    costs = sim.load_costs()
    before = latency_robot.hours_used
    # 8 CEM generations in the fitted sim (16 by default) already reach ~97% real success
    res = sim.run_intervention(jax.random.key(0), "si_retrain", {"trajectories": 4, "si_iterations": 20,
                                                                 "iterations": 8},
                               nominal, world, latency_robot, name="si", round=3)
    si = res.info["si"]
    assert si.mean["latency"] == 2.0
    assert _real_success(sim, latency_robot, nominal) <= 0.2
    assert _real_success(sim, latency_robot, res.policy) >= 0.6
    kinds = [r.KIND for r in res.records]
    assert kinds == ["system_id", "execution_outcome", "realized_cost"]
    assert res.records[1].executions == 4
    assert res.cost.real == pytest.approx(latency_robot.episode_hours(4))
    assert latency_robot.hours_used - before >= res.cost.real
    assert res.cost.compute == pytest.approx(res.info["sim_steps"] / costs.sim_steps_per_hour)
    assert res.cost.eng == costs.eng_hours["si_retrain"]
    assert res.records[-1].real == pytest.approx(res.cost.real) and res.records[-1].round == 3


def test_dr_retrain_recovers_latency_gap_without_the_robot(sim, world, nominal, latency_robot, compiled):
    res = sim.run_intervention(jax.random.key(1), "dr_retrain", {"directions": ("latency",)},
                               nominal, world, None)
    assert res.cost.real == 0.0 and res.cost.compute > 0
    assert [r.KIND for r in res.records] == ["realized_cost"]
    assert _real_success(sim, latency_robot, res.policy) >= 0.6


def test_obs_augment_and_sim_steps_budget(sim, world, nominal, compiled):
    steps = 2 * 64 * 4 * world.protocol.horizon
    res = sim.run_intervention(jax.random.key(2), "obs_augment", {"sim_steps": steps}, nominal, world, None)
    assert res.info["sim_steps"] == steps
    assert res.cost.compute == pytest.approx(steps / sim.load_costs().sim_steps_per_hour)
    assert res.policy.weights.shape == (4,)


def test_real_finetune_touches_the_robot(sim, world, nominal, compiled):
    robot = sim.RealRobot("real_latency")
    res = sim.run_intervention(jax.random.key(3), "real_finetune", {"episodes": 16, "population": 8},
                               nominal, world, robot)
    ex = next(r for r in res.records if r.KIND == "execution_outcome")
    assert ex.executions == 16 == robot.episodes_run
    assert ex.unsafe == robot.unsafe_events > 0
    assert res.cost.real == pytest.approx(robot.hours_used) == pytest.approx(robot.episode_hours(16))
    assert res.cost.compute == 0.0


def test_obs_align_zeroes_a_sensor_offset_and_leaves_other_worlds_alone(sim, world, nominal, compiled):
    bias = sim.RealRobot("bench_obs_bias")
    res = sim.run_intervention(jax.random.key(4), "obs_align", None, nominal, world, bias, name="da")
    charged = bias.hours_used
    # the card's pole-angle bias is +0.2 rad; the other channels read as in sim
    assert res.info["offset"][1] == pytest.approx(0.2, abs=0.03)
    assert np.all(res.info["offset"][[0, 2, 3]] == 0.0)
    np.testing.assert_array_equal(res.policy.weights, nominal.weights)
    assert bias.unsafe_events == 0
    assert _real_success(sim, bias, nominal) <= 0.1
    assert _real_success(sim, bias, res.policy) >= 0.9
    # it reads the robot at rest: charged for the resets, no execution records
    assert [r.KIND for r in res.records] == ["realized_cost"]
    assert res.cost.real == pytest.approx(charged) and 0 < res.cost.real < bias.episode_hours(16)
    # a world without a sensor offset: nothing significant, the policy is unchanged
    latency = sim.RealRobot("real_latency")
    same = sim.run_intervention(jax.random.key(4), "obs_align", {"readings": 8}, nominal, world, latency)
    assert np.all(same.info["offset"] == 0.0)
    np.testing.assert_array_equal(same.policy.flat(), nominal.flat())


def test_intervention_input_errors(sim, world, nominal):
    with pytest.raises(InputError, match="kind"):
        sim.run_intervention(jax.random.key(0), "pray", None, nominal, world, None)
    with pytest.raises(InputError, match="params.widht"):
        sim.run_intervention(jax.random.key(0), "dr_retrain", {"widht": 1.0}, nominal, world, None)
    with pytest.raises(InputError, match="real_robot"):
        sim.run_intervention(jax.random.key(0), "real_finetune", None, nominal, world, None)
    with pytest.raises(InputError, match="real_robot"):
        sim.run_intervention(jax.random.key(0), "obs_align", None, nominal, world, None)
    with pytest.raises(InputError, match="params.readings"):
        sim.run_intervention(jax.random.key(0), "obs_align", {"readings": 1}, nominal, world,
                             sim.RealRobot("real_latency"))


def test_si_then_dr_around_the_posterior(sim, world, nominal, compiled):
    robot = sim.RealRobot("real_latency")
    res = sim.run_intervention(jax.random.key(5), "si_retrain",
                               {"trajectories": 4, "si_iterations": 10, "iterations": 2, "dr_around_fit": 1.0},
                               nominal, world, robot)
    si, spec = res.info["si"], res.info["spec"]
    for f in sim.FITTED:  # centred at the estimate, as wide as its uncertainty
        assert float(getattr(spec.center, f)) == pytest.approx(si.mean[f], rel=1e-6)
        assert float(getattr(spec.width, f)) == pytest.approx(si.sd[f], rel=1e-6)
    assert float(spec.center.latency) == si.mean["latency"] == 2.0
    assert res.policy.weights.shape == nominal.weights.shape
    with pytest.raises(InputError, match="params.trajectories"):
        sim.run_intervention(jax.random.key(5), "si_retrain", {"trajectories": 1}, nominal, world, robot)
    with pytest.raises(InputError, match="params.dr_around_fit"):
        sim.run_intervention(jax.random.key(5), "si_retrain", {"dr_around_fit": -1.0}, nominal, world, robot)


def test_si_collects_under_its_own_short_protocol(sim, world, nominal, compiled):
    # the shapes of bench_regime's smoke run (2 episodes of 20 steps): its compiles are reused
    robot = sim.RealRobot("real_latency")
    res = sim.run_intervention(jax.random.key(6), "si_retrain",
                               {"trajectories": 2, "si_iterations": 5, "iterations": 1, "collect_horizon": 20},
                               nominal, world, robot)
    short = sim.Protocol(horizon=20)
    assert res.cost.real == pytest.approx(2 * sim.World(protocol=short).episode_hours(1, robot.reset_overhead_s))
    assert res.cost.real < robot.episode_hours(2)  # charged by the short episodes' length
    assert res.records[1].executions == 2 and robot.protocol.horizon == 200  # the robot's own is unchanged
    with pytest.raises(InputError, match="horizon"):
        robot.collect(jax.random.key(0), nominal, 2, horizon=201)
    for bad in (0.5, 201):
        with pytest.raises(InputError, match="params.collect_horizon"):
            sim.run_intervention(jax.random.key(5), "si_retrain", {"collect_horizon": bad}, nominal, world, robot)

    class NoShortEpisodes:  # a lab's robot whose collect has no horizon
        hours_used = 0.0

        def run(self, key, policy, episodes): ...

        def collect(self, key, policy, episodes, excitation=0.0): ...

    with pytest.raises(InputError, match="real_robot.collect"):
        sim.run_intervention(jax.random.key(5), "si_retrain", {"collect_horizon": 20}, nominal, world,
                             NoShortEpisodes())
