"""Per-candidate scores of DESIGN.md §2: μ, C_λ, U0, MV, CVU accounting, the article's toy."""

import math

import numpy as np
import pytest

import bayes_s2r as bs
from bayes_s2r.belief import NoOutcome


def test_toy_mv_and_u0_rank_differently(toy):
    belief, cands, budget, weights = toy
    d = bs.decide(belief, cands, budget, weights, cvu_samples=32)
    t = d.table
    np.testing.assert_allclose(t["C_lambda"], [0.01, 0.05, 0.06], atol=1e-12)
    np.testing.assert_allclose(t["U0"], t["mu_dJ"] - t["C_lambda"], atol=1e-12)
    np.testing.assert_allclose(t["MV"], t["mu_dJ"] / t["C_lambda"], atol=1e-12)
    assert t["MV"].idxmax() == "si_refit"  # efficiency reading
    assert t["U0"].idxmax() == "dr_wide"  # the rule
    np.testing.assert_allclose(t["Q"], t["U0"] + t["CVU"], atol=1e-12)
    assert d.best == t["Q"][t["feasible"]].idxmax() == "dr_wide"
    assert d.stop_reason is None


def test_toy_two_candidates_fall_to_economic_stop(jit_mode):
    names = ["a", "b"]
    belief = bs.GainBelief.from_gaussian(names, [0.02, 0.01], [0.005, 0.005], num_draws=2000)
    cands = [bs.Candidate("a", "adaptation", "data", cost=bs.Cost(compute=0.5)),  # C = 0.05 > μ
             bs.Candidate("b", "adaptation", "data", cost=bs.Cost(eng=0.03))]  # C = 0.03 > μ
    d = bs.decide(belief, cands, bs.Budget(5, 50, 20), bs.ResourceWeights(3.0, 0.1, 1.0), cvu_samples=32)
    assert (d.table["MV"] > 0).all() and (d.table["U0"] < 0).all()
    assert d.best is None and d.stop_reason == "economic"
    assert (d.table["Q"] <= 0).all()
    assert d.p_best["(stop)"] > 0.99 and math.isclose(d.p_best.sum(), 1.0)


def _last_step_problem():
    """Two non-repeatable adaptations worth running, a budget that affords one of them."""
    names = ["a", "b"]
    belief = bs.GainBelief.from_gaussian(names, [0.10, 0.06], [0.02, 0.02], num_draws=4000)
    cands = [bs.Candidate(n, "adaptation", "data", cost=bs.Cost(real=1.0), repeatable=False) for n in names]
    return belief, cands, bs.Budget(real=1.5, compute=1, eng=1), bs.ResourceWeights(real=0.02)


def test_last_affordable_step_is_taken_not_deferred(jit_mode):
    # After either step nothing is affordable, so G0(s^{m,Y}) = 0 and CVU(m) = −G0(s^∅):
    # every Q is ≤ 0. The stop scores −β·G0(s^∅), so the better step is still taken.
    belief, cands, budget, weights = _last_step_problem()
    d = bs.decide(belief, cands, budget, weights, cvu_samples=32)
    t = d.table
    assert (t["U0"] > 0).all() and (t["Q"] <= 1e-9).all()
    np.testing.assert_allclose(t["CVU"], -d.g0_null, atol=1e-9)
    assert d.stop_Q == pytest.approx(-d.g0_null) and d.stop_Q < t["Q"].max()
    assert d.best == "a" and d.stop_reason is None
    assert d.p_best["a"] > 0.9 and d.p_best.get("(stop)", 0.0) < 0.01
    assert math.isclose(dict(d.to_record(round=0).extra)["stop_Q"], d.stop_Q)
    # the chosen step stays chosen for any real-robot price below its gain (U0 > 0)
    real = d.weight_robustness.set_index("resource").loc["real"]
    assert real["low"] == 0.0 and 0.05 < real["high"] < 0.15


def test_stop_scores_zero_at_the_terminal_round_and_without_value():
    belief, cands, budget, weights = _last_step_problem()
    d = bs.decide(belief, cands, budget, weights, cvu_samples=32, terminal=True)
    assert d.stop_Q == 0.0 and d.best == "a"
    worthless = bs.GainBelief.from_gaussian(["a", "b"], [-0.05, -0.02], [0.002, 0.002], num_draws=4000)
    d = bs.decide(worthless, cands, budget, weights, cvu_samples=32)
    assert d.g0_null == 0.0 and d.stop_Q == 0.0
    assert d.best is None and d.stop_reason == "economic"


