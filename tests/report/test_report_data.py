"""The tables behind each figure, read from a synthetic campaign ledger."""

import math

import pytest
from scipy import stats

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import ExecutionOutcome, PairedEval
from bayes_s2r.report import data as rd
from bayes_s2r.report import evidence_tables as et
from bayes_s2r.report.intervals import newcombe_difference


@pytest.fixture(scope="module")
def data(campaign):
    return rd.load_report_data(campaign)


def test_sources_agree_tuple_list_and_ledger(campaign, tmp_path):
    from bayes_s2r.evidence.ledger import Ledger

    records, meta = campaign
    led = Ledger(tmp_path / "l.sqlite")
    led.add_many(records)
    for k, v in meta.items():
        led.set_meta(k, v)
    views = [rd.load_report_data(campaign), rd.load_report_data(records, meta),
             rd.load_report_data(led)]
    for view in views:
        assert [d.round for d in view.decisions] == [0, 1, 2, 3]
        assert view.campaign["world"] == "pendulum-latency"
        assert sorted(r.id for r in view.records) == sorted(r.id for r in records)
    # meta given alongside a ledger wins over the ledger's own
    assert rd.load_report_data(led, {"deployment": {"passes": False}}).meta["deployment"] == {
        "passes": False}
    led.close()


def test_rejects_what_is_not_a_record(campaign):
    records, meta = campaign
    with pytest.raises(InputError, match=r"records\[1\]"):
        rd.load_report_data([records[0], {"kind": "paired_eval"}], meta)
    with pytest.raises(InputError, match="meta"):
        rd.load_report_data(records, meta=[("campaign", {})])


def test_campaign_loop_meta_keys_are_understood():
    flat = {"campaign.config": {"budget": {"real": 4.0, "compute": 20.0, "eng": 8.0},
                                "alpha_exec": 0.1, "delta": 0.02, "beta": 0.5, "seed": 3},
            "campaign.world": {"name": "pendulum"}, "campaign.candidates": [{"name": "a"}],
            "campaign.last_completed_round": 2}
    meta = rd.normalize_meta(flat)
    assert meta["campaign"]["start_budget"] == {"real": 4.0, "compute": 20.0, "eng": 8.0}
    assert meta["campaign"]["world"] == "pendulum"
    assert meta["campaign"]["alpha_exec"] == 0.1 and meta["campaign"]["beta"] == 0.5
    assert meta["campaign"]["candidates"] == [{"name": "a"}]
    assert meta["last_completed_round"] == 2


def test_decisions_frame_picks_chosen_and_runner_up(data):
    df = rd.decisions_frame(data).set_index("round")
    assert df.loc[0, "chosen"] == "sens_latency" and df.loc[0, "runner_up"] == "dr_wide"
    assert df.loc[1, "lead"] == "dr_wide" and df.loc[1, "runner_up"] == "ft_real"
    # at the stop the lead is the best feasible candidate, not a chosen one
    assert df.loc[3, "chosen"] is None and df.loc[3, "lead"] == "da_obs"
    table = rd.decision_table(data.decisions[1])
    assert df.loc[1, "Q_lead"] == pytest.approx(table.at["dr_wide", "Q"])
    assert df.loc[1, "Q_lead"] == pytest.approx(df.loc[1, "U0_lead"] + df.loc[1, "CVU_lead"])
    assert df.loc[3, "p_best_chosen"] == pytest.approx(0.82)  # p_best of "(stop)"
    assert df.loc[2, "flip_probability"] == pytest.approx(0.29)


def test_budget_burn_down_matches_realized_costs(data, campaign):
    df = rd.budget_frame(data).set_index("round")
    assert list(df.index) == [0, 1, 2, 3, 4]
    assert df.loc[4, "compute"] == pytest.approx(200 - 4 - 43.5 - 9)
    assert df.loc[4, "real"] == pytest.approx(10 - 3.4)
    for k in ("real", "compute", "eng"):  # what the campaign recorded before each round
        recorded = df[f"{k}_recorded"].dropna()
        assert recorded.to_numpy() == pytest.approx(df.loc[recorded.index, k].to_numpy())
    summary = rd.budget_summary(data)
    assert summary.loc["eng", "spent"] == pytest.approx(1.2 + 2.5 + 3.5)
    assert summary.loc["eng", "left"] == pytest.approx(40 - 7.2)


