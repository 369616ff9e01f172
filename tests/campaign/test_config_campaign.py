"""CampaignConfig holds one DecideConfig and one FitConfig: it cannot disagree with `decide` or
`fit_gains` on a default or a check, and the ledger keeps it exactly (old flat forms still load)."""

import dataclasses
import json

import pytest
from campaign_fixtures import synthetic_candidates, synthetic_config

import bayes_s2r as bs
from bayes_s2r.belief.inference import NUTS, SVI, FitConfig
from bayes_s2r.campaign import loop
from bayes_s2r.campaign.config import CAMPAIGN_DECIDE, CAMPAIGN_FIT, PER_ROUND
from bayes_s2r.campaign.state import init_campaign, load_state

BUDGET = bs.Budget(real=4.0, compute=20.0, eng=8.0)


def test_the_campaign_differs_from_decide_only_where_it_says():
    ours, theirs = bs.CampaignConfig(BUDGET).decide, bs.DecideConfig()
    differ = {f for f in bs.DecideConfig._fields if getattr(ours, f) != getattr(theirs, f)}
    assert differ == set(CAMPAIGN_DECIDE)
    assert {f: getattr(ours, f) for f in differ} == dict(CAMPAIGN_DECIDE)
    assert ours == bs.DecideConfig.make(**CAMPAIGN_DECIDE)


def test_the_campaign_fits_with_svi_at_its_own_defaults():
    fit = bs.CampaignConfig(BUDGET).fit
    assert fit == CAMPAIGN_FIT == FitConfig(inference=SVI())
    assert dataclasses.replace(fit, inference=NUTS()) == FitConfig()  # only the method differs


@pytest.mark.parametrize("field, value", [("cvu_samples", 1), ("delta", 1.5), ("alpha_exec", -0.1),
                                          ("utility", "median"), ("lookahead_depth", 3), ("beta", -1.0)])
def test_a_decide_option_is_refused_at_construction_as_decide_refuses_it(field, value):
    belief = bs.GainBelief.from_gaussian(["dr"], [0.1], [0.02], num_draws=200)
    cands = [bs.Candidate("dr", "adaptation", "data")]
    with pytest.raises(bs.InputError) as by_decide:
        bs.decide(belief, cands, BUDGET, bs.ResourceWeights(), **{field: value})
    with pytest.raises(bs.InputError) as by_campaign:
        bs.CampaignConfig(BUDGET, **{field: value})
    assert str(by_campaign.value) == str(by_decide.value)
    assert by_campaign.value.field == field


def test_what_decide_accepts_the_campaign_accepts():
    cfg = bs.CampaignConfig(BUDGET, alpha_exec=0.0, cvu_samples=2, utility="cvar", multi="pareto")
    assert (cfg.alpha_exec, cfg.cvu_samples, cfg.utility, cfg.multi) == (0.0, 2, "cvar", "pareto")


def test_every_decide_option_reads_as_the_campaigns_and_round_trips():
    cfg = bs.CampaignConfig(BUDGET, beta=0.5, utility_level=0.2, objectives=("success",), collapse_ess=10.0)
    for f in bs.DecideConfig._fields:
        if f not in PER_ROUND:
            assert getattr(cfg, f) == getattr(cfg.decide, f), f
    assert cfg.decide.utility_level == 0.2 and cfg.beta == 0.5
    stored = json.loads(json.dumps(cfg.to_dict()))
    assert set(stored["decide"]) == set(bs.DecideConfig._fields) - set(PER_ROUND)
    assert bs.CampaignConfig.from_dict(stored) == cfg


def test_a_given_decide_config_is_used_as_it_is_and_keywords_replace_its_fields():
    given = bs.DecideConfig(beta=0.25, cvu_samples=32)
    assert bs.CampaignConfig(BUDGET, decide=given).decide == bs.DecideConfig.make(beta=0.25, cvu_samples=32)
    cfg = bs.CampaignConfig(BUDGET, decide=given, beta=0.75)
    assert cfg.decide == bs.DecideConfig.make(beta=0.75, cvu_samples=32)
    assert dataclasses.replace(cfg, cvu_samples=8).decide == cfg.decide._replace(cvu_samples=8)


