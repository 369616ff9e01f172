"""Paired evaluation on matched seeds; the interval against scipy's paired t test."""

import jax
import numpy as np
import pytest
from scipy import stats


def test_paired_interval_matches_scipy(sim):
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2, 40), rng.integers(0, 2, 40)
    mean, lo, hi = sim.paired_interval(a, b, 0.9)
    ci = stats.ttest_rel(a, b).confidence_interval(0.9)
    assert mean == pytest.approx(np.mean(a - b))
    assert (lo, hi) == pytest.approx((ci.low, ci.high))


def test_same_policy_gives_zero_delta_on_matched_seeds(sim, nominal, compiled):
    robot = sim.load_card("real_combo")
    r = sim.paired_eval(jax.random.key(0), robot, nominal, nominal, 32, candidate_name="same")
    assert r.delta == 0.0 and r.successes_candidate == r.successes_current


def test_paired_eval_on_robot_charges_both_arms(sim, nominal, compiled):
    robot = sim.RealRobot("real_latency")
    slow = sim.LinearPolicy(nominal.weights * 0.5, nominal.bias)
    r = sim.paired_eval(jax.random.key(1), robot, nominal, slow, 16, candidate_name="half_gain", round=2)
    assert r.hours == pytest.approx(robot.episode_hours(32)) == pytest.approx(robot.hours_used)
    rec = r.record
    assert (rec.candidate, rec.round, rec.episodes_treated, rec.matched) == ("half_gain", 2, 16, True)
    assert rec.delta_hat == pytest.approx(r.delta)
    assert r.ci_low <= r.delta <= r.ci_high