def test_believed_vs_realized_keeps_both_marks(data):
    df = et.believed_vs_realized(data, level=0.9).set_index("candidate")
    assert list(df.index) == ["dr_wide", "ft_real"]  # executed adaptations only, no diagnosis
    ev = PairedEval("dr_wide", 32, 50, 21, 50)
    iv = newcombe_difference(32, 50, 21, 50, 0.9)
    assert df.loc["dr_wide", "realized"] == pytest.approx(ev.delta_hat)
    assert (df.loc["dr_wide", "low"], df.loc["dr_wide", "high"]) == pytest.approx((iv.low, iv.high))
    assert df.loc["dr_wide", "believed"] == pytest.approx(0.21)
    assert df.loc["dr_wide", "hdi_low"] == pytest.approx(0.21 - 1.645 * 0.05)


def test_sensitivity_ranking_and_synergy(data):
    single, pairs, policy = et.sensitivity_frames(data, level=0.9)
    assert policy == "pi0"
    assert list(single["direction"]) == ["latency", "obs_noise", "mass", "damping"]
    row = single.iloc[0]
    assert row["drop"] == pytest.approx((43 * 4 / 200) - 14 / 50)  # nominal pools 4 trials
    iv = newcombe_difference(172, 200, 14, 50, 0.9)
    assert (row["low"], row["high"]) == pytest.approx((iv.low, iv.high))
    (syn,) = pairs.itertuples()
    j0, jk, jl, jkl = 172 / 200, 14 / 50, 38 / 50, 6 / 50
    assert syn.synergy == pytest.approx((j0 - jkl) - (j0 - jk) - (j0 - jl))
    assert syn.low < syn.synergy < syn.high


def test_execution_risk_pools_outcomes_per_candidate(data):
    df = et.exec_risk_frame(data).set_index("candidate")
    assert set(df.index) == {"ft_real", "si_latency"}
    assert (df.loc["ft_real", "executions"], df.loc["ft_real", "unsafe"]) == (71, 0)
    assert df.loc["ft_real", "ucb"] == pytest.approx(1 - 0.05 ** (1 / 71))  # closed form at k = 0
    assert bool(df.loc["ft_real", "passes"]) and not bool(df.loc["si_latency", "passes"])
    assert df.loc["si_latency", "ucb"] == pytest.approx(stats.beta.ppf(0.95, 2, 19))
    # the bound the decision itself used is kept apart, next to the recomputed one
    assert df.loc["ft_real", "ucb_decision"] == pytest.approx(0.0493)


def test_deployment_check_is_separate_from_execution(data):
    dep = et.deployment_check(data)
    assert dep["policy"] == "pi2" and dep["passes"] is True
    assert (dep["episodes"], dep["unsafe"]) == (200, 1)
    assert dep["ucb_recomputed"] == pytest.approx(stats.beta.ppf(0.95, 2, 199))


def test_no_robot_touching_candidate_gives_empty_risk_table(campaign):
    from bayes_s2r.evidence.records import DecisionRecord

    records, meta = campaign
    records = [r for r in records if not isinstance(r, (ExecutionOutcome, DecisionRecord))]
    meta = {**meta, "campaign": {**meta["campaign"], "candidates": [
        {**c, "touches_robot": False} for c in meta["campaign"]["candidates"]]}}
    d = rd.load_report_data(records, meta)
    assert d.robot_touching() == []
    assert et.exec_risk_frame(d).empty


def test_a_stop_without_a_table_is_a_row_without_scores(campaign):
    from bayes_s2r.evidence.records import DecisionRecord
    from bayes_s2r.report.html import _final_decision

    records, meta = campaign
    records = [r for r in records if not (isinstance(r, DecisionRecord) and r.round == 3)]
    records.append(DecisionRecord(3, None, "round_limit", extra={"policy": "pi2"}))
    d = rd.load_report_data(records, meta)
    row = rd.decisions_frame(d).set_index("round").loc[3]
    assert row["lead"] is None and math.isnan(row["Q_lead"]) and math.isnan(row["flip_probability"])
    assert _final_decision(d) == ("Stopped at round 3", "stopped: round limit reached")