def test_adopt_values_the_stop_branch_with_the_exact_positive_part():
    # A policy at J = 0.98: every gain is capped by the headroom 0.02, with a long tail below
    # 0. E[max(ΔJ, 0)] over the draws is below the price; a Gaussian with the same moments
    # puts several times more above 0. The stop branch must use the draws, as U0 does:
    # otherwise the stop scores below 0 and a cheap diagnosis with no value gets run.
    rng = np.random.default_rng(0)
    draws = np.clip(rng.normal(-0.1, 0.3, size=(4000, 2)), -0.98, 0.02)  # J = 0.98 cannot lose more
    belief = bs.GainBelief.from_draws(["a", "b"], draws)
    out = bs.BinomialPairedOutcome(episodes=48)
    cands = [bs.Candidate(n, "adaptation", "data", cost=bs.Cost(real=0.75), outcome=out) for n in ("a", "b")]
    cands.append(bs.Candidate("pilot_a", "diagnosis", "data", observes="a", cost=bs.Cost(real=0.2),
                              outcome=bs.BinomialPairedOutcome(episodes=12)))
    kw = {"budget": bs.Budget(real=3, compute=1, eng=1), "weights": bs.ResourceWeights(real=0.02),
          "cvu_samples": 128, "current_J": 0.98, "utility": "adopt"}
    from bayes_s2r.decision.utility import positive_part

    exact = np.maximum(draws, 0.0).mean(0)
    moment = positive_part(draws.mean(0), draws.std(0))
    assert (exact < 0.015).all() and (moment > 3 * exact).all() and (moment > 0.015).all()  # not vacuous
    d = bs.decide(belief, cands, **kw)
    assert (d.table["U0"] < 0).all()
    assert d.g0_null == 0.0 and d.stop_Q == 0.0
    assert d.best is None and d.stop_reason == "economic"
    # and where a gain is worth its price, G0(s^∅) is the table's best U0
    rich = bs.GainBelief.from_draws(["a", "b"], np.minimum(rng.normal(0.05, 0.1, size=(4000, 2)), 0.3))
    d = bs.decide(rich, cands, **kw)
    assert d.g0_null == pytest.approx(d.table.loc[["a", "b"], "U0"].max(), abs=1e-5)


def test_diagnosis_and_model_update_gain_exactly_zero(toy):
    belief, cands, budget, weights = toy
    extra = [bs.Candidate("probe", "diagnosis", "data", observes="dr_wide", cost=bs.Cost(compute=0.2),
                          outcome=bs.GaussianOutcome(0.02)),
             bs.Candidate("refresh", "model_update", "model", cost=bs.Cost(eng=0.0))]
    d = bs.decide(belief, [*cands, *extra], budget, weights, cvu_samples=32)
    t = d.table
    assert t.loc["probe", "mu_dJ"] == 0.0 and t.loc["refresh", "mu_dJ"] == 0.0
    assert math.isnan(t.loc["probe", "MV"]) and "role diagnosis" in t.loc["probe", "mv_reason"]
    assert math.isnan(t.loc["refresh", "MV"]) and "model_update" in t.loc["refresh", "mv_reason"]
    assert t.loc["refresh", "CVU"] == pytest.approx(0.0, abs=1e-6)  # observes nothing


def test_zero_priced_cost_has_undefined_mv():
    belief = bs.GainBelief.from_gaussian(["free"], [0.05], [0.01], num_draws=2000)
    d = bs.decide(belief, [bs.Candidate("free", "adaptation", "data")], bs.Budget(1, 1, 1),
                  bs.ResourceWeights(), cvu_samples=32)
    assert math.isnan(d.table.loc["free", "MV"]) and "C_λ = 0" in d.table.loc["free", "mv_reason"]


def test_adaptation_missing_from_belief_is_an_input_error(toy):
    belief, cands, budget, weights = toy
    extra = bs.Candidate("new_method", "adaptation", "data")
    with pytest.raises(bs.InputError, match="new_method"):
        bs.decide(belief, [*cands, extra], budget, weights, cvu_samples=32)


def test_no_outcome_carries_no_information(jit_mode):
    """A diagnosis whose outcome shows nothing: same belief, free: CVU 0 exactly (up to float32)."""
    belief = bs.GainBelief.from_gaussian(["x", "y"], [0.05, 0.04], [0.03, 0.03], num_draws=2000)
    cands = [bs.Candidate("x", "adaptation", "data", cost=bs.Cost(compute=0.1)),
             bs.Candidate("y", "adaptation", "data", cost=bs.Cost(compute=0.1)),
             bs.Candidate("look", "diagnosis", "data", observes="x", outcome=NoOutcome())]
    d = bs.decide(belief, cands, bs.Budget(1, 10, 1), bs.ResourceWeights(), cvu_samples=32)
    assert d.table.loc["look", "CVU"] == pytest.approx(0.0, abs=1e-6)
    assert d.table.loc["look", "cvu_se"] == pytest.approx(0.0, abs=1e-7)


