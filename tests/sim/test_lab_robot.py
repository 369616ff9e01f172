"""A lab's own robot stands in for `RealRobot`: the documented `LabRobot` example, driven by a
simulated stand-in executor (native MuJoCo's cart-pole, stepped in Python), runs the robot
side of the interventions; what it cannot do is refused by name."""

import importlib.util
from pathlib import Path

import jax
import numpy as np
import pytest

from bayes_s2r.errors import InputError
from bayes_s2r.sim.robot import Robot, is_robot

HORIZON = 200


@pytest.fixture(scope="module")
def lab_robot_cls():
    path = Path(__file__).resolve().parents[2] / "docs" / "examples" / "lab_robot.py"
    spec = importlib.util.spec_from_file_location("lab_robot", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LabRobot


def mujoco_executor(latency: int = 0):
    """A stand-in for a lab's executor: one cart-pole episode in native MuJoCo per call, with
    the testbed's protocol (success and unsafe limits, 2 physics steps per control step) and an
    optional action latency (the "real" gap)."""
    import mujoco
    from etils import epath

    model = mujoco.MjModel.from_xml_path(str(epath.resource_path("brax") / "envs/assets/inverted_pendulum.xml"))
    data = mujoco.MjData(model)
    lo, hi = model.actuator_ctrlrange[0]

    def execute(policy_fn, seed):
        rng = np.random.default_rng(seed)
        mujoco.mj_resetData(model, data)
        data.qpos[:] = rng.uniform(-0.05, 0.05, model.nq)
        data.qvel[:] = rng.uniform(-0.05, 0.05, model.nv)
        queue = [0.0] * latency
        alive, unsafe, steps, score = True, False, 0, 0.0
        for _ in range(HORIZON):
            queue.append(float(policy_fn(np.concatenate([data.qpos, data.qvel]))))
            data.ctrl[0] = (queue.pop(0) + 1.0) * (hi - lo) * 0.5 + lo
            for _ in range(2):
                mujoco.mj_step(model, data)
            x, ang = data.qpos
            alive = alive and abs(ang) <= 0.2 and abs(x) <= 0.9
            if abs(ang) > 0.5 or abs(x) > 0.95:
                unsafe = True
                break
            steps += alive
            score += max(0.0, 1 - 0.5 * (ang / 0.2) ** 2 - 0.5 * (x / 0.9) ** 2) if alive else 0.0
        return {"success": alive and not unsafe, "unsafe": unsafe, "steps_alive": steps, "score": score / HORIZON}

    return execute


def test_lab_robot_is_a_robot_and_runs_a_policy(sim, lab_robot_cls, nominal):
    robot = lab_robot_cls(mujoco_executor(), episode_seconds=28.0)
    assert is_robot(robot) and isinstance(robot, Robot)
    run = robot.run(jax.random.key(0), nominal, 8)
    assert run.stats.success.shape == (8,) and run.hours == pytest.approx(8 * 28.0 / 3600)
    assert run.stats.success.mean() >= 0.75  # the sim-trained policy balances the stand-in
    assert robot.hours_used == pytest.approx(run.hours)
    again = lab_robot_cls(mujoco_executor(), episode_seconds=28.0).run(jax.random.key(0), nominal, 8)
    np.testing.assert_array_equal(again.stats.score, run.stats.score)  # same key, same episodes
    late = lab_robot_cls(mujoco_executor(latency=2), episode_seconds=28.0).run(jax.random.key(0), nominal, 8)
    assert late.stats.success.mean() < run.stats.success.mean()


def test_real_finetune_runs_on_a_lab_robot(sim, lab_robot_cls, world, nominal):
    robot = lab_robot_cls(mujoco_executor(latency=1), episode_seconds=28.0, interface=world.interface)
    res = sim.run_intervention(jax.random.key(3), "real_finetune", {"episodes": 16, "population": 8},
                               nominal, world, robot)
    ex = next(r for r in res.records if r.KIND == "execution_outcome")
    assert ex.executions == 16 == robot.episodes_run
    assert res.cost.real == pytest.approx(robot.hours_used) == pytest.approx(16 * 28.0 / 3600)
    assert res.policy.weights.shape == nominal.weights.shape
    assert np.all(np.isfinite(np.asarray(res.policy.flat())))


def test_what_a_lab_robot_lacks_is_refused_by_name(sim, lab_robot_cls, world, nominal):
    robot = lab_robot_cls(mujoco_executor(), episode_seconds=28.0)
    with pytest.raises(InputError, match=r"real_robot.*collect"):
        sim.run_intervention(jax.random.key(0), "si_retrain", None, nominal, world, robot)
    with pytest.raises(InputError, match=r"real_robot.*read_at_rest"):
        sim.run_intervention(jax.random.key(0), "obs_align", None, nominal, world, robot)
    with pytest.raises(InputError, match="real_robot"):
        sim.run_intervention(jax.random.key(0), "real_finetune", None, nominal, world, object())
    other = sim.make_world(params={"control_period": 0.05})
    mismatched = lab_robot_cls(mujoco_executor(), episode_seconds=28.0, interface=other.interface)
    with pytest.raises(InputError, match="policy_interface"):
        sim.run_intervention(jax.random.key(0), "real_finetune", None, nominal, world, mismatched)
    assert robot.hours_used == 0.0 and mismatched.hours_used == 0.0  # nothing ran