@pytest.mark.parametrize("kw", [{"terminal": True}, {"horizon": 3}, {"decide": bs.DecideConfig(seed=4)}])
def test_what_each_round_sets_is_not_configured(kw):
    with pytest.raises(bs.InputError, match="campaign sets it every round"):
        bs.CampaignConfig(BUDGET, **kw)
    assert bs.CampaignConfig(BUDGET, seed=9).seed == 9  # the campaign's own seed


def test_the_flat_fit_keywords_build_the_fit_config():
    prior = bs.GainPrior(candidate_scale=2.0)
    cfg = bs.CampaignConfig(BUDGET, fit_method="svi", fit_options={"svi_steps": 300, "prior": prior})
    assert cfg.fit == FitConfig(inference=SVI(steps=300), prior=prior)
    assert cfg.fit_method == "svi" and cfg.fit_options["prior"] == prior and cfg.fit_options["svi_steps"] == 300
    again = bs.CampaignConfig(BUDGET, fit_method=cfg.fit_method, fit_options=cfg.fit_options)
    assert again.fit == cfg.fit
    nuts = bs.CampaignConfig(BUDGET, fit_method="nuts", fit_options={"num_samples": 200})
    assert nuts.fit == FitConfig(inference=NUTS(num_samples=200))
    assert bs.CampaignConfig(BUDGET, fit=nuts.fit, fit_options={"num_chains": 1}).fit.inference == NUTS(
        num_samples=200, num_chains=1)


@pytest.mark.parametrize("kw, field", [({"fit_method": "mcmc"}, "config.fit_method"),
                                       ({"fit_options": {"svi_steps": 5}}, "config.fit_options.svi_steps"),
                                       ({"fit_options": {"svi_step": 300}}, "config.fit_options.svi_step"),
                                       ({"fit_options": {"prior": {"nope": 1}}}, "config.fit_options.prior.nope"),
                                       ({"fit_options": [1]}, "config.fit_options"),
                                       ({"fit": SVI()}, "config.fit"), ({"bogus": 1}, "config.bogus")])
def test_bad_fit_settings_are_named(kw, field):
    with pytest.raises(bs.InputError) as err:
        bs.CampaignConfig(BUDGET, **kw)
    assert err.value.field == field


def _flat_form():
    """A configuration as ledgers stored it before it held a DecideConfig and a FitConfig."""
    return {"budget": {"real": 4.0, "compute": 20.0, "eng": 8.0},
            "weights": {"real": 0.05, "compute": 0.005, "eng": 0.01, "scarcity": 0.0},
            "alpha_exec": 0.1, "alpha_deploy": 0.05, "delta": 0.05, "beta": 0.5, "cvu_samples": 64,
            "max_rounds": 3, "fit_method": "svi", "utility": "adopt", "deploy_episodes": 100,
            "accept_regressions": False, "allow_bad_belief": False,
            "fit_options": {"svi_steps": 300, "prior": {"candidate_scale": 2.0}}, "seed": 3,
            "repeat_share": 0.25, "lookahead_depth": 2, "continuation": "g0", "sim_risk_prior": {"ft_real": [0, 50]}}


