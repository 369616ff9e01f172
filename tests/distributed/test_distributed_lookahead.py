"""The look-ahead with posterior draws split over devices equals the single-device one."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bayes_s2r.decision.lookahead import lookahead, lookahead_arrays
from bayes_s2r.decision.sharded import draw_mesh, shard_lookahead_arrays, sharded_lookahead
from bayes_s2r.decision.transition import resolve_transition
from bayes_s2r.distributed import BATCH_AXIS
from bayes_s2r.errors import InputError


def test_sharded_lookahead_equals_single_device_up_to_reduction_order(lookahead_problem):
    problem, config = lookahead_problem
    want = lookahead(problem, config, resolve_transition(None))
    got = sharded_lookahead(problem, config, devices=4)
    assert np.any(np.abs(want.cvu) > 1e-4)  # a non-trivial look-ahead
    for name in ("cvu", "cvu_se", "ess", "ess_min", "collapsed"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-4, atol=1e-6,
                                   err_msg=name)
    assert got.g0_null == pytest.approx(want.g0_null, rel=1e-6, abs=1e-7)


def test_draws_are_split_over_the_devices_and_the_rest_replicated(lookahead_problem):
    problem, config = lookahead_problem
    arrays = shard_lookahead_arrays(lookahead_arrays(problem, config.bucket), devices=4)
    s = problem.draws.shape[0]
    assert arrays.gains.sharding.spec == jax.sharding.PartitionSpec(BATCH_AXIS, None)
    assert arrays.observed.sharding.spec == jax.sharding.PartitionSpec(None, BATCH_AXIS)
    assert {sh.data.shape[0] for sh in arrays.gains.addressable_shards} == {s // 4}
    assert arrays.cost_next.sharding.is_fully_replicated


@pytest.mark.parametrize("draws,devices,size", [(4000, 4, 4), (4002, 4, 3), (1001, 4, 1), (10, 2, 2)])
def test_draw_mesh_uses_the_largest_device_count_dividing_the_draws(draws, devices, size):
    assert draw_mesh(draws, devices).size == size


def test_sharded_lookahead_terminal_and_bad_input(lookahead_problem):
    problem, config = lookahead_problem
    out = sharded_lookahead(problem, config._replace(terminal=True), devices=4)
    assert np.all(out.cvu == 0.0)
    with pytest.raises(InputError, match="config"):
        sharded_lookahead(problem, {"cvu_samples": 8})
    with pytest.raises(InputError, match="problem"):
        sharded_lookahead("problem", config)
    with pytest.raises(InputError, match="num_draws"):
        draw_mesh(0)


def test_the_two_step_look_ahead_splits_over_devices_too(lookahead_problem):
    import bayes_s2r as bs
    from bayes_s2r.decision.problem import build_problem

    problem, config = lookahead_problem
    config = config._replace(cvu_samples=16, lookahead_depth=2, inner_samples=4, inner_draws=64)
    belief = bs.GainBelief.from_draws(problem.columns, problem.draws)
    cands = [bs.Candidate(f"a{i}", "adaptation", "data", cost=bs.Cost(compute=0.1 * (i + 1)),
                          outcome=bs.BinomialPairedOutcome(episodes=50)) for i in range(5)]
    two = build_problem(belief, cands, bs.Budget(1, 10, 10), bs.ResourceWeights(), risk=None, config=config,
                        reference=None, current_J=None, done=())
    want = lookahead(two, config, resolve_transition(None))
    got = sharded_lookahead(two, config, devices=4)
    one_step = lookahead(two, config._replace(lookahead_depth=1), resolve_transition(None))
    assert np.abs(want.cvu - one_step.cvu).max() > 1e-4  # the second step changes the values
    np.testing.assert_allclose(got.cvu, want.cvu, rtol=1e-4, atol=1e-5)
    assert got.g0_null == pytest.approx(want.g0_null, rel=1e-5, abs=1e-6)
