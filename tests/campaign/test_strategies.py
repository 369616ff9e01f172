"""Choosers: each strategy picks what its rule says; the oracle is never worse on a known world."""

import numpy as np
import pandas as pd
import pytest
from campaign_fixtures import synthetic_candidates, synthetic_config, synthetic_world

import bayes_s2r as bs
from bayes_s2r.campaign import (
    STRATEGY_IDS,
    Choice,
    SyntheticExecutor,
    executor_memory,
    load_state,
    make_chooser,
    run_campaign,
    start_campaign,
)
from bayes_s2r.campaign.strategies import (
    oracle,
    recipe,
    round_robin,
    synthetic_true_gains,
    thompson,
)
from bayes_s2r.evidence.ledger import Ledger


def _three_methods():
    out = bs.BinomialPairedOutcome(episodes=60)
    return (
        bs.Candidate("dr_a", "adaptation", "data", method="DR", cost=bs.Cost(compute=1.0, eng=1.0), outcome=out),
        bs.Candidate("dr_b", "adaptation", "data", method="DR", cost=bs.Cost(compute=1.0, eng=1.0), outcome=out),
        bs.Candidate("si", "adaptation", "model", method="SI", repeatable=False,
                     cost=bs.Cost(real=0.5, eng=2.0), outcome=out),
        bs.Candidate("ft", "adaptation", "optimization", method="FT", touches_robot=True,
                     cost=bs.Cost(real=1.0, eng=1.0), outcome=out),
    )


def _fixed(name):
    """A chooser that runs `name` (to script a history)."""

    def choose(state, ledger, *, seed):
        return Choice(name, None, pd.DataFrame({"feasible": [True]}, index=[name]), "script")

    return choose


def _state(tmp_path, candidates, config, executed=(), name="c.sqlite"):
    """A campaign whose first rounds ran `executed` (candidate names, in order)."""
    world = bs.SyntheticWorld(start_J=0.4, lift={c.name: 0.2 for c in candidates})
    ex = SyntheticExecutor(world)
    ledger = Ledger(tmp_path / name)
    start_campaign(ledger, candidates, config, ex)
    for t, n in enumerate(executed):
        bs.campaign.run_round(ledger, ex, chooser=_fixed(n))
        assert load_state(ledger).round == t + 1
    return load_state(ledger), ledger


def test_strategy_ids_are_the_agreed_ones():
    assert STRATEGY_IDS == ("q_cvu", "q_beta0", "mv_greedy", "dr_only", "si_then_dr", "dr_then_ft",
                            "round_robin", "thompson", "pandora", "oracle", "oracle_safe")
    with pytest.raises(bs.InputError, match="strategy"):
        make_chooser("greedy")
    with pytest.raises(bs.InputError, match="true_gains"):
        make_chooser("oracle")
    with pytest.raises(bs.InputError, match="methods"):
        recipe([])


def test_recipes_follow_their_steps_and_repeat_the_last(tmp_path):
    cands = _three_methods()
    cfg = synthetic_config(budget=bs.Budget(real=10.0, compute=10.0, eng=20.0), max_rounds=6)
    state, ledger = _state(tmp_path, cands, cfg)
    assert make_chooser("si_then_dr")(state, ledger, seed=0).best == "si"
    assert make_chooser("dr_then_ft")(state, ledger, seed=0).best == "dr_a"  # first DR of the set
    state, ledger = _state(tmp_path, cands, cfg, ["si"], name="d.sqlite")
    assert make_chooser("si_then_dr")(state, ledger, seed=0).best == "dr_a"
    assert make_chooser("dr_then_ft")(state, ledger, seed=0).best == "ft"
    assert make_chooser("dr_only")(state, ledger, seed=0).best == "dr_a"
    # a non-repeatable step already run is skipped; the recipe then never stops for economy
    assert recipe(["SI"])(state, ledger, seed=0).best is None


def test_round_robin_cycles_over_methods(tmp_path):
    cands = _three_methods()
    cfg = synthetic_config(budget=bs.Budget(real=10.0, compute=10.0, eng=20.0), max_rounds=6)
    picks = []
    for k, executed in enumerate([(), ("dr_a",), ("dr_a", "si"), ("dr_a", "si", "ft")]):
        state, ledger = _state(tmp_path, cands, cfg, executed, name=f"r{k}.sqlite")
        picks.append(round_robin()(state, ledger, seed=0).best)
    assert picks == ["dr_a", "si", "ft", "dr_a"]


