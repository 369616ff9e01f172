"""Campaign configuration and the ledger-derived state (no fitting involved)."""

import pytest
from campaign_fixtures import synthetic_candidates, synthetic_config

import bayes_s2r as bs
from bayes_s2r.campaign.state import init_campaign, load_state
from bayes_s2r.evidence import DecisionRecord, RealizedCost


def test_config_round_trips_through_a_dict():
    cfg = synthetic_config(alpha_exec=0.1, utility="lcb", repeat_share=0.5)
    assert bs.CampaignConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.transition == bs.HeadroomTransition(repeat_share=0.5)
    # a campaign's look-ahead expects nothing from a repeat of what it just deployed;
    # `decide` on its own keeps the rule's default
    assert synthetic_config().transition == bs.HeadroomTransition(repeat_share=0.0)
    old = {k: v for k, v in cfg.to_dict().items() if k != "repeat_share"}  # a ledger written before the field
    assert bs.CampaignConfig.from_dict(old).repeat_share == 0.0


@pytest.mark.parametrize("field,value", [("alpha_exec", -0.1), ("delta", 1.5), ("max_rounds", 0),
                                         ("fit_method", "mcmc"), ("beta", -1.0), ("seed", -2),
                                         ("repeat_share", -0.5), ("repeat_share", float("nan"))])
def test_config_rejects_bad_values(field, value):
    with pytest.raises(bs.InputError, match=field):
        synthetic_config(**{field: value})


def test_state_is_rebuilt_from_the_ledger(tmp_path):
    ledger = bs.Ledger(tmp_path / "c.sqlite")
    init_campaign(ledger, synthetic_candidates(), synthetic_config(), policy="pi0")
    state = load_state(ledger)
    assert state.round == 0 and state.policy == "pi0" and state.status == "running"
    assert state.budget == synthetic_config().budget
    assert [c.name for c in state.candidates] == [c.name for c in synthetic_candidates()]
    # A completed round's realized cost is deducted; one beyond the completed mark is not.
    with ledger.transaction():
        ledger.add_many([
            DecisionRecord(round=0, chosen="si_once", table=[{"name": "si_once", "mu_dJ": 0.1}]),
            RealizedCost("si_once", round=0, real=0.5, eng=2.0),
            RealizedCost("dr_wide", round=1, compute=4.0),
        ])
        ledger.set_meta("campaign.last_completed_round", 0)
    state = load_state(ledger)
    assert state.round == 1
    assert state.budget == bs.Budget(real=3.5, compute=20.0, eng=6.0)
    assert state.done == ("si_once",)
    assert state.history[0].believed_gain == 0.1


def test_a_ledger_holds_one_campaign(tmp_path):
    ledger = bs.Ledger(tmp_path / "c.sqlite")
    init_campaign(ledger, synthetic_candidates(), synthetic_config(), policy="pi0")
    with pytest.raises(bs.InputError, match="resume"):
        init_campaign(ledger, synthetic_candidates(), synthetic_config(), policy="pi0")
    with pytest.raises(bs.InputError, match="campaign"):
        load_state(bs.Ledger(tmp_path / "empty.sqlite"))


def test_pending_steps_follow_their_marks(tmp_path):
    from bayes_s2r.campaign.state import META_KEYS, pending_steps

    ledger = bs.Ledger(tmp_path / "c.sqlite")
    init_campaign(ledger, synthetic_candidates(), synthetic_config(), policy="pi0")
    assert pending_steps(ledger) == ()
    assert pending_steps(ledger, shakedown=True) == ("shakedown",)
    ledger.set_meta(META_KEYS["shakedown"], {"records": []})
    assert pending_steps(ledger, shakedown=True) == ()
    with ledger.transaction():
        ledger.set_meta(META_KEYS["completed"], 0)
        ledger.set_meta(META_KEYS["status"], "stopped")
    assert pending_steps(ledger, shakedown=True) == ("report",)
    ledger.set_meta(META_KEYS["report"], {"records": 0})
    assert pending_steps(ledger, shakedown=True) == ()
    # a ledger whose rounds ran before the shakedown had a mark of its own does not run it again
    ledger.set_meta(META_KEYS["shakedown"], None)
    assert pending_steps(ledger, shakedown=True) == ()
