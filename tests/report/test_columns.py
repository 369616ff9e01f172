"""The shared table vocabulary: headers per utility, the legend, and the safety gate's advice."""

import pytest

import bayes_s2r as bs
from bayes_s2r.report import columns


@pytest.mark.parametrize("utility, header", [("mean", "μ_ΔJ"), ("adopt", "E[ΔJ·P(adopt|ΔJ)]"),
                                             ("lcb(0.1)", "LCB0.1[ΔJ]"), ("cvar(0.2)", "CVaR0.2[ΔJ]")])
def test_the_gain_header_names_the_utility_and_the_legend_uses_it(utility, header):
    assert columns.headers(utility)["gain"] == header
    assert f"U0 = {header} − C_λ" in columns.legend(utility, beta=0.5) and "Q = U0 + 0.5·CVU" in columns.legend(
        utility, beta=0.5)


@pytest.mark.parametrize("unsafe, executions", [(0, 0), (0, 30), (1, 20), (2, 100), (0, 59)])
@pytest.mark.parametrize("alpha, delta", [(0.05, 0.05), (0.1, 0.01)])
def test_clean_runs_needed_is_the_fewest_that_bring_the_exact_bound_under_alpha(unsafe, executions, alpha, delta):
    more = columns.clean_runs_needed(unsafe, executions, alpha, delta)
    assert bs.clopper_pearson_ucb(unsafe, executions + more, delta) <= alpha
    if more:
        assert bs.clopper_pearson_ucb(unsafe, executions + more - 1, delta) > alpha


def test_the_gate_advice_for_no_runs_and_for_a_risky_candidate():
    assert "59 more executions without an unsafe event" in columns.gate_hint("ft", 0, 0, 0.05, 0.05)
    risky = columns.gate_hint("ft", 60, 60, 0.05, 0.05)
    assert "will not open the gate" in risky and "more executions" not in risky


def test_amounts_keep_three_significant_digits():
    assert columns.resources_text({"real": 0.746667, "compute": 0.00426667, "eng": 2.0}) == (
        "real 0.747 robot-h, compute 0.00427 compute-h, eng 2 eng-h")
