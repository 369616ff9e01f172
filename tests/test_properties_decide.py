"""Property: any input to `fit_gains` or `decide` is refused with an InputError naming a
field, or gives a valid answer.

The properties and their input strategies live in `benchmarks/fuzz_decide.py`, which runs
them longer; here each runs derandomized, with fixed shapes so that few programs compile.
"""

from __future__ import annotations

import json

import fuzz_decide as fz
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import bayes_s2r as bs
from bayes_s2r.errors import InputError


def _property(examples: int):
    return settings(max_examples=examples, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@_property(150)
@given(belief=fz.beliefs(), candidates=fz.candidate_lists(), budget=fz.budgets(), weights=fz.weight_sets(),
       risk=fz.risks, options=fz.decide_options())
def test_decide_refuses_naming_a_field_or_answers_validly(belief, candidates, budget, weights, risk, options):
    fz.check_decide(belief, candidates, budget, weights, risk, options)


@_property(100)  # an accepted input runs a short SVI fit
@given(evidence=fz.evidence_lists(), candidates=fz.fit_candidate_lists(), options=fz.fit_options())
def test_fit_gains_refuses_naming_a_field_or_gives_gains_in_range(evidence, candidates, options):
    fz.check_fit(evidence, candidates, options)


# ----------------------------------------------------------------------------- known cases

NAMES = ["dr", "ft"]
CANDS = [bs.Candidate("dr", "adaptation", "data", cost=bs.Cost(compute=0.1)),
         bs.Candidate("ft", "adaptation", "optimization", cost=bs.Cost(real=0.1), touches_robot=True)]


def _draws(value: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    draws = 0.05 + 0.01 * rng.standard_normal((200, 2))
    draws[:, 1] += value
    return draws


@pytest.mark.parametrize("value", [1e50, 1e51, -1e50, 1.5, -1.2])
def test_from_draws_refuses_gains_off_the_success_rate_scale(value):
    with pytest.raises(InputError) as err:
        bs.GainBelief.from_draws(NAMES, _draws(value))
    assert err.value.field == "draws[:, 1] (ft)" and "[-1, 1]" in str(err.value)


def test_from_draws_accepts_the_ends_of_the_scale_and_other_objectives_on_their_own():
    draws = np.clip(_draws(0.0) * 40, -1.0, 1.0)
    assert bs.GainBelief.from_draws(NAMES, draws).draws.max() == 1.0
    energy = bs.GainBelief.from_draws(["dr", "dr@energy"], np.column_stack([draws[:, 0], 50 * draws[:, 1]]))
    assert energy.draws[:, 1].max() == 50.0
    with pytest.raises(InputError) as err:  # finite, whatever the scale
        bs.GainBelief.from_draws(["dr", "dr@energy"], np.column_stack([draws[:, 0], np.full(200, np.inf)]))
    assert err.value.field == "draws"


@pytest.mark.parametrize("value", [1e50, 1e51])
def test_decide_refuses_a_belief_built_off_the_scale(value):
    belief = bs.GainBelief(NAMES, _draws(value))  # built directly: no check of its own ran
    with pytest.raises(InputError) as err:
        bs.decide(belief, CANDS, bs.Budget(1, 1, 1), bs.ResourceWeights(), allow_bad_belief=True,
                  cvu_samples=8)
    assert err.value.field == "belief.draws[:, 1] (ft)"


@pytest.mark.parametrize("risk", [5, "low", object()])
def test_decide_refuses_a_risk_that_is_no_risk_belief(risk):
    belief = bs.GainBelief.from_draws(NAMES, _draws(0.0))
    with pytest.raises(InputError) as err:
        bs.decide(belief, CANDS, bs.Budget(1, 1, 1), bs.ResourceWeights(), risk=risk, cvu_samples=8)
    assert err.value.field == "risk"


def test_the_decide_check_catches_an_unchecked_belief(monkeypatch):
    # A checker that passes everything proves nothing: without the range check at decide's
    # boundary, a belief off the scale must fail the property.
    from bayes_s2r.belief import posterior

    monkeypatch.setattr(posterior, "check_gain_range", lambda *a, **k: None)
    belief = bs.GainBelief(NAMES, _draws(1e51))
    with pytest.raises((AssertionError, IndexError)):
        fz.check_decide(belief, CANDS, bs.Budget(1, 1, 1), bs.ResourceWeights(), None,
                        {"allow_bad_belief": True, "cvu_samples": 8, "terminal": True})


def test_decide_refuses_candidates_that_are_no_list():
    belief = bs.GainBelief.from_draws(NAMES, _draws(0.0))
    with pytest.raises(InputError, match="candidates"):
        bs.decide(belief, None, bs.Budget(1, 1, 1), bs.ResourceWeights(), cvu_samples=8)


def test_decide_refuses_a_seed_past_64_bits():
    belief = bs.GainBelief.from_draws(NAMES, _draws(0.0))
    with pytest.raises(InputError, match="seed"):
        bs.decide(belief, CANDS[:1], bs.Budget(1, 1, 1), bs.ResourceWeights(), cvu_samples=8, seed=2**64)


def test_fit_gains_refuses_an_absurd_number_of_steps():
    with pytest.raises(InputError, match="svi_steps"):
        bs.fit_gains([bs.PairedEval("dr", 5, 10, 4, 10)], CANDS[:1], method="svi", svi_steps=10**400)


def test_fuzz_decide_benchmark_smoke(tmp_path, capsys):
    out = tmp_path / "fuzz.json"
    result = fz.main(["--examples", "5", "--fit-examples", "2", "--seed", "3", "--out", str(out)])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert set(result) == {"benchmark", "machine", "settings", "results"}
    assert result["benchmark"] == "fuzz_decide" and result["results"]["ok"] is True, result["results"]
    counts = result["results"]["counts"]
    assert sum(counts["decide"].values()) == 5 and sum(counts["fit"].values()) == 2
