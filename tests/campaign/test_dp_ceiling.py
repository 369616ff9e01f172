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


# --------------------------------------------------------------------------- full information


def test_oracle_value_by_hand():
    # one exact try: X = +0.1 w.p. 0.3, −0.1 w.p. 0.7, cost 0.01; knowing X the oracle runs it
    # only when X = +0.1: 0.3·(0.1 − 0.01) = 0.027 (the Bayes-optimal policy gets 0.02)
    p = dc.grid_problem(np.array([[0.7, 0, 0, 0, 0.3]]), [0.01])
    assert dc.oracle_value(p) == pytest.approx(0.027, abs=1e-12)
    assert dc.clairvoyant_value(p) == pytest.approx(0.027, abs=1e-12)
    assert dc.dp_value(p) == pytest.approx(0.02, abs=1e-12)
    # a noisy evaluation (offsets ±0.5, ±1.5 grid steps w.p. 0.4, 0.1) still decides adoption:
    # X = +0.05 (2 units) is rejected only when ε = −3 units (w.p. 0.1): 0.5·(0.9·0.05 − 0.01)
    noise = (np.array([-3, -1, 1, 3]), np.array([0.1, 0.4, 0.4, 0.1]))
    q = dc.grid_problem(np.array([[0, 0.5, 0, 0.5, 0]]), [0.01], noise=noise)
    assert dc.oracle_value(q) == pytest.approx(0.5 * (0.9 * 0.05 - 0.01), abs=1e-12)


def test_oracle_pays_for_what_it_runs_and_moves_on_after_a_rejection():
    # two candidates both worth exactly +0.05, costs 0.01 and 0.02, the noise above: the oracle
    # runs m0 (0.04 > 0.03); kept w.p. 0.9 (then m1 adds nothing over it: stop), else it runs m1
    noise = (np.array([-3, -1, 1, 3]), np.array([0.1, 0.4, 0.4, 0.1]))
    marg = np.array([[0, 0, 0, 1.0, 0], [0, 0, 0, 1.0, 0]])
    p = dc.grid_problem(marg, [0.01, 0.02], noise=noise)
    by_hand = 0.9 * (0.05 - 0.01) + 0.1 * (0.9 * (0.05 - 0.03) + 0.1 * (-0.03))
    assert dc.oracle_value(p) == pytest.approx(by_hand, abs=1e-12)
    # the gains are known already: the DP, the clairvoyant and the oracle agree
    assert dc.dp_value(p) == pytest.approx(by_hand, abs=1e-12)
    assert dc.clairvoyant_value(p) == pytest.approx(by_hand, abs=1e-12)
    # with one decision it cannot move on: 0.9·0.05 − 0.01
    one = dc.grid_problem(marg, [0.01, 0.02], noise=noise, rounds=1)
    assert dc.oracle_value(one) == pytest.approx(0.9 * 0.05 - 0.01, abs=1e-12)


def _check_ceiling(p: dc.GridProblem) -> dict:
    v = dc.ceiling(p)
    assert v["oracle"] >= v["dp"] - 1e-12
    assert v["clairvoyant"] >= max(v["dp"], v["oracle"]) - 1e-12
    assert all(v[b] <= v["dp"] + 1e-12 for b in dc.BASELINES)
    return v


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("noisy,coupled,budget,stack", [(False, False, False, False), (True, True, False, False),
                                                        (True, True, True, False), (True, True, False, True)])
def test_full_information_is_above_the_dp_and_the_dp_above_the_baselines(seed, noisy, coupled, budget, stack):
    v = _check_ceiling(_tiny(seed, noisy=noisy, coupled=coupled, budget=budget, stack=stack))
    if not noisy:  # exact evaluation: one try of the best x_k − c_k is the best with x known
        assert v["oracle"] == pytest.approx(v["clairvoyant"], abs=1e-12)
        assert v["index_prior"] == pytest.approx(v["dp"], abs=1e-12)


@pytest.mark.parametrize("variant", ["pandora", "noisy_budget"])
def test_full_information_on_the_benchmark_problems(variant):
    _check_ceiling(dc.make_problem(variant, 0))


def test_ceiling_only_checks_and_completes_a_results_file(tmp_path):
    import json

    import bench_dp_ceiling as bench

    dp = [float(dc.dp_value(dc.make_problem("pandora", s))) for s in range(2)]
    rows = [{"problem": f"pandora/{s}", "dp": d, "index": d, "pandora": d} for s, d in enumerate(dp)]
    data = {"settings": {"first_seed": 0, "problems": 2, "variants": ["pandora"]}, "seconds": {},
            "results": {"pandora": {"dp_mean": float(np.mean(dp)), "index_mean": float(np.mean(dp)),
                                    "per_problem": rows}}}
    path = tmp_path / "dp.json"
    path.write_text(json.dumps(data))
    out = bench.main(["--ceiling-only", "--out", str(path)])
    c = out["results"]["pandora"]["ceiling"]
    assert c["dp_mean"] == pytest.approx(np.mean(dp), abs=1e-12)
    assert c["oracle_mean"] >= c["dp_mean"] and c["best_baseline"] in c["baseline_means"]
    assert c["dp_gap_closed"] == pytest.approx(0.0, abs=1e-9)  # Pandora: the index is optimal
    assert "oracle" in json.loads(path.read_text())["results"]["pandora"]["per_problem"][0]
    rows[1]["dp"] += 1e-6  # a stored value that the DP does not reproduce is refused
    path.write_text(json.dumps(data))
    with pytest.raises(AssertionError):
        bench.main(["--ceiling-only", "--out", str(path)])