def test_recipes_stop_when_the_budget_cannot_pay(tmp_path):
    cands = _three_methods()
    cfg = synthetic_config(budget=bs.Budget(real=10.0, compute=0.5, eng=20.0), max_rounds=6)
    state, ledger = _state(tmp_path, cands, cfg)
    choice = make_chooser("dr_only")(state, ledger, seed=0)
    assert choice.best is None and choice.stop_reason in ("budget", "no_feasible")


def _belief_state(tmp_path):
    """Evidence that makes dr_wide clearly better per unit price and si_once clearly bigger."""
    cands, cfg = synthetic_candidates(), synthetic_config(fit_options={"svi_steps": 300})
    _, ledger = _state(tmp_path, cands, cfg, name="b.sqlite")
    ledger.add_many([bs.PairedEval("dr_wide", 45, 60, 24, 60), bs.PairedEval("si_once", 55, 60, 24, 60),
                     bs.PairedEval("ft_real", 24, 60, 24, 60), bs.ExecutionOutcome("ft_real", 60, 0)])
    return load_state(ledger), ledger


def test_mv_greedy_picks_the_best_gain_per_price_and_the_toolkit_reads_q(tmp_path):
    state, ledger = _belief_state(tmp_path)
    mv = make_chooser("mv_greedy")(state, ledger, seed=1)
    table = mv.table
    feasible = table[table["feasible"] & np.isfinite(table["MV"].astype(float))]
    assert mv.best == feasible["MV"].astype(float).idxmax()
    q = make_chooser("q_cvu")(state, ledger, seed=1)
    assert q.best == q.decision.best == q.table.loc[q.table["feasible"], "Q"].idxmax()
    q0 = make_chooser("q_beta0")(state, ledger, seed=1)
    assert q0.best == q0.table.loc[q0.table["feasible"], "U0"].idxmax()


def test_thompson_follows_its_draw(tmp_path):
    state, ledger = _belief_state(tmp_path)
    picks = {thompson()(state, ledger, seed=s).best for s in range(12)}
    choice = thompson()(state, ledger, seed=3)
    t = choice.table
    assert choice.best == t.loc[t["feasible"], "sampled_U0"].idxmax()
    assert picks <= {"dr_wide", "si_once", "ft_real"}  # q_beta0 goes on here, so every draw picks


def test_thompson_stops_where_the_myopic_rule_stops(tmp_path):
    cands, cfg = synthetic_candidates(), synthetic_config(fit_options={"svi_steps": 300})
    _, ledger = _state(tmp_path, cands, cfg, name="s.sqlite")
    # every adaptation measured harmful: the posterior means say stop, whatever one draw says
    ledger.add_many([bs.PairedEval(c.name, 5, 60, 50, 60) for c in cands if c.role == "adaptation"])
    state = load_state(ledger)
    assert make_chooser("q_beta0")(state, ledger, seed=1).best is None
    for s in range(6):
        choice = thompson()(state, ledger, seed=s)
        assert choice.best is None and choice.stop_reason == "economic"


def test_thompson_goes_on_where_the_myopic_rule_goes_on_even_when_its_draw_prices_all_below_cost(tmp_path):
    cands, cfg = synthetic_candidates(), synthetic_config(fit_options={"svi_steps": 300})
    _, ledger = _state(tmp_path, cands, cfg, name="g.sqlite")
    ledger.add_many([bs.PairedEval(c.name, 31, 60, 24, 60) for c in cands if c.role == "adaptation"])
    state = load_state(ledger)
    assert make_chooser("q_beta0")(state, ledger, seed=1).best is not None
    choices = [thompson()(state, ledger, seed=s) for s in range(16)]
    assert all(c.best is not None and c.stop_reason is None for c in choices)
    # some draws price every feasible candidate at or below 0: a draw-based stop would end there
    assert any((c.table.loc[c.table["feasible"], "sampled_U0"] <= 0).all() for c in choices)


