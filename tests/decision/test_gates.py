"""Safety and budget gates, exclusions, stop reasons and input validation."""

import math

import numpy as np
import pytest

import bayes_s2r as bs


class FakeRisk:
    """Duck-typed risk belief: ucb(name, delta) from a table."""

    def __init__(self, table):
        self.table = table
        self.calls = []

    def ucb(self, name, delta):
        self.calls.append((name, delta))
        return self.table[name]


@pytest.fixture(scope="module")
def robot():
    names = ["sim_dr", "real_ft", "real_si"]
    belief = bs.GainBelief.from_gaussian(names, [0.05, 0.12, 0.09], [0.01, 0.01, 0.01], num_draws=2000)
    cands = [bs.Candidate("sim_dr", "adaptation", "data", cost=bs.Cost(compute=0.1)),
             bs.Candidate("real_ft", "adaptation", "optimization", cost=bs.Cost(real=0.01), touches_robot=True),
             bs.Candidate("real_si", "adaptation", "model", cost=bs.Cost(real=0.01), touches_robot=True,
                          repeatable=False)]
    return belief, cands, bs.Budget(1, 10, 10), bs.ResourceWeights()


def test_robot_candidates_without_risk_evidence_fail_the_gate(robot):
    belief, cands, budget, weights = robot
    d = bs.decide(belief, cands, budget, weights, cvu_samples=32)
    t = d.table
    assert t.loc["real_ft", "ucb_exec"] == 1.0 and not t.loc["real_ft", "safe"]
    assert math.isnan(t.loc["sim_dr", "ucb_exec"]) and t.loc["sim_dr", "safe"]
    assert d.best == "sim_dr"
    assert "unsafe" in t.loc["real_ft", "excluded_reason"] and "risk=None" in t.loc["real_ft", "excluded_reason"]
    assert set(d.p_best.index) == {"sim_dr", "(stop)"}


def test_unsafe_ucb_excludes_and_safe_ucb_admits(robot):
    belief, cands, budget, weights = robot
    risk = FakeRisk({"real_ft": 0.2, "real_si": 0.01})
    d = bs.decide(belief, cands, budget, weights, risk=risk, alpha_exec=0.05, delta=0.1, terminal=True)
    assert not d.table.loc["real_ft", "feasible"] and d.table.loc["real_si", "feasible"]
    assert d.best == "real_si"
    assert ("real_ft", 0.1) in risk.calls and all(n != "sim_dr" for n, _ in risk.calls)
    d2 = bs.decide(belief, cands, budget, weights, risk=risk, alpha_exec=0.25, terminal=True)
    assert d2.best == "real_ft"


def test_unaffordable_and_already_run_are_excluded(robot):
    belief, cands, _, weights = robot
    risk = FakeRisk({"real_ft": 0.0, "real_si": 0.0})
    d = bs.decide(belief, cands, bs.Budget(0.005, 10, 10), weights, risk=risk, cvu_samples=32,
                  done=["real_si", "sim_dr"])
    t = d.table
    assert not t.loc["real_ft", "affordable"] and "unaffordable: real 0.01 > 0.005" in t.loc["real_ft", "excluded_reason"]
    assert t.loc["real_si", "done"] and "already run" in t.loc["real_si", "excluded_reason"]
    assert t.loc["sim_dr", "feasible"]  # repeatable: running it before does not exclude it
    assert math.isnan(t.loc["real_ft", "CVU"])  # no next state for an unaffordable candidate
    text = d.text()
    assert "real_ft: unaffordable" in text and "real_si: already run" in text


def test_all_excluded_gives_a_stop_reason(robot):
    belief, cands, budget, weights = robot
    d = bs.decide(belief, cands[1:], budget, weights, cvu_samples=32)  # both unsafe, both affordable
    assert d.best is None and d.stop_reason == "no_feasible"
    assert d.p_best.to_dict() == {"(stop)": 1.0} and d.flip_probability == 0.0
    d = bs.decide(belief, cands, bs.Budget(0, 0, 0), weights, cvu_samples=32)
    assert d.best is None and d.stop_reason == "budget"
    risk = FakeRisk({"real_ft": 0.0, "real_si": 0.0})
    d = bs.decide(belief, cands, bs.Budget(0, 0.05, 10), weights, risk=risk, cvu_samples=32)
    assert d.stop_reason == "budget"  # something left, but nothing affordable


