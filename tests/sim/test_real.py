"""The real-robot facade and the transfer gap."""

import jax
import numpy as np
import pytest

from bayes_s2r.errors import InputError


def test_hidden_latency_breaks_the_nominal_policy(sim, world, nominal, compiled):
    robot = sim.RealRobot("real_latency")
    td = sim.transfer_delta(jax.random.key(7), world, robot, nominal, 64)
    assert td.j_sim >= 0.95
    assert td.j_real <= 0.2
    assert td.delta == pytest.approx(td.j_real - td.j_sim)
    assert td.ci_high < 0
    assert td.record.episodes == 64 and td.record.unsafe > 0  # the pole falls: unsafe events
    assert robot.unsafe_events == td.record.unsafe


def test_robot_charges_time_and_hides_parameters(sim, nominal, compiled):
    robot = sim.RealRobot("real_dynamics", reset_overhead_s=10.0)
    assert not hasattr(robot, "params")
    run = robot.run(jax.random.key(0), nominal, 5)
    assert run.hours == pytest.approx(5 * (200 * 0.04 + 10.0) / 3600)
    assert robot.hours_used == pytest.approx(run.hours) and robot.episodes_run == 5
    data = robot.collect(jax.random.key(1), nominal, 3, excitation=0.2)
    assert data.obs.shape == (3, 200, 4) and data.action.shape == (3, 200)
    assert not hasattr(data, "q")  # logs hold observations, not true states
    assert np.abs(data.excitation).max() <= 0.2
    assert robot.episodes_run == 8
    assert robot.oracle().params.mass_scale == 1.3


def test_same_key_same_episodes(sim, nominal, compiled):
    a = sim.RealRobot("real_obs_bias").run(jax.random.key(3), nominal, 16)
    b = sim.RealRobot("real_obs_bias").run(jax.random.key(3), nominal, 16)
    np.testing.assert_array_equal(a.stats.score, b.stats.score)


def test_transfer_delta_needs_one_interface_and_protocol(sim, world, nominal):
    other = sim.RealRobot(sim.World(name="r", params=world.params._replace(control_period=0.05), kind="real"))
    with pytest.raises(InputError, match="policy_interface"):
        sim.transfer_delta(jax.random.key(0), world, other, nominal, 4)
    longer = sim.RealRobot("real_latency", protocol=sim.Protocol(horizon=100))
    with pytest.raises(InputError, match="protocol"):
        sim.transfer_delta(jax.random.key(0), world, longer, nominal, 4)


def test_logs_say_when_the_robot_stopped(sim, nominal, compiled):
    data = sim.RealRobot("real_latency").collect(jax.random.key(2), nominal, 8, excitation=0.3)
    assert data.running.shape == data.alive.shape == (8, 200) and data.setup is None
    assert np.all(data.running[data.alive])  # out of the success limits first, stopped later
    stopped = ~data.running[:, -1]
    assert stopped.sum() == data.run.unsafe > 0  # the latency makes the pole fall: the robot stops
    assert np.all(np.diff(data.running.astype(int), axis=1) <= 0)  # once stopped, stays stopped


def test_excitation_has_one_signal_per_actuator():
    from bayes_s2r.sim.real import make_excitation

    one = make_excitation(jax.random.key(0), 3, 10, 0.2, hold=5)
    two = make_excitation(jax.random.key(0), 3, 10, 0.2, hold=5, act_size=2)
    assert one.shape == (3, 10) and two.shape == (3, 10, 2)
    assert np.all(np.asarray(two[:, :5]) == np.asarray(two[:, :1]))  # held for 5 steps
    assert np.abs(np.asarray(two)).max() <= 0.2
