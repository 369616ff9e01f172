"""The exact DP ceiling of `benchmarks/dp_ceiling.py`: brute force, Weitzman, and the rule below it."""

from __future__ import annotations

import warnings

import dp_ceiling as dc  # benchmarks/ (tests/conftest.py puts it on the path)
import numpy as np
import pytest


def _tiny(seed: int, *, noisy: bool, coupled: bool = False, budget: bool = False, stack: bool = False) -> dc.GridProblem:
    """Two candidates, two decisions, random marginals over the five levels."""
    rng = np.random.default_rng(seed)
    marg = rng.dirichlet(np.ones(len(dc.LEVELS)), size=2)
    pos = marg @ np.maximum(dc.LEVELS * dc.H, 0.0)
    cost = rng.uniform(0.1, 0.8, 2) * np.maximum(pos, 0.01)
    a = rng.uniform(0.05, 0.2)
    noise = (np.array([-3, -1, 1, 3]), np.array([a, 0.5 - a, 0.5 - a, a])) if noisy else None
    return dc.grid_problem(marg, cost, noise=noise, rounds=2,
                           coupling=(0, 1, rng.uniform(0.3, 2.0)) if coupled else None,
                           hours=[1.0, 2.0] if budget else None, budget=2.0 if budget else float("inf"),
                           stack=stack, name=f"tiny/{seed}")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("noisy,coupled,stack", [(False, False, False), (True, True, False), (True, True, True)])
def test_dp_equals_brute_force_over_all_deterministic_policies(seed, noisy, coupled, stack):
    p = _tiny(seed, noisy=noisy, coupled=coupled, stack=stack)
    values = dc.policy_values(p)
    assert len(values) > 3  # stop, and several policies per first try
    assert dc.dp_value(p) == pytest.approx(max(values), abs=1e-12)


def test_brute_force_sees_the_budget():
    p = _tiny(5, noisy=True, coupled=True, budget=True)  # hours 1 and 2, budget 2: one try only
    assert all(len(c.tried) == 1 and not dc.options(p, c) for k in dc.options(p, dc.root(p))
               for _, c in dc.outcomes(p, dc.root(p), k))
    assert dc.dp_value(p) == pytest.approx(max(dc.policy_values(p)), abs=1e-12)


def test_outcomes_are_a_distribution_and_bayes_posteriors():
    p = dc.make_problem("noisy", 3)
    node = dc.root(p)
    for k in range(p.k):
        outs = dc.outcomes(p, node, k)
        assert sum(pr for pr, _ in outs) == pytest.approx(1.0, abs=1e-12)
        # the posteriors average back to the prior (law of total probability)
        mix = sum(pr * c.w for pr, c in outs)
        np.testing.assert_allclose(mix, p.prior, atol=1e-12)
        # a positive evaluation keeps the candidate; a negative one keeps the incumbent
        assert all((c.inc == k) == (c.history[-1][1] > 0) for _, c in outs)


@pytest.mark.parametrize("seed", range(12))
def test_dp_equals_weitzman_index_value_with_exact_independent_tries(seed):
    p = dc.make_problem("pandora", seed)
    assert p.exact and p.independent
    assert dc.dp_value(p) == pytest.approx(dc.weitzman_value(p), abs=1e-12)


def test_one_box_value_by_hand():
    # X = +0.1 w.p. 0.3, −0.1 w.p. 0.7; cost 0.01: try once, value 0.3·0.1 − 0.01 = 0.02
    marg = np.array([[0.7, 0, 0, 0, 0.3]])
    p = dc.grid_problem(marg, [0.01])
    assert dc.dp_value(p) == pytest.approx(0.02, abs=1e-12)
    assert dc.reservation_value(np.array([-0.1, 0.1]), np.array([0.7, 0.3]), 0.01) == pytest.approx(0.1 - 0.01 / 0.3)
    assert dc.dp_value(dc.grid_problem(marg, [0.04])) == 0.0  # worth less than its price: stop


def test_weitzman_is_not_optimal_once_evaluations_are_noisy_or_budgets_bind():
    """The check above can fail: outside its setting the index policy falls below the DP."""
    gaps = [dc.dp_value(p) - dc.weitzman_value(p)
            for p in (dc.make_problem(v, s) for v in ("noisy", "noisy_budget") for s in range(8))]
    assert min(gaps) >= -1e-12
    assert max(gaps) > 1e-4


def test_node_draws_quantize_the_posterior():
    p = dc.make_problem("noisy", 1)
    node = dc.outcomes(p, dc.root(p), 0)[5][1]
    draws = dc.node_draws(p, node, 4000, seed=0)
    assert node.inc == 0  # an outcome that kept m0: the columns are gains over it
    exact = node.w @ (p.points - p.points[:, [0]]) * dc.UNIT
    np.testing.assert_allclose(draws.mean(0), exact, atol=2e-3)
    assert draws.shape == (4000, p.k) and np.all(draws[:, 0] == 0.0)


def test_library_rule_value_is_at_most_the_dp_value():
    warnings.filterwarnings("ignore")
    p = _tiny(2, noisy=True, coupled=True)
    lib = dc.LibraryRule(num_draws=1000, cvu_samples=32, seed=0)
    dp = dc.dp_value(p)
    for rule in ("q_cvu", "pandora"):
        v = dc.policy_value(p, lib.rule(rule))
        assert v <= dp + 1e-12
        assert v >= 0.5 * dp  # the rule is not trivially bad here
    assert lib.calls >= 2
    # a rule that always stops is worth 0; one that tries m0 and stops is worth its try
    assert dc.policy_value(p, lambda p, n: None) == 0.0
    one = dc.policy_value(p, lambda p, n: 0 if not n.tried else None)
    assert one == pytest.approx(sum(pr * dc.stop_value(p, c) for pr, c in dc.outcomes(p, dc.root(p), 0)) - p.cost[0])


def test_stacking_adds_the_kept_gains():
    # two independent exact tries that add up: each is worth E[max(X, 0)] − c on its own
    marg = np.array([[0.5, 0, 0, 0, 0.5], [0.2, 0, 0, 0.8, 0]])
    p = dc.grid_problem(marg, [0.01, 0.01], stack=True)
    alone = [0.5 * 0.1 - 0.01, 0.8 * 0.05 - 0.01]
    assert dc.dp_value(p) == pytest.approx(sum(alone), abs=1e-12)
    both = dc.policy_value(p, lambda p, n: len(n.tried) if len(n.tried) < 2 else None)
    assert both == pytest.approx(sum(alone), abs=1e-12)
    # as alternatives the second try is worth less: the best of the two is kept, not both
    q = dc.grid_problem(marg, [0.01, 0.01])
    assert dc.dp_value(q) < dc.dp_value(p) - 1e-3
