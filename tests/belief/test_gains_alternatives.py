"""Gains of alternatives (`fit_gains(trained_from=...)`): every candidate is trained from one
policy, and what each is worth is what it adds over the deployed one."""

import numpy as np
import pytest

from bayes_s2r import Candidate, DeploymentEval, PairedEval, PairedReturns, fit_gains
from bayes_s2r.belief.data import alternatives_fit, prepare_gains
from bayes_s2r.errors import InputError
from tests.belief.conftest import FIT


def _candidates():
    return [Candidate("a", "adaptation", "data", method="DR"), Candidate("b", "adaptation", "data", method="DR"),
            Candidate("c", "adaptation", "representation", method="DA")]


#: a measured against the start p0 and deployed as p1; then b measured against p1.
EVIDENCE = [PairedEval("a", 280, 400, 160, 400, round=0, policy="p0", id="a0"),
            PairedEval("b", 200, 400, 284, 400, round=1, policy="p1", id="b1")]
ALTERNATIVES = {"trained_from": "p0", "lineage": {"p1": ["a"]}, "current_policy": "p1"}


@pytest.fixture(scope="module")
def fits():
    cands = _candidates()
    return {"alternatives": fit_gains(EVIDENCE, cands, seed=0, **ALTERNATIVES, **FIT),
            "stacked": fit_gains(EVIDENCE, cands, seed=0, current_policy="p1", **FIT)}


def test_every_arm_is_read_as_the_policy_it_ran():
    prep = prepare_gains(EVIDENCE, _candidates(), **ALTERNATIVES)
    assert prep.policies == ("p0",) and prep.current_policy == "p1"
    cells = dict(zip(prep.observed["cell_candidate"], zip(prep.observed["treated_successes"],
                                                          prep.observed["treated_episodes"], strict=True),
                     strict=True))
    # p1 is a trained from p0: its control arm is 400 more episodes of a
    assert cells == {"a": (564, 800), "b": (200, 400)}
    assert list(prep.observed["control_successes"]) == [160] and list(prep.observed["control_episodes"]) == [400]
    assert set(prep.observed["cell_policy"]) == {"p0"}
    assert int(prep.data.deployed) == 0 and not prep.spec.has_drift and not prep.spec.has_order
    # a deployment evaluation of the deployed policy measures a too
    more = prepare_gains([*EVIDENCE, DeploymentEval("p1", 100, 70, 0, round=2)], _candidates(), **ALTERNATIVES)
    assert dict(zip(more.observed["cell_candidate"], more.observed["treated_episodes"], strict=True))["a"] == 900
    # without trained_from nothing changes: b is a cell on p1, p1 has its own level
    plain = prepare_gains(EVIDENCE, _candidates(), current_policy="p1")
    assert plain.policies == ("p1", "p0") and plain.data.deployed is None


def test_gains_are_what_each_adds_over_the_deployed_alternative(fits):
    alt, stacked = fits["alternatives"], fits["stacked"]
    assert np.all(alt.column("a") == 0.0)   # the deployed one adds nothing over itself
    j_a, j_b = 564 / 800, 200 / 400
    assert alt.extra["baseline"] == pytest.approx(j_a, abs=0.02)
    assert alt.mean()["b"] == pytest.approx(j_b - j_a, abs=0.03)
    # c is unseen: its own gain from p0 is near the methods' mean, so over a it is worth
    # about a's gain (0.3) less than if it were stacked on a
    assert alt.mean()["c"] < stacked.mean()["c"] - 0.15
    assert alt.diagnostics["ok"], alt.diagnostics
    # each draw is one world: b's gain over a falls as a's level rises
    level = alt.to_inference_data().posterior["baseline"].values.ravel()
    assert np.corrcoef(level, alt.column("b"))[0, 1] < -0.3


def test_before_any_adoption_alternatives_fit_as_usual():
    cands = _candidates()
    first = EVIDENCE[:1]
    prep = prepare_gains(first, cands, trained_from="p0", current_policy="p0")
    plain = prepare_gains(first, cands, current_policy="p0")
    assert prep.data.deployed is None
    for field in ("treated_successes", "treated_episodes", "control_successes", "control_episodes", "cell_cand"):
        assert np.array_equal(getattr(prep.data, field), getattr(plain.data, field))


@pytest.mark.parametrize("options, field", [
    ({"trained_from": 0}, "trained_from"),
    ({"trained_from": "p0", "lineage": {"p1": ["a", "b"]}}, "lineage['p1']"),
    ({"trained_from": "p0", "lineage": {"p1": ["zz"]}}, "lineage['p1']"),
    ({"trained_from": "p0", "lineage": {}}, "paired_eval[id=b1].policy"),
    ({"trained_from": "p0", "lineage": {"p1": ["a"]}, "current_policy": "p9"}, "current_policy"),
    ({"trained_from": "p0", "lineage": {"p0": ["a"], "p1": ["a"]}}, "lineage['p0']"),
])
def test_bad_alternatives_are_refused_by_name(options, field):
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        prepare_gains(EVIDENCE, _candidates(), **options)


def test_paired_returns_against_another_alternative_are_refused():
    rec = PairedReturns("b", [1.0, 0.0], [0.0, 1.0], round=1, policy="p1", id="r1")
    with pytest.raises(InputError, match=r"paired_returns\[id=r1\].policy"):
        prepare_gains([EVIDENCE[0], rec], _candidates(), **ALTERNATIVES)


def test_the_start_may_be_listed_with_nothing_applied():
    plain = prepare_gains(EVIDENCE, _candidates(), **ALTERNATIVES)
    listed = prepare_gains(EVIDENCE, _candidates(), **{**ALTERNATIVES, "lineage": {"p0": [], "p1": ["a"]}})
    assert np.array_equal(plain.data.treated_episodes, listed.data.treated_episodes)


def test_an_arm_without_a_policy_is_refused_once_an_alternative_is_deployed():
    """Its control arm could have run the start or the deployed alternative: which one changes
    the fit, so it is not guessed."""
    unlabelled = PairedEval("c", 240, 400, 280, 400, round=2, id="c2")
    with pytest.raises(InputError, match=r"paired_eval\[id=c2\].policy"):
        prepare_gains([*EVIDENCE, unlabelled], _candidates(), **ALTERNATIVES)
    # before any adoption it can only be the start
    prep = prepare_gains([EVIDENCE[0], unlabelled], _candidates(), trained_from="p0", current_policy="p0")
    assert list(prep.observed["control_episodes"]) == [800]


def test_adoptions_are_followed_back_to_the_start():
    adoptions = {"p2": {"parent": "p1", "candidate": "b"}, "p1": {"parent": "p0", "candidate": "a"}}
    assert alternatives_fit("p2", adoptions) == {"current_policy": "p2", "trained_from": "p0",
                                                 "lineage": {"p2": ["b"], "p1": ["a"]}}
    cycle = {"p1": {"parent": "p2", "candidate": "a"}, "p2": {"parent": "p1", "candidate": "b"}}
    for bad in (cycle, {"p1": {"candidate": "a"}}):
        with pytest.raises(InputError, match="adoptions"):
            alternatives_fit("p1", bad)