def test_cost_is_counted_once(jit_mode):
    """Zero information, no transition effect: CVU = G0 at the deducted, re-priced budget − G0 now."""
    names = ["big", "small"]
    belief = bs.GainBelief.from_gaussian(names, [0.30, 0.12], [0.01, 0.01], num_draws=2000)
    cands = [bs.Candidate("big", "adaptation", "data", cost=bs.Cost(compute=3.0, eng=1.0)),
             bs.Candidate("small", "adaptation", "data", cost=bs.Cost(compute=1.0), repeatable=False)]
    budget, ref = bs.Budget(0, 8.0, 4.0), bs.Budget(0, 10.0, 5.0)
    weights = bs.ResourceWeights(3.0, 0.02, 0.05, scarcity=1.0)
    d = bs.decide(belief, cands, budget, weights, reference=ref, cvu_samples=32,
                  transition=bs.NoTransition())
    mu = belief.draws.mean(0)
    cost = np.array([c.cost.as_array() for c in cands])
    g0_now = max(0.0, *(mu - cost @ weights.at(budget, ref)))
    for i, c in enumerate(cands):
        after = budget - c.cost
        lam = weights.at(after, ref)
        u_next = [mu[k] - cost[k] @ lam for k in range(2)
                  if after.covers(cands[k].cost) and (k != i or c.repeatable)]
        expected = max([0.0] + u_next) - g0_now
        assert d.table.loc[c.name, "CVU"] == pytest.approx(expected, abs=2e-6)
        # the candidate's own cost appears in U0 only
        assert d.table.loc[c.name, "U0"] == pytest.approx(mu[i] - cost[i] @ weights.at(budget, ref), abs=1e-12)
    np.testing.assert_allclose(d.lambda_.to_numpy(), weights.at(budget, ref))


def test_weight_changes_reprice_through_resource_weights(toy):
    belief, cands, budget, weights = toy
    ref = bs.Budget(10, 100, 40)
    for w in (weights, weights.replace(real=6.0), weights.replace(scarcity=2.0)):
        d = bs.decide(belief, cands, budget, w, reference=ref, terminal=True)
        lam = w.at(budget, ref)
        np.testing.assert_allclose(d.table["C_lambda"], [c.cost.as_array() @ lam for c in cands], atol=1e-12)
        np.testing.assert_allclose(d.table["Q"], d.table["U0"], atol=1e-12)  # terminal: CVU = 0


def test_same_seed_same_answer_and_seed_matters(toy):
    belief, cands, budget, weights = toy
    cands = [*cands, bs.Candidate("probe", "diagnosis", "data", observes="si_refit",
                                  outcome=bs.GaussianOutcome(0.01))]
    a = bs.decide(belief, cands, budget, weights, cvu_samples=32, seed=3)
    b = bs.decide(belief, cands, budget, weights, cvu_samples=32, seed=3)
    c = bs.decide(belief, cands, budget, weights, cvu_samples=32, seed=4)
    np.testing.assert_array_equal(a.table["CVU"], b.table["CVU"])
    assert not np.array_equal(a.table["CVU"].to_numpy(), c.table["CVU"].to_numpy())


def test_exhausted_resource_prices_only_the_candidates_that_need_it():
    # scarcity pricing makes λ_real infinite at real = 0; a sim-only candidate is unaffected
    belief = bs.GainBelief.from_gaussian(["dr", "ft"], [0.1, 0.2], [0.05, 0.05], num_draws=1000)
    cands = [bs.Candidate("dr", "adaptation", "data", cost=bs.Cost(compute=0.2)),
             bs.Candidate("ft", "adaptation", "optimization", cost=bs.Cost(real=1.0))]
    weights, ref = bs.ResourceWeights(scarcity=1.0), bs.Budget(real=4, compute=10, eng=10)
    for real in (0.0, 1.0):  # exhausted now, or exhausted by running ft (in the look-ahead)
        d = bs.decide(belief, cands, bs.Budget(real=real, compute=5, eng=5), weights, reference=ref,
                      cvu_samples=32)
        assert d.best == "dr"
        assert np.isfinite(d.table.loc["dr", ["U0", "CVU", "Q"]].astype(float)).all()
        assert np.isfinite(d.weight_robustness["low"]).all()
    lam_compute = weights.at(bs.Budget(real=1.0, compute=5, eng=5), ref)[1]
    assert d.table.loc["dr", "U0"] == pytest.approx(belief.mean()["dr"] - 0.2 * lam_compute)
