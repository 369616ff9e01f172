"""A decision saved with `Decision.to_record` reads back in the report, old rows included."""

import bayes_s2r as bs
from bayes_s2r.evidence import DecisionRecord
from bayes_s2r.report import data as rd


def _decision():
    cands = [bs.Candidate("dr_wide", "adaptation", "data", cost=bs.Cost(compute=4.0),
                          outcome=bs.BinomialPairedOutcome(episodes=50)),
             bs.Candidate("ft_real", "adaptation", "optimization", cost=bs.Cost(real=1.0),
                          touches_robot=True, outcome=bs.BinomialPairedOutcome(episodes=50))]
    belief = bs.GainBelief.from_gaussian(["dr_wide", "ft_real"], [0.1, 0.2], [0.05, 0.05], num_draws=2000)
    return bs.decide(belief, cands, bs.Budget(real=5, compute=50, eng=10), bs.ResourceWeights(),
                     cvu_samples=16)


def test_to_record_rows_are_keyed_by_name_and_the_report_reads_them():
    d = _decision()
    rec = d.to_record(round=0)
    assert all("name" in row and "candidate" not in row for row in rec.payload()["table"])
    table = rd.decision_table(rec)
    assert list(table.sort_index().index) == ["dr_wide", "ft_real"]
    data = rd.load_report_data([rec])
    assert data.roles() == {"dr_wide": "adaptation", "ft_real": "adaptation"}
    assert rd.decisions_frame(data)["lead"].iloc[0] == d.best or d.best is None


def test_rows_of_older_records_keyed_candidate_still_read():
    rows = [{"candidate": "dr_wide", "role": "adaptation", "mu_dJ": 0.1, "U0": 0.05, "CVU": 0.0,
             "Q": 0.05, "feasible": True, "ucb_exec": None},
            {"candidate": "ft_real", "role": "adaptation", "mu_dJ": 0.2, "U0": 0.01, "CVU": 0.0,
             "Q": 0.01, "feasible": False, "ucb_exec": 0.9}]
    rec = DecisionRecord(round=0, chosen="dr_wide", stop_reason=None, table=rows)
    table = rd.decision_table(rec)
    assert table.loc["dr_wide", "Q"] == 0.05 and not table.loc["ft_real", "feasible"]
    assert rd.load_report_data([rec]).robot_touching() == ["ft_real"]