def test_oracle_reads_the_true_gains(tmp_path):
    cands = _three_methods()
    cfg = synthetic_config(budget=bs.Budget(real=10.0, compute=10.0, eng=20.0))
    state, ledger = _state(tmp_path, cands, cfg)
    gains = {"dr_a": 0.05, "dr_b": 0.3, "si": 0.2, "ft": 0.1}
    assert oracle(lambda s, led: gains)(state, ledger, seed=0).best == "dr_b"
    stop = oracle(lambda s, led: dict.fromkeys(gains, -0.1))(state, ledger, seed=0)
    assert stop.best is None and stop.stop_reason == "economic"


def test_safe_oracle_keeps_to_the_safety_gate(tmp_path):
    state, ledger = _belief_state(tmp_path)
    # ft_real has the largest true gain; with every execution unsafe the gate refuses it
    ledger.add(bs.ExecutionOutcome("ft_real", 60, 60, id="unsafe-shakedown"))
    state = load_state(ledger)
    gains = {"dr_wide": 0.1, "si_once": 0.2, "ft_real": 0.5}
    assert make_chooser("oracle", true_gains=lambda s, led: gains)(state, ledger, seed=0).best == "ft_real"
    safe = make_chooser("oracle_safe", true_gains=lambda s, led: gains)(state, ledger, seed=0)
    assert safe.best == "si_once" and safe.rule == "oracle_safe"
    assert not safe.table.loc["ft_real", "feasible"] and not safe.table.loc["ft_real", "safe"]
    assert safe.table.loc["si_once", "true_dJ"] == 0.2


def test_the_oracle_is_never_worse_on_the_synthetic_world(tmp_path):
    cands, world = synthetic_candidates(), synthetic_world()
    finals = {}
    for strategy in ("oracle", "q_cvu", "dr_only", "round_robin", "mv_greedy"):
        for seed in range(2):
            ex = SyntheticExecutor(world)
            with Ledger(tmp_path / f"{strategy}{seed}.sqlite") as ledger:
                start_campaign(ledger, cands, synthetic_config(seed=seed, fit_options={"svi_steps": 300}), ex)
                ledger.add(bs.ExecutionOutcome("ft_real", 60, 18))
                chooser = make_chooser(strategy, true_gains=synthetic_true_gains(ex))
                state = run_campaign(ledger, ex, chooser=chooser)
                J = executor_memory(ledger).get("true_J", {}).get(state.policy, world.start_J)
                finals.setdefault(strategy, []).append(J)
                kinds = {r.extra.get("rule") for r in ledger.records(bs.evidence.records.DecisionRecord)
                         if isinstance(r.extra, dict)}
                assert kinds <= {strategy, None}
    best_other = max(np.mean(v) for s, v in finals.items() if s != "oracle")
    assert np.mean(finals["oracle"]) >= best_other - 1e-9


def test_a_configured_gain_prior_survives_the_ledger_and_reaches_the_fit(tmp_path, monkeypatch):
    from bayes_s2r.campaign import loop
    from bayes_s2r.models.gains import GainPrior

    wide = GainPrior(candidate_scale=2.0)
    cfg = synthetic_config(fit_options={"svi_steps": 50, "prior": wide})
    state, ledger = _state(tmp_path, _three_methods(), cfg)
    assert state.config.fit_options["prior"] == wide  # stored as a mapping, read back as a GainPrior
    seen = {}
    real_fit = bs.fit_gains

    def spy(*args, **kwargs):
        seen["prior"] = kwargs.get("prior")
        return real_fit(*args, **kwargs)

    monkeypatch.setattr("bayes_s2r.belief.fit_gains", spy)
    loop.fit_round_belief(ledger.records(), state, seed=0)
    assert seen["prior"] == wide
    ledger.close()


def test_the_configured_repeat_share_reaches_the_decision(tmp_path):
    from bayes_s2r.campaign import loop

    cfg = synthetic_config(fit_options={"svi_steps": 50}, repeat_share=0.75)
    state, ledger = _state(tmp_path, _three_methods(), cfg)
    decision, _ = loop.round_decision(state, ledger, seed=0)
    assert decision.transition == repr(bs.HeadroomTransition(repeat_share=0.75))
    ledger.close()


@pytest.mark.parametrize("prior", [{"no_such_field": 1.0}, "wide", {"candidate_scale": -1.0}])
def test_a_bad_gain_prior_is_refused_by_name(prior):
    with pytest.raises(bs.InputError, match="prior"):
        synthetic_config(fit_options={"prior": prior})