def test_a_config_stored_in_the_old_flat_form_still_loads(tmp_path):
    expected = bs.CampaignConfig(
        BUDGET, bs.ResourceWeights(real=0.05, compute=0.005, eng=0.01), alpha_exec=0.1, beta=0.5, cvu_samples=64,
        max_rounds=3, deploy_episodes=100, seed=3, repeat_share=0.25, lookahead_depth=2, continuation="g0",
        sim_risk_prior={"ft_real": (0, 50)}, diagnosis_margin=0.0,  # the flat form predates the field
        fit=FitConfig(inference=SVI(steps=300), prior=bs.GainPrior(candidate_scale=2.0)))
    assert bs.CampaignConfig.from_dict(_flat_form()) == expected
    oldest = {k: v for k, v in _flat_form().items() if k not in ("repeat_share", "lookahead_depth", "continuation")}
    assert bs.CampaignConfig.from_dict(oldest).decide.continuation == "rollout"  # the default then, too
    ledger = bs.Ledger(tmp_path / "old.sqlite")
    init_campaign(ledger, synthetic_candidates(), synthetic_config(), policy="pi0")
    ledger.set_meta("campaign.config", _flat_form())
    assert load_state(ledger).config == expected
    ledger.close()


def test_a_ledger_that_predates_a_decide_field_resumes_with_the_value_it_ran_with(tmp_path, monkeypatch):
    """A field a stored config lacks takes the value campaigns ran with before the field existed,
    not the field's current default, so changing a default never changes a resumed campaign."""
    from bayes_s2r.campaign import config as campaign_config

    new = synthetic_config().to_dict()
    assert bs.CampaignConfig.from_dict(new) == synthetic_config()  # a stored field is kept as stored
    old = {**new, "decide": {k: v for k, v in new["decide"].items() if k not in ("rollout_margin", "base_index", "diagnosis_margin")}}
    # diagnosis_margin's campaign default moved from 0 to 1: a ledger from before it resumes with 0
    assert synthetic_config().decide.diagnosis_margin == 1.0
    assert bs.CampaignConfig.from_dict(old) == synthetic_config(diagnosis_margin=0.0)
    # a default that has moved on since: cvu_samples stands in for such a field here
    monkeypatch.setattr(campaign_config, "_BEFORE_FIELD", {**campaign_config._BEFORE_FIELD, "cvu_samples": 32})
    older = {**new, "decide": {k: v for k, v in new["decide"].items() if k != "cvu_samples"}}
    assert bs.CampaignConfig.from_dict(older).decide.cvu_samples == 32
    assert bs.CampaignConfig.from_dict(new).decide.cvu_samples == 64
    flat = {k: v for k, v in _flat_form().items() if k != "cvu_samples"}
    assert bs.CampaignConfig.from_dict(flat).decide.cvu_samples == 32
    ledger = bs.Ledger(tmp_path / "old.sqlite")
    init_campaign(ledger, synthetic_candidates(), synthetic_config(), policy="pi0")
    ledger.set_meta("campaign.config", older)
    assert load_state(ledger).config.decide.cvu_samples == 32
    ledger.close()


def test_a_stored_depth_2_under_the_rollout_resumes_as_it_ran():
    """The rollout never read a depth of 2; it is refused now, and a ledger that stored one
    loads as what ran (depth 1), in either stored form."""
    new = synthetic_config().to_dict()
    new["decide"]["lookahead_depth"] = 2
    assert new["decide"]["continuation"] == "rollout"
    assert bs.CampaignConfig.from_dict(new).decide == synthetic_config().decide
    flat = {k: v for k, v in _flat_form().items() if k != "continuation"}
    assert bs.CampaignConfig.from_dict(flat).decide.lookahead_depth == 1
    assert bs.CampaignConfig.from_dict(_flat_form()).decide.lookahead_depth == 2  # g0 keeps it


def test_the_new_form_round_trips_exactly_through_the_ledger(tmp_path):
    cfg = synthetic_config(utility="lcb", utility_level=0.2, lookahead_depth=2, continuation="g0", repeat_share=0.5,
                           fit_options={"svi_steps": 300, "prior": bs.GainPrior(candidate_scale=2.0)},
                           sim_risk_prior={"ft_real": (1, 40)})
    ledger = bs.Ledger(tmp_path / "c.sqlite")
    init_campaign(ledger, synthetic_candidates(), cfg, policy="pi0")
    back = load_state(ledger).config
    assert back == cfg and back.to_dict() == json.loads(json.dumps(cfg.to_dict()))
    assert ledger.get_meta("campaign.config") == json.loads(json.dumps(cfg.to_dict()))
    ledger.close()


