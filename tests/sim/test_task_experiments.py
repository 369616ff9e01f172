"""Sensitivity sweeps and paired evaluations on a Task, and paired evaluation on a duck-typed robot."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax_task_fixtures import nominal, pendulum_space, pendulum_task

from bayes_s2r import sim
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import PairedEval, SensitivityTrial


@pytest.fixture(scope="module")
def sweep():
    return sim.sensitivity_sweep(jax.random.key(0), pendulum_task(), nominal(), pendulum_space(),
                                 directions=["latency", "gear"], levels=(0.0, 1.0, 1.5), episodes=8,
                                 pairs=[("latency", "gear")], pair_levels=(1.0, 1.5), round=3)


def test_sweep_records_single_and_pair_trials(sweep):
    singles = [(t.direction, t.level) for t in sweep.trials if t.pair_direction is None]
    pairs = [(t.direction, t.level, t.pair_direction, t.pair_level) for t in sweep.trials if t.pair_direction]
    assert singles == [(d, lv) for d in ("latency", "gear") for lv in (0.0, 1.0, 1.5)]
    assert pairs == [("latency", la, "gear", lb) for la in (1.0, 1.5) for lb in (1.0, 1.5)]
    assert all(isinstance(t, SensitivityTrial) and t.tier == "proxy" and t.round == 3 for t in sweep.trials)
    assert sweep.trials[0].policy == sim.policy_label(nominal())
    assert sweep.sim_steps == len(sweep.trials) * 8 * pendulum_task().horizon


def test_sweep_effects_and_synergy(sweep):
    rate = {(t.direction, t.level, t.pair_direction, t.pair_level): t.successes / t.episodes for t in sweep.trials}
    # level 0 is the nominal model for every direction: common random numbers give equal rows
    assert rate[("latency", 0.0, None, None)] == rate[("gear", 0.0, None, None)] == 1.0
    assert rate[("latency", 1.5, None, None)] == 0.0  # two steps of latency
    assert sweep.ranking[0] == "latency"
    effects = sim.pair_effects(sweep.table)
    assert len(effects) == 4
    row = effects[(effects.level == 1.5) & (effects.pair_level == 1.0)].iloc[0]
    assert row.effect_a == -1.0  # latency 2 alone: every episode fails
    assert row.synergy == pytest.approx(row.effect_pair - row.effect_a - row.effect_b)
    # the pair condition is the model with both directions moved: an independent run on the
    # sweep's episode keys gives the same outcomes (half the gear with two steps of latency)
    space = pendulum_space()
    direct = sim.simulate_task(None, pendulum_task(), nominal(), np.repeat(space.values({"latency": 2, "gear": 0.5})[None], 8, 0),
                               space=space, keys=jax.random.split(jax.random.key(0), 8))
    assert float(direct.success.mean()) == rate[("latency", 1.5, "gear", 1.0)] == 1.0 + row.effect_pair


def test_sweep_input_errors():
    task, space = pendulum_task(), pendulum_space()
    with pytest.raises(InputError, match="space"):
        sim.sensitivity_sweep(jax.random.key(0), task, nominal())
    with pytest.raises(InputError, match="directions"):
        sim.sensitivity_sweep(jax.random.key(0), task, nominal(), space, directions=["mass"])
    with pytest.raises(InputError, match="space"):
        sim.sensitivity_sweep(jax.random.key(0), sim.make_world(), nominal(), space)


def test_paired_eval_on_a_task_is_matched():
    task, space = pendulum_task(), pendulum_space()
    same = sim.paired_eval(jax.random.key(0), task, nominal(), nominal(), 8, candidate_name="same")
    assert same.delta == 0.0 and same.ci_low == same.ci_high == 0.0
    idle = sim.Policy.linear(jnp.zeros((1, 4)), jnp.zeros(1), name="idle")
    worse = sim.paired_eval(jax.random.key(0), task, nominal(), idle, 8, candidate_name="idle")
    assert worse.delta == -1.0 and isinstance(worse.record, PairedEval)
    assert worse.record.successes_control == 8 and worse.record.successes_treated == 0
    assert worse.hours == 0.0
    # under a hidden "real" model with two steps of latency both arms fail
    real = space.point({"latency": 2})
    lagged = sim.paired_eval(jax.random.key(0), task, nominal(), idle, 8, candidate_name="idle", dist=real)
    assert lagged.successes_current == 0 and lagged.unsafe >= 8
    with pytest.raises(InputError, match="dist"):
        sim.paired_eval(jax.random.key(0), sim.make_world(), nominal(), idle, 8, candidate_name="x", dist=real)


class LabRobot:
    """A lab's own robot: no RealRobot subclass, only `run` and `hours_used`."""

    def __init__(self):
        self.hours_used = 0.0
        self.calls = []

    def run(self, key, policy, episodes):
        good = getattr(policy, "name", None) != "bad"
        self.calls.append((policy, episodes))
        self.hours_used += 0.5
        stats = SimpleNamespace(success=np.full(episodes, good), unsafe=np.full(episodes, not good))
        return SimpleNamespace(stats=stats, hours=0.5, unsafe=int(not good) * episodes)


def test_paired_eval_on_a_duck_typed_robot():
    robot = LabRobot()
    assert sim.is_robot(robot) and not isinstance(robot, sim.RealRobot)
    good = sim.Policy.linear(jnp.zeros((1, 4)), jnp.zeros(1), name="good")
    bad = sim.Policy.linear(jnp.zeros((1, 4)), jnp.zeros(1), name="bad")
    r = sim.paired_eval(jax.random.key(0), robot, good, bad, 5, candidate_name="bad_fix")
    assert r.delta == -1.0 and r.hours == 1.0 and r.unsafe == 5 and robot.hours_used == 1.0
    assert r.record.policy == "good" and r.record.candidate == "bad_fix"
    assert [c[0] for c in robot.calls] == [good, bad]  # the policies reach the robot as given
    with pytest.raises(InputError, match="target"):
        sim.paired_eval(jax.random.key(0), object(), good, bad, 5, candidate_name="x")