@pytest.mark.parametrize("kwargs,field", [
    ({"alpha_exec": 1.5}, "alpha_exec"), ({"delta": 0.0}, "delta"), ({"beta": -1.0}, "beta"),
    ({"beta": float("nan")}, "beta"), ({"cvu_samples": 1}, "cvu_samples"), ({"cvu_samples": 2.5}, "cvu_samples"),
    ({"utility": "median"}, "utility"), ({"seed": -1}, "seed"), ({"current_J": 1.2}, "current_J"),
    ({"utility_level": 0.9}, "utility_level"), ({"multi": "sum"}, "multi"), ({"bogus": 1}, "bogus"),
    ({"done": "real_si"}, "done"), ({"reference": (1, 2, 3)}, "reference"), ({"transition": object()}, "transition"),
    ({"terminal": "yes"}, "terminal"),
])
def test_bad_options_name_field_and_value(robot, kwargs, field):
    belief, cands, budget, weights = robot
    with pytest.raises(bs.InputError) as e:
        bs.decide(belief, cands, budget, weights, **kwargs)
    assert e.value.field == field


def test_bad_positional_inputs(robot):
    belief, cands, budget, weights = robot
    for args, field in [((belief, cands, {"real": 1}, weights), "budget"),
                        ((belief, cands, budget, (3, 0.1, 1)), "weights"),
                        ((belief, [], budget, weights), "candidates"),
                        ((belief, [*cands, cands[0]], budget, weights), "candidates[3].name"),
                        (("belief", cands, budget, weights), "belief")]:
        with pytest.raises(bs.InputError) as e:
            bs.decide(*args)
        assert e.value.field == field


def test_bad_belief_needs_permission(robot):
    _, cands, budget, weights = robot
    rng = np.random.default_rng(0)
    bad = bs.GainBelief(["sim_dr", "real_ft", "real_si"], rng.normal(size=(2000, 3)) * 0.01,
                        diagnostics={"ok": False, "reason": "R-hat 1.2 > 1.01"})
    with pytest.raises(bs.InputError, match="R-hat"):
        bs.decide(bad, cands, budget, weights)
    d = bs.decide(bad, cands, budget, weights, allow_bad_belief=True, cvu_samples=32)
    assert d.best in (None, "sim_dr")


def test_risk_returning_nonsense_is_an_input_error(robot):
    belief, cands, budget, weights = robot
    with pytest.raises(bs.InputError, match="risk.ucb"):
        bs.decide(belief, cands, budget, weights, risk=FakeRisk({"real_ft": 2.0, "real_si": 0.0}))


def test_a_diagnosis_of_a_spent_one_off_candidate_is_excluded(robot):
    """What a diagnosis measures of a non-repeatable candidate that has run can no longer be
    acted on: out of the feasible set now, and out of the next state once that candidate runs."""
    from bayes_s2r.decision.config import DecideConfig
    from bayes_s2r.decision.problem import build_problem

    belief, cands, budget, weights = robot
    risk = FakeRisk({"real_ft": 0.0, "real_si": 0.0})
    cands = [*cands, bs.Candidate("probe_si", "diagnosis", "model", observes="real_si", cost=bs.Cost(compute=0.01),
                                  outcome=bs.BinomialPairedOutcome(episodes=12)),
             bs.Candidate("probe_dr", "diagnosis", "data", observes="sim_dr", cost=bs.Cost(compute=0.01),
                          outcome=bs.BinomialPairedOutcome(episodes=12))]
    before = bs.decide(belief, cands, budget, weights, risk=risk, cvu_samples=32).table
    assert before.loc["probe_si", "feasible"] and before.loc["probe_dr", "feasible"]
    after = bs.decide(belief, cands, budget, weights, risk=risk, cvu_samples=32, done=["real_si", "sim_dr"]).table
    assert not after.loc["probe_si", "feasible"] and after.loc["probe_si", "done"]
    assert "observes 'real_si', which has run and is not repeatable" in after.loc["probe_si", "excluded_reason"]
    assert after.loc["probe_dr", "feasible"]  # sim_dr is repeatable: still worth measuring
    prob = build_problem(belief, cands, budget, weights, risk=risk, config=DecideConfig(cvu_samples=32),
                         reference=budget, current_J=None, done=())
    i = {n: k for k, n in enumerate(prob.names)}
    assert not prob.feas_next[i["real_si"], i["probe_si"]] and prob.feas_next[i["sim_dr"], i["probe_si"]]
    assert prob.feas_next[i["real_si"], i["probe_dr"]]