def test_the_report_reads_the_stored_form():
    from bayes_s2r.report.data import normalize_meta

    cfg = synthetic_config(alpha_exec=0.1, beta=0.5, fit_method="nuts", seed=7)
    camp = normalize_meta({"campaign.config": json.loads(json.dumps(cfg.to_dict()))})["campaign"]
    assert (camp["alpha_exec"], camp["beta"], camp["fit_method"], camp["seed"], camp["utility"]) == (
        0.1, 0.5, "nuts", 7, "adopt")


def test_the_report_refits_alternatives_as_the_campaign_does():
    from bayes_s2r.report.beliefs import _fit_settings
    from bayes_s2r.report.data import ReportData, normalize_meta

    adoptions = {"pi1": {"parent": "pi0", "candidate": "dr_wide", "round": 0},
                 "pi3": {"parent": "pi1", "candidate": "si_once", "round": 2}}
    meta = {"campaign.policy": "pi3", "campaign.adoptions": adoptions}
    for rule, expected in (("headroom", {}), ("alternatives", {
            "current_policy": "pi3", "trained_from": "pi0", "lineage": {"pi1": ["dr_wide"], "pi3": ["si_once"]}})):
        cfg = json.loads(json.dumps(synthetic_config(transition_rule=rule, seed=7).to_dict()))
        data = ReportData(records=(), meta=normalize_meta({**meta, "campaign.config": cfg}), decisions=())
        assert _fit_settings(data, None) == {"method": "svi", "seed": 7, **expected}


def test_each_round_decides_with_the_campaigns_decide_config(tmp_path, monkeypatch):
    """A decide option the campaign code never names reaches `decide`, with the round's own
    seed, last-round flag and rounds left."""
    cfg = synthetic_config(fit_options={"svi_steps": 50}, utility_level=0.2, collapse_ess=10.0, bucket=4,
                           lookahead_depth=2, continuation="g0")
    ledger = bs.Ledger(tmp_path / "c.sqlite")
    init_campaign(ledger, synthetic_candidates(), cfg, policy="pi0")
    state = load_state(ledger)
    seen = {}

    class Stop(Exception):
        pass

    def spy(*args, config=None, **options):
        seen["config"], seen["options"] = config, options
        raise Stop

    monkeypatch.setattr("bayes_s2r.decision.decide", spy)
    with pytest.raises(Stop):
        loop.round_decision(state, ledger, seed=123)
    assert seen["config"] == cfg.decide
    used = bs.DecideConfig.make(**{**seen["config"]._asdict(),
                                   **{k: v for k, v in seen["options"].items() if k in bs.DecideConfig._fields}})
    assert used == cfg.decide._replace(seed=123, terminal=False, horizon=2)  # round 0 of 3: two more rounds
    assert {k for k in seen["options"] if k in bs.DecideConfig._fields} == {
        "beta", "terminal", "seed", "lookahead_depth", "horizon"}
    ledger.close()


def test_the_transition_rule_is_chosen_by_name_stored_and_checked():
    import bayes_s2r as bs
    from bayes_s2r.campaign.config import CampaignConfig
    from bayes_s2r.errors import InputError

    budget = bs.Budget(real=1.0, compute=1.0, eng=1.0)
    assert CampaignConfig(budget).transition == bs.HeadroomTransition(repeat_share=0.0)
    alt = CampaignConfig(budget, transition_rule="alternatives")
    assert alt.transition == bs.AlternativesTransition()
    assert CampaignConfig.from_dict(alt.to_dict()) == alt
    old = alt.to_dict()
    del old["transition_rule"]  # stored before the option existed: the default
    assert CampaignConfig.from_dict(old).transition_rule == "headroom"
    with pytest.raises(InputError, match="config.transition_rule"):
        CampaignConfig(budget, transition_rule="stacking")
