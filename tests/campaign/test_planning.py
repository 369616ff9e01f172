"""The campaign's planner on small worlds: safety probes bought by the rule itself, exploration
that does not stall, the Pandora index strategy, and belief-free pricing."""

import types

import numpy as np
import pytest

import bayes_s2r as bs
from bayes_s2r.campaign import (
    SyntheticExecutor,
    load_state,
    make_chooser,
    run_campaign,
    start_campaign,
)
from bayes_s2r.campaign.strategies import _plain_table
from bayes_s2r.decision.index import reservation_values
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import DecisionRecord, ExecutionOutcome, PairedEval

OUT = bs.BinomialPairedOutcome(episodes=48)


def _robot_candidates():
    return (
        bs.Candidate("ft", "adaptation", "optimization", method="FT", touches_robot=True, repeatable=False,
                     cost=bs.Cost(real=0.3, eng=1.0), outcome=OUT),
        bs.Candidate("dr", "adaptation", "data", method="DR", repeatable=False, cost=bs.Cost(compute=1.0, eng=1.0),
                     outcome=OUT),
        bs.Candidate("probe_ft", "diagnosis", "optimization", method="probe", observes="safety:ft",
                     touches_robot=True, repeatable=False, cost=bs.Cost(real=0.1, eng=0.5),
                     outcome=bs.SafetyProbe(executions=60, risk_bound=0.01)),
    )


def _robot_campaign(tmp_path, unsafe_rate):
    """ft looks like the fix from an earlier sim evaluation; the robot has never run it."""
    world = bs.SyntheticWorld(start_J=0.3, lift={"ft": 0.8, "dr": 0.0}, unsafe_rate={"ft": unsafe_rate})
    ex = SyntheticExecutor(world, eval_episodes=48)
    cfg = bs.CampaignConfig(budget=bs.Budget(1.0, 5.0, 10.0), weights=bs.ResourceWeights(0.05, 0.01, 0.01),
                            max_rounds=3, cvu_samples=256, seed=1, sim_risk_prior={"ft": (0.0, 50.0)})
    ledger = Ledger(tmp_path / f"robot_{unsafe_rate}.sqlite")
    start_campaign(ledger, _robot_candidates(), cfg, ex)
    ledger.add_many([PairedEval("ft", 40, 48, 14, 48, policy="pi0"), PairedEval("dr", 15, 48, 14, 48, policy="pi0")])
    state = run_campaign(ledger, ex)
    return state, ledger


def test_the_rule_buys_a_probe_and_then_runs_what_it_opened(tmp_path):
    state, ledger = _robot_campaign(tmp_path, unsafe_rate=0.0)
    chosen = [h.chosen for h in state.history]
    assert chosen[:2] == ["probe_ft", "ft"], chosen
    runs = [r.executions for r in ledger.records(ExecutionOutcome) if r.candidate == "ft"]
    assert runs == [60, 48]  # the probe's supervised runs, then ft's own


def test_the_gate_stays_shut_when_the_probe_finds_the_candidate_unsafe(tmp_path):
    state, ledger = _robot_campaign(tmp_path, unsafe_rate=0.3)
    chosen = [h.chosen for h in state.history]
    assert chosen[0] == "probe_ft", chosen
    assert "ft" not in chosen  # never executed on the robot
    assert sum(r.executions for r in ledger.records(ExecutionOutcome)) == 60  # only the probe's runs


def test_a_candidate_measured_at_zero_does_not_starve_its_untried_sibling(tmp_path):
    """dr_1 measured about zero gain; dr_2, of the same method and twice the price, is untried,
    and the engineering budget affords one of them. Pooling pulls dr_2 towards its sibling, but
    its belief still allows it to be the fix: repeating dr_1 would starve it."""
    cands = (
        bs.Candidate("dr_1", "adaptation", "data", method="DR", cost=bs.Cost(compute=1.0, eng=1.0), outcome=OUT),
        bs.Candidate("dr_2", "adaptation", "data", method="DR", cost=bs.Cost(compute=2.0, eng=2.0), outcome=OUT),
    )
    world = bs.SyntheticWorld(start_J=0.3, lift={"dr_1": 0.0, "dr_2": 0.7})
    ex = SyntheticExecutor(world, eval_episodes=48)
    cfg = bs.CampaignConfig(budget=bs.Budget(0.0, 10.0, 2.5), weights=bs.ResourceWeights(0.05, 0.01, 0.01),
                            max_rounds=3, cvu_samples=256, seed=2)
    ledger = Ledger(tmp_path / "siblings.sqlite")
    start_campaign(ledger, cands, cfg, ex)
    ledger.add(PairedEval("dr_1", 15, 48, 15, 48, policy="pi0"))
    report = bs.run_round(ledger, ex)
    assert report.decision.best == "dr_2", report.decision.table[["U0", "CVU", "Q"]]


def test_pandora_tries_the_largest_reservation_value(tmp_path):
    cands = _robot_candidates()[:2]
    world = bs.SyntheticWorld(start_J=0.3, lift={"ft": 0.5, "dr": 0.1}, unsafe_rate={"ft": 0.0})
    ex = SyntheticExecutor(world, eval_episodes=48)
    cfg = bs.CampaignConfig(budget=bs.Budget(1.0, 5.0, 10.0), weights=bs.ResourceWeights(0.05, 0.01, 0.01),
                            max_rounds=2, cvu_samples=64, seed=3)
    ledger = Ledger(tmp_path / "pandora.sqlite")
    start_campaign(ledger, cands, cfg, ex)
    ledger.add(ExecutionOutcome("ft", 120, 0))
    choice = make_chooser("pandora")(load_state(ledger), ledger, seed=0)
    z = choice.table["z"]
    draws = np.column_stack([choice.belief.column(n) for n in ("ft", "dr")])
    expected = reservation_values(draws, choice.table.loc[["ft", "dr"], "C_lambda"].to_numpy(float))
    np.testing.assert_allclose(z[["ft", "dr"]].to_numpy(float), expected)
    assert choice.best == ("ft", "dr")[int(np.argmax(expected))]
    state = run_campaign(ledger, ex, chooser=make_chooser("pandora"))
    assert len(state.history) >= 1
    assert all(r.chosen is None or r.chosen in {"ft", "dr"} for r in ledger.records(DecisionRecord))


def test_belief_free_strategies_price_like_decide_when_a_resource_is_exhausted():
    """Scarcity prices an exhausted resource at infinity; a candidate that does not use it
    keeps a finite price (not λ·ΔC = ∞·0 = NaN)."""
    weights = bs.ResourceWeights(real=0.05, compute=0.01, eng=0.01, scarcity=1.0)
    cands = _robot_candidates()[:2]
    config = types.SimpleNamespace(weights=weights, budget=bs.Budget(1.0, 5.0, 10.0))
    state = types.SimpleNamespace(config=config, budget=bs.Budget(0.0, 5.0, 10.0), candidates=cands, done=())
    table, _ = _plain_table(state)
    assert table.loc["dr", "C_lambda"] == pytest.approx(0.01 * 1.0 + 0.01 * 1.0)
    assert not table.loc["ft", "affordable"]
