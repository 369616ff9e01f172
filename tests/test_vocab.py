"""The vocabulary: costs, budgets, scarcity-priced weights, candidates, policy interfaces."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bayes_s2r as bs
from bayes_s2r.belief.outcomes import BinomialPairedOutcome
from bayes_s2r.errors import InputError
from bayes_s2r.vocab import (
    Budget,
    Candidate,
    Cost,
    PolicyInterface,
    ResourceWeights,
    check_shared_interface,
    validate_candidates,
)

BAD_AMOUNTS = [-1, -0.5, math.nan, math.inf, -math.inf, "1", None, True, [1.0]]


# ----------------------------------------------------------------------------- Cost / Budget
def test_cost_defaults_arithmetic_and_public_names():
    assert bs.Cost is Cost and bs.Budget is Budget and bs.ResourceWeights is ResourceWeights
    c = Cost(real=1, eng=2.5)
    assert (c.real, c.compute, c.eng) == (1.0, 0.0, 2.5) and isinstance(c.real, float)
    assert (c + Cost(compute=3)).as_array().tolist() == [1.0, 3.0, 2.5]
    assert Cost.from_mapping(None) == Cost() and Cost.from_mapping({"eng": 1}) == Cost(eng=1)
    with pytest.raises(TypeError):
        c + 1


@pytest.mark.parametrize("bad", BAD_AMOUNTS)
@pytest.mark.parametrize("resource", ["real", "compute", "eng"])
def test_cost_and_budget_refuse_negative_or_non_finite(bad, resource):
    with pytest.raises(InputError, match=rf"cost\.{resource}=.*expected a finite number >= 0"):
        Cost(**{resource: bad})
    with pytest.raises(InputError, match=rf"budget\.{resource}="):
        Budget(**{resource: bad})
    with pytest.raises(InputError, match=rf"weights\.{resource}="):
        ResourceWeights(**{resource: bad})


def test_cost_from_mapping_errors_name_the_field():
    with pytest.raises(InputError, match=r"cost\.gpu=1: expected one of"):
        Cost.from_mapping({"gpu": 1})
    with pytest.raises(InputError, match=r"delta\.real=-2"):
        Cost.from_mapping({"real": -2}, field="delta")
    with pytest.raises(InputError, match=r"cost=\[1, 2\]: expected a mapping"):
        Cost.from_mapping([1, 2])


def test_budget_covers_subtracts_and_spends():
    b = Budget(real=10, compute=100, eng=40)
    assert b.covers(Cost(real=10, compute=100, eng=40)) and not b.covers(Cost(real=10.5))
    assert (b - Cost(real=2, eng=40)) == Budget(8, 100, 0)
    with pytest.raises(
        InputError, match=r"cost\.real=11.0: expected at most the remaining budget 10.0"
    ):
        b - Cost(real=11)
    assert b.spend(Cost(real=11, compute=1)) == Budget(0, 99, 40)  # an overrun spends what is left
    assert Budget().exhausted() and not b.exhausted()
    assert Budget.from_mapping({"real": 3}) == Budget(real=3)
    with pytest.raises(InputError, match=r"budget\.real=-3"):
        Budget.from_mapping({"real": -3})


# ----------------------------------------------------------------------------- ResourceWeights
@settings(max_examples=60, deadline=None)
@given(
    lam=st.tuples(*[st.floats(0, 100)] * 3),
    scarcity=st.floats(0, 3),
    budget=st.tuples(*[st.floats(0.01, 1e3)] * 3),
    reference=st.tuples(*[st.floats(0.01, 1e3)] * 3),
)
def test_scarcity_rule_closed_form(lam, scarcity, budget, reference):
    w = ResourceWeights(*lam, scarcity=scarcity)
    got = w.at(Budget(*budget), Budget(*reference))
    want = [lam[i] * (reference[i] / budget[i]) ** scarcity for i in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got.shape == (3,)


def test_scarcity_rule_special_cases():
    w = ResourceWeights(real=3.0, compute=0.1, eng=1.0, scarcity=1.0)
    ref = Budget(10, 100, 40)
    assert w.at(Budget(5, 50, 20), ref).tolist() == [6.0, 0.2, 2.0]  # half left: twice the price
    assert w.at(ref, ref).tolist() == [3.0, 0.1, 1.0]
    assert w.at().tolist() == w.at(Budget(1, 1, 1)).tolist() == [3.0, 0.1, 1.0]
    assert ResourceWeights(3, 0.1, 1, scarcity=0).at(Budget(1, 1, 1), ref).tolist() == [
        3.0,
        0.1,
        1.0,
    ]
    # a resource without a reference amount keeps its base price; an exhausted one costs infinity
    got = w.at(Budget(0, 50, 40), Budget(10, 0, 40))
    assert got[0] == math.inf and got[1] == 0.1 and got[2] == 1.0
    assert w.replace(scarcity=2.0).at(Budget(5, 50, 20), ref).tolist() == [12.0, 0.4, 4.0]
    with pytest.raises(InputError, match=r"weights\.scarcity=-1"):
        ResourceWeights(scarcity=-1)


# ----------------------------------------------------------------------------- Candidate
def test_candidate_normalizes_lens_cost_and_objectives():
    c = Candidate(
        "dr_wide",
        "adaptation",
        ["data", "model", "data"],
        method="DR",
        batch=1024,
        cost={"compute": 4},
        targets="latency",
        outcome=BinomialPairedOutcome(50),
        objectives="success",
    )
    assert c.lens == ("data", "model") and c.cost == Cost(compute=4) and c.batch == 1024.0
    assert c.objectives == ("success",) and c.changes_policy and c.observed_direction is None
    d = Candidate("sweep", "diagnosis", "model", observes="sensitivity:latency")
    assert d.observed_direction == "latency" and not d.changes_policy


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"role": "oracle"}, "candidate.role"),
        ({"role": ["adaptation"]}, "candidate.role"),
        ({"lens": "vibes"}, "candidate.lens"),
        ({"lens": ["data", "vibes"]}, "candidate.lens"),
        ({"lens": []}, "candidate.lens"),
        ({"lens": 5}, "candidate.lens"),
        ({"name": ""}, "candidate.name"),
        ({"name": " padded"}, "candidate.name"),
        ({"name": "(stop)"}, "candidate.name"),
        ({"name": "sensitivity:mass"}, "candidate.name"),
        ({"name": 7}, "candidate.name"),
        ({"method": ""}, "candidate.method"),
        ({"batch": 0}, "candidate.batch"),
        ({"batch": math.nan}, "candidate.batch"),
        ({"batch": True}, "candidate.batch"),
        ({"cost": {"real": -1}}, "candidate.cost.real"),
        ({"cost": {"real": math.inf}}, "candidate.cost.real"),
        ({"cost": 3}, "candidate.cost"),
        ({"touches_robot": "yes"}, "candidate.touches_robot"),
        ({"repeatable": 1}, "candidate.repeatable"),
        ({"targets": ""}, "candidate.targets"),
        ({"outcome": "binomial"}, "candidate.outcome"),
        ({"objectives": []}, "candidate.objectives"),
        ({"objectives": 5}, "candidate.objectives"),
        ({"objectives": {"success": 1}}, "candidate.objectives"),
        ({"role": "diagnosis"}, "candidate.observes"),
        ({"role": "diagnosis", "observes": "sensitivity:"}, "candidate.observes"),
        ({"observes": 3}, "candidate.observes"),
    ],
)
def test_bad_candidate_fields(kwargs, field):
    args = {"name": "m", "role": "adaptation", **kwargs}
    with pytest.raises(InputError) as err:
        Candidate(**args)
    assert err.value.field == field
    assert f"{field}=" in str(err.value) and "expected" in str(err.value)


def test_validate_candidates_checks_the_set():
    a = Candidate("dr", "adaptation", "data")
    probe = Candidate("probe", "diagnosis", "data", observes="dr")
    sweep = Candidate("sweep", "diagnosis", "model", observes="sensitivity:mass")
    assert validate_candidates([a, probe, sweep]) == (a, probe, sweep)
    with pytest.raises(InputError, match=r"candidates\[2\]\.name='dr': expected a name not used"):
        validate_candidates([a, probe, Candidate("dr", "adaptation", "model")])
    with pytest.raises(InputError, match=r"candidates\[0\]\.observes='dr'"):
        validate_candidates([probe])
    with pytest.raises(InputError, match=r"candidates\[1\]=.*a Candidate"):
        validate_candidates([a, "sweep"])
    with pytest.raises(InputError, match="at least one candidate"):
        validate_candidates([])


# ----------------------------------------------------------------------------- PolicyInterface
OBS = {
    "pole": {"shape": (4,), "units": "rad", "normalization": "none"},
    "cart": {"shape": (2,), "units": "m", "normalization": "none"},
}


def test_identical_interfaces_pass():
    sim = PolicyInterface(OBS, control_hz=50.0, action_bounds=(-3, 3))
    real = PolicyInterface(
        dict(reversed(list(OBS.items()))), control_hz=50, action_bounds=[[-3.0, 3.0]]
    )
    assert sim == real and sim.differences(real) == []
    check_shared_interface(sim, real)


def test_check_shared_interface_lists_every_differing_field():
    sim = PolicyInterface(OBS)
    real = PolicyInterface(
        {"pole": {"shape": (4,), "units": "deg", "normalization": "none"}, "imu": {"shape": (3,)}},
        action_kind="continuous",
        action_mode="velocity",
        action_bounds=(-1, 2),
        action_clamp=False,
        control_hz=100.0,
        action_hold="first_order_hold",
        assumed_latency_steps=2,
    )
    diffs = sim.differences(real)
    expected = [
        "observation.cart",
        "observation.imu",
        "observation.pole",
        "action_mode",
        "action_bounds",
        "action_clamp",
        "control_hz",
        "action_hold",
        "assumed_latency_steps",
    ]
    assert [d.split(":")[0] for d in diffs] == expected
    with pytest.raises(InputError) as err:
        bs.check_shared_interface(sim, real)
    assert err.value.field == "policy_interface"
    for name in expected:
        assert name in str(err.value)
    assert "'deg'" in str(err.value) and "transfer delta is undefined" in str(err.value)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"observation": {}}, "interface.observation"),
        ({"observation": [1]}, "interface.observation"),
        ({"observation": {"q": 3}}, "interface.observation.q"),
        ({"observation": {"q": {"shape": ["a"]}}}, "interface.observation.q.shape"),
        ({"observation": {"q": {"shape": 5}}}, "interface.observation.q.shape"),
        ({"action_kind": "hybrid"}, "interface.action_kind"),
        ({"action_mode": "current"}, "interface.action_mode"),
        ({"action_hold": "cubic"}, "interface.action_hold"),
        ({"control_hz": 0}, "interface.control_hz"),
        ({"control_hz": math.nan}, "interface.control_hz"),
        ({"control_hz": True}, "interface.control_hz"),
        ({"action_bounds": (-1, 0, 1)}, "interface.action_bounds"),
        ({"action_bounds": (-1, math.inf)}, "interface.action_bounds"),
        ({"action_bounds": ("low", "high")}, "interface.action_bounds"),
        ({"assumed_latency_steps": -1}, "interface.assumed_latency_steps"),
        ({"assumed_latency_steps": 1.5}, "interface.assumed_latency_steps"),
        ({"assumed_latency_steps": True}, "interface.assumed_latency_steps"),
    ],
)
def test_bad_interface_fields(kwargs, field):
    args = {"observation": OBS, **kwargs}
    with pytest.raises(InputError) as err:
        PolicyInterface(**args)
    assert err.value.field == field
