"""benchmarks/bench_belief_structure.py: the one-fix truth, beliefs replayed on the same
history, and a small run whose exact values order as the truths say."""

from __future__ import annotations

import bench_belief_structure as bench  # benchmarks/ (tests/conftest.py puts it on the path)
import dp_ceiling as dc
import numpy as np
import pytest


@pytest.mark.parametrize("exact", [False, True])
def test_at_most_one_candidate_is_the_fix(exact):
    p = bench.one_fix_problem(3, exact=exact)
    levels = p.points // 2
    assert p.prior.sum() == pytest.approx(1.0) and (p.prior > 0).all()
    assert ((levels == dc.LEVELS[-1]).sum(1) <= 1).all() and (levels > dc.LEVELS[0]).all()
    assert p.exact == exact and (p.cost > 0).all()
    # the siblings are anti-correlated: one of them being the fix lowers the other's chance
    x0, x1 = levels[:, 0] - p.prior @ levels[:, 0], levels[:, 1] - p.prior @ levels[:, 1]
    assert p.prior @ (x0 * x1) < 0


def test_a_belief_replays_the_history_and_the_true_one_is_the_bayes_posterior():
    p = bench.one_fix_problem(0)
    node = dc.root(p)
    for k in (1, 0):  # follow one path of outcomes
        _, node = max(dc.outcomes(p, node, k), key=lambda pc: pc[0])
    again = bench.replay(p, node.history)
    np.testing.assert_allclose(again.w, node.w)
    assert again.inc == node.inc and again.tried == node.tried
    for belief in ("independent", "coupled@1"):  # the same belief of each candidate alone
        q = bench.belief_problem(p, belief)
        np.testing.assert_allclose(bench.grid_marginals(q), bench.grid_marginals(p), atol=1e-5)
        assert bench.replay(q, node.history).tried == node.tried
    # coupled: the siblings' levels move together, where the truth has them apart
    q = bench.belief_problem(p, "coupled@1")
    i0, i1 = q.points[:, 0] // 2, q.points[:, 1] // 2
    assert q.prior @ ((i0 - q.prior @ i0) * (i1 - q.prior @ i1)) > 0


def test_a_small_run_prices_each_wrong_belief():
    out = bench.main(["--problems", "3", "--truths", "pandora", "one_fix", "--kappas", "1"])
    pandora = out["results"]["pandora"]["rules"]["index"]
    # Weitzman's case: the true belief is independent, so the index under it is the optimum
    assert pandora["true"]["share_of_dp"] == pytest.approx(1.0)
    assert pandora["independent"]["minus_true_belief"]["mean"] == pytest.approx(0.0, abs=1e-12)
    for truth in ("pandora", "one_fix"):
        for rule in ("index", "myopic"):
            entry = out["results"][truth]["rules"][rule]
            assert set(entry) == {"true", "independent", "coupled@1"}
            # the DP is the best any policy does, whatever belief it decides from
            assert all(e["share_of_dp"] <= 1 + 1e-9 for e in entry.values())
    # siblings pulled together cost something when they are not linked
    assert out["results"]["one_fix"]["rules"]["index"]["coupled@1"]["minus_true_belief"]["mean"] < 0
