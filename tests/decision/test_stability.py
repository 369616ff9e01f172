"""p_best, flip probability, weight robustness, utilities, objectives, text and ledger record."""

import json
import math

import numpy as np
import pytest

import bayes_s2r as bs
from bayes_s2r.evidence import DecisionRecord


def test_p_best_matches_an_independent_count(toy, jit_mode):
    belief, cands, budget, weights = toy
    d = bs.decide(belief, cands, budget, weights, cvu_samples=32)
    assert math.isclose(d.p_best.sum(), 1.0)
    t = d.table
    scores = belief.draws - t["C_lambda"].to_numpy() + t["CVU"].to_numpy()
    top = np.where(scores.max(1) > 0, np.array(belief.names)[scores.argmax(1)], "(stop)")
    for name, p in d.p_best.items():
        assert p == pytest.approx(np.mean(top == name), abs=1e-12)
    assert d.flip_probability == pytest.approx(1 - d.p_best[d.best])


def test_close_candidates_flip_often():
    belief = bs.GainBelief.from_gaussian(["a", "b"], [0.050, 0.049], [0.02, 0.02], num_draws=2000)
    cands = [bs.Candidate(n, "adaptation", "data") for n in "ab"]
    d = bs.decide(belief, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(), terminal=True)
    assert 0.3 < d.flip_probability < 0.7


def test_weight_robustness_interval_is_exact_for_held_cvu(toy):
    belief, cands, budget, weights = toy
    d = bs.decide(belief, cands, budget, weights, terminal=True)  # CVU = 0: Q exactly linear in λ
    rob = d.weight_robustness.set_index("resource")
    assert list(rob.index) == ["real", "compute", "eng"]
    for res in ("real", "compute"):
        lo, hi = rob.loc[res, "low"], rob.loc[res, "high"]
        assert lo <= rob.loc[res, "current"] <= hi
        for lam, stays in [(lo * 0.98 + hi * 0.02 if np.isfinite(hi) else lo * 1.02 + 1e-3, True),
                           (hi * 1.02 if np.isfinite(hi) else None, False), (lo * 0.98 if lo > 0 else None, False)]:
            if lam is None:
                continue
            w = weights.replace(**{res: lam})
            best = bs.decide(belief, cands, budget, w, terminal=True).best
            assert (best == d.best) == stays, (res, lam, best)
    assert rob.loc["compute", "high"] < math.inf  # dr_wide is compute-heavy: a finite interval


@pytest.mark.parametrize("utility", ["lcb", "cvar"])
def test_risk_averse_utilities_are_applied_everywhere(utility, jit_mode):
    names = ["steady", "gamble"]
    belief = bs.GainBelief.from_gaussian(names, [0.05, 0.07], [0.005, 0.06], num_draws=2000)
    cands = [bs.Candidate(n, "adaptation", "data") for n in names]
    mean = bs.decide(belief, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(), cvu_samples=32)
    risky = bs.decide(belief, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(), cvu_samples=32,
                      utility=utility, utility_level=0.1)
    assert mean.best == "gamble" and risky.best == "steady"
    assert risky.utility == utility and risky.table.attrs["utility"] == f"{utility}(0.1)"
    t = risky.table
    assert (t["gain"] < t["mu_dJ"]).all()
    np.testing.assert_allclose(t["U0"], t["gain"] - t["C_lambda"], atol=1e-12)
    assert f"utility={utility}(0.1)" in risky.text()


def test_adopt_utility_values_a_try_at_its_positive_part(jit_mode):
    from scipy import stats

    names = ["long_shot", "sure_loss"]
    mu, sd = np.array([-0.05, -0.05]), np.array([0.20, 0.001])
    belief = bs.GainBelief.from_gaussian(names, mu, sd, num_draws=4000, seed=3)
    cands = [bs.Candidate(n, "adaptation", "data", cost=bs.Cost(eng=1.0)) for n in names]
    weights = bs.ResourceWeights(real=0.0, compute=0.0, eng=0.01)
    mean = bs.decide(belief, cands, bs.Budget(1, 1, 10), weights, terminal=True)
    adopt = bs.decide(belief, cands, bs.Budget(1, 1, 10), weights, terminal=True, utility="adopt")
    # with the mean, both lose: stop; a try that is kept only if better is worth E[max(ΔJ, 0)]
    assert mean.best is None and mean.stop_reason == "economic"
    assert adopt.best == "long_shot" and adopt.utility == "adopt"
    t = adopt.table
    # exact over the draws; for these Gaussian beliefs, the closed form up to Monte Carlo error
    np.testing.assert_allclose(t["gain"], np.maximum(belief.draws, 0).mean(0), rtol=1e-12)
    m, s = t["mu_dJ"].to_numpy(), t["sd_dJ"].to_numpy()
    closed = m * stats.norm.cdf(m / s) + s * stats.norm.pdf(m / s)
    np.testing.assert_allclose(t["gain"], closed, atol=0.004)
    assert t.loc["long_shot", "gain"] == pytest.approx(0.0576, abs=0.006)
    assert t.loc["sure_loss", "gain"] < 1e-6
    np.testing.assert_allclose(t["U0"], t["gain"] - t["C_lambda"], atol=1e-12)
    assert "utility=adopt" in adopt.text()
    # the flip probability scores the draws by their positive part too
    assert adopt.p_best["long_shot"] > 0.3


