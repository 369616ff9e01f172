"""The two-step look-ahead (lookahead_depth=2) against values worked out by hand.

Three one-off adaptations A, B, C, exactly one of which works (gain 0.9, the others 0, each
with probability 1/3), and a pilot of each that measures its gain almost exactly. A run is
priced 0.01 (1 robot-hour), a pilot 0.008 (0.8 h), and the budget (2.7 h) affords two runs,
or two pilots and a run. With utility "mean" and gains that do not change when another
adaptation is deployed, every value below follows from that enumeration:

* a run: U0 = 0.3 − 0.01 = 0.29; after a failed run, each of the other two works with
  probability 1/2 (U0 = 0.44) and nothing is left for a third step;
* a pilot: U0 = −0.008; after a good pilot the run is worth 0.89; after a bad one, a second
  pilot (−0.008) then the run of whichever works (0.89) is worth 0.882.

One step ahead a pilot scores just below a run (Q 0.292 vs 0.2933); two steps ahead the
pilot's worth (it buys the third step) shows: Q 0.2933 vs 0.0.
"""

import jax
import numpy as np
import pytest

import bayes_s2r as bs
from bayes_s2r.decision import lookahead as la
from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.problem import build_problem

RUN_PRICE, PILOT_PRICE = 0.01, 0.008
EXACT_DEPTH2 = {  # Q = U0 + CVU, and G1(s^∅)
    "run": 0.29 + (2 / 3 * 0.44) - (0.29 + 2 / 3 * 0.44),
    "pilot": -PILOT_PRICE + (1 / 3 * 0.89 + 2 / 3 * 0.882) - (0.29 + 2 / 3 * 0.44),
    "g1_null": 0.29 + 2 / 3 * 0.44,
}
EXACT_DEPTH1 = {"run": 0.29 + 2 / 3 * 0.44 - 0.29, "pilot": -PILOT_PRICE + (0.89 + 2 * 0.44) / 3 - 0.29}


@pytest.fixture(scope="module")
def three_doors():
    rng = np.random.default_rng(0)
    works = rng.permutation(np.arange(3000) % 3)  # exactly a third of the draws each
    draws = np.where(np.arange(3)[None, :] == works[:, None], 0.9, 0.0)
    belief = bs.GainBelief.from_draws(["A", "B", "C"], draws)
    exact = bs.GaussianOutcome(noise_sd=0.01)
    cands = [bs.Candidate(n, "adaptation", "data", cost=bs.Cost(real=1.0), repeatable=False, outcome=exact)
             for n in "ABC"]
    cands += [bs.Candidate(f"pilot_{n}", "diagnosis", "data", observes=n, cost=bs.Cost(real=0.8), outcome=exact)
              for n in "ABC"]
    kw = {"budget": bs.Budget(real=2.7, compute=1, eng=1),
          "weights": bs.ResourceWeights(real=RUN_PRICE, compute=0, eng=0), "transition": bs.NoTransition(),
          "current_J": 0.05}
    return belief, cands, kw


def test_two_steps_ahead_a_pilot_buys_the_third_step(three_doors):
    belief, cands, kw = three_doors
    d = bs.decide(belief, cands, cvu_samples=384, lookahead_depth=2, inner_samples=16, inner_draws=96, seed=1,
                  **kw)
    t = d.table
    assert d.best.startswith("pilot_")
    assert d.g0_null == pytest.approx(EXACT_DEPTH2["g1_null"], abs=0.04)
    for name in "ABC":
        # the outcome draws are shared by the candidates, so G1(s^∅)'s Monte-Carlo error cancels
        # between a candidate and its pilot; each Q alone carries it
        tol = 4 * max(t.loc[name, "cvu_se"], t.loc[f"pilot_{name}", "cvu_se"]) + 0.01
        assert t.loc[name, "Q"] == pytest.approx(EXACT_DEPTH2["run"], abs=tol + 0.03)
        assert t.loc[f"pilot_{name}", "Q"] - t.loc[name, "Q"] == pytest.approx(
            EXACT_DEPTH2["pilot"] - EXACT_DEPTH2["run"], abs=tol)


def test_one_step_ahead_matches_its_own_enumeration(three_doors):
    belief, cands, kw = three_doors
    t = bs.decide(belief, cands, cvu_samples=2048, seed=1, **kw).table
    for name in "ABC":
        assert t.loc[name, "Q"] == pytest.approx(EXACT_DEPTH1["run"], abs=4 * t.loc[name, "cvu_se"] + 1e-3)
        assert t.loc[f"pilot_{name}", "Q"] == pytest.approx(
            EXACT_DEPTH1["pilot"], abs=4 * t.loc[f"pilot_{name}", "cvu_se"] + 1e-3)


def test_two_step_is_the_same_jitted_and_not(three_doors):
    """The two-step look-ahead itself, eagerly and jitted (the rest of `decide` is compared in
    the one-step tests)."""
    belief, cands, kw = three_doors
    cfg = DecideConfig.make(cvu_samples=2, lookahead_depth=2, inner_samples=2, inner_draws=16, seed=3)
    prob = build_problem(belief, tuple(cands), kw["budget"], kw["weights"], risk=None, config=cfg, reference=None,
                         current_J=kw["current_J"], done=())
    got = la.lookahead(prob, cfg, kw["transition"])
    with jax.disable_jit():
        eager = la.lookahead(prob, cfg, kw["transition"])
    np.testing.assert_allclose(eager.cvu, got.cvu, atol=1e-5)
    assert eager.g0_null == pytest.approx(got.g0_null, abs=1e-5)
    assert np.isfinite(got.cvu).all() and np.any(got.cvu != 0)


def test_two_step_options_are_checked(three_doors):
    belief, cands, kw = three_doors
    for field, value in (("lookahead_depth", 3), ("lookahead_depth", True), ("inner_samples", 1),
                         ("inner_draws", 8)):
        with pytest.raises(bs.InputError, match=field):
            bs.decide(belief, cands, **{field: value}, **kw)
    with pytest.raises(bs.InputError, match="lookahead_depth"):
        bs.CampaignConfig(budget=bs.Budget(1, 1, 1), lookahead_depth=0)
    # the rollout continuation (a campaign's default) already sees every decision left
    with pytest.raises(bs.InputError, match="lookahead_depth") as err:
        bs.CampaignConfig(budget=bs.Budget(1, 1, 1), lookahead_depth=2)
    assert "'g0'" in str(err.value)
    with pytest.raises(bs.InputError, match="lookahead_depth"):
        bs.decide(belief, cands, lookahead_depth=2, continuation="rollout", horizon=2, **kw)
    assert bs.CampaignConfig(budget=bs.Budget(1, 1, 1), lookahead_depth=2, continuation="g0").lookahead_depth == 2


def test_the_text_names_the_two_step_value_of_the_stop_branch(three_doors):
    belief, cands, kw = three_doors
    small = {"cvu_samples": 2, "inner_samples": 2, "inner_draws": 16, "seed": 3}  # as above: compiled once
    assert "G1(stop branch)" in bs.decide(belief, cands, lookahead_depth=2, **small, **kw).text()
    assert "G0(stop branch)" in bs.decide(belief, cands, **small, **kw).text()