def test_adopt_utility_sees_no_room_above_a_policy_at_the_ceiling():
    # ΔJ of a policy at J = 0.99 is at most 0.01, however uncertain its mean
    rng = np.random.default_rng(0)
    draws = np.clip(rng.normal(-0.15, 0.3, (4000, 1)), -0.99, 0.01)
    belief = bs.GainBelief.from_draws(["retrain"], draws)
    cands = [bs.Candidate("retrain", "adaptation", "data", cost=bs.Cost(eng=1.0))]
    d = bs.decide(belief, cands, bs.Budget(1, 1, 10), bs.ResourceWeights(real=0, compute=0, eng=0.02),
                  terminal=True, utility="adopt")
    assert d.table.loc["retrain", "gain"] <= 0.01
    assert d.best is None and d.stop_reason == "economic"


def test_adopt_lookahead_keeps_the_policy_after_a_failed_try():
    """A candidate already known to be harmful has no look-ahead value under "adopt": its
    evaluation would show no improvement, so the policy (and every other gain) stays."""
    names = ["harmful", "other"]
    belief = bs.GainBelief.from_gaussian(names, [-0.5, 0.02], [0.02, 0.2], num_draws=4000, seed=4)
    out = bs.BinomialPairedOutcome(episodes=48)
    cands = [bs.Candidate(n, "adaptation", "data", cost=bs.Cost(eng=1.0), outcome=out) for n in names]
    kw = {"cvu_samples": 256, "current_J": 0.6, "seed": 5}
    weights = bs.ResourceWeights(real=0.0, compute=0.0, eng=0.001)
    mean = bs.decide(belief, cands, bs.Budget(1, 1, 10), weights, **kw)
    adopt = bs.decide(belief, cands, bs.Budget(1, 1, 10), weights, utility="adopt", **kw)
    # under "mean" the look-ahead moves to the worse policy, whose headroom inflates the others
    assert mean.table.loc["harmful", "CVU"] > 0.01
    assert adopt.table.loc["harmful", "CVU"] <= 1e-3
    assert adopt.best == "other"


def _multi_belief():
    rng = np.random.default_rng(0)
    names = ["fast", "frugal", "fast@energy", "frugal@energy"]
    mean = np.array([0.100, 0.098, -0.02, 0.05])
    return bs.GainBelief.from_draws(names, mean + 0.002 * rng.standard_normal((2000, 4)))


def test_lexicographic_objectives_with_tolerance():
    belief = _multi_belief()
    cands = [bs.Candidate("fast", "adaptation", "data", objectives=("success", "energy")),
             bs.Candidate("frugal", "adaptation", "data", objectives=("success", "energy"))]
    plain = bs.decide(belief, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(), terminal=True)
    assert plain.best == "fast" and plain.objectives == ("success", "energy")
    lex = bs.decide(belief, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(), terminal=True,
                    objective_tol=(0.005,))
    assert lex.best == "frugal" and lex.front == ("frugal",)
    assert lex.table.loc["fast", "rank"] == 1 and lex.table.loc["frugal", "rank"] == 2  # levels survived
    assert lex.table.loc["frugal", "gain@energy"] == pytest.approx(0.05, abs=1e-3)
    split = {"success": bs.GainBelief.from_draws(["fast", "frugal"], belief.draws[:, :2]),
             "energy": bs.GainBelief.from_draws(["fast", "frugal"], belief.draws[:, 2:])}
    same = bs.decide(split, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(), terminal=True,
                     objective_tol=(0.005,))
    assert same.best == "frugal"


def test_pareto_front_is_reported():
    belief = _multi_belief()
    cands = [bs.Candidate("fast", "adaptation", "data"), bs.Candidate("frugal", "adaptation", "data"),
             bs.Candidate("look", "diagnosis", "data", observes="fast", cost=bs.Cost(compute=1.0))]
    d = bs.decide(belief, cands, bs.Budget(1, 10, 1), bs.ResourceWeights(), terminal=True, multi="pareto")
    assert set(d.front) == {"fast", "frugal"}  # look and the stop are dominated
    assert d.table.loc["look", "rank"] >= 1 and d.best == "fast"
    assert "front: " in d.text()
    with pytest.raises(bs.InputError, match="objectives"):
        bs.decide(belief, cands, bs.Budget(1, 10, 1), bs.ResourceWeights(), objectives=("success", "wear"))


def test_record_and_text(toy):
    belief, cands, budget, weights = toy
    cands = [*cands, bs.Candidate("probe", "diagnosis", "data", observes="dr_wide",
                                  outcome=bs.GaussianOutcome(0.02), cost=bs.Cost(compute=0.3))]
    d = bs.decide(belief, cands, budget, weights, cvu_samples=32, seed=5)
    rec = d.to_record(round=3)
    assert isinstance(rec, DecisionRecord) and rec.round == 3 and rec.chosen == d.best and rec.seed == 5
    payload = rec.to_dict()
    json.dumps(payload, allow_nan=False)
    rows = {r["name"]: r for r in payload["table"]}
    assert rows["probe"]["MV"] is None and rows["probe"]["mu_dJ"] == 0.0
    assert payload["extra"]["utility"] == "mean"
    again = DecisionRecord.from_dict(payload)
    assert again.id == rec.id
    text = d.text()
    for piece in ("U0", "CVU", "Q", "Chosen: dr_wide", "probe", "Weight robustness"):
        assert piece in text


def test_adopt_prices_a_secondary_objective_by_the_primary_adoption():
    rng = np.random.default_rng(1)
    names = ["fast", "fast@energy"]
    draws = np.column_stack([rng.normal(0.10, 0.01, 4000), rng.normal(-0.05, 0.01, 4000)])
    belief = bs.GainBelief.from_draws(names, draws)
    cands = [bs.Candidate("fast", "adaptation", "data", objectives=("success", "energy"))]
    d = bs.decide(belief, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(), terminal=True, utility="adopt")
    # surely adopted, so surely pays its energy cost: not the positive part of the energy gain
    assert d.table.loc["fast", "gain@energy"] == pytest.approx(-0.05, abs=0.002)
