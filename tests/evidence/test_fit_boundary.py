"""`fit_gains` refuses bad arguments at its boundary, and fits a ledger once a typo is voided."""

from __future__ import annotations

import pytest

import bayes_s2r.belief.fit as fit_mod
from bayes_s2r.belief.fit import fit_gains
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import PairedEval, PairedReturns
from bayes_s2r.vocab import Candidate

CANDS = [Candidate("dr_wide", "adaptation", "data", method="DR"),
         Candidate("dr_narrow", "adaptation", "data", method="DR")]
EVIDENCE = [PairedEval("dr_wide", 30, 50, 20, 50), PairedEval("dr_narrow", 25, 50, 20, 50)]


class _Reached(Exception):
    """Raised in place of the fit once the arguments passed the checks."""


@pytest.fixture
def reached(monkeypatch):
    seen = {}

    def fake_prepare(evidence, candidates, **kw):
        seen.update(evidence=evidence, candidates=candidates, **kw)
        raise _Reached

    monkeypatch.setattr(fit_mod, "prepare_gains", fake_prepare)
    return seen


@pytest.mark.parametrize(
    "kwargs, field, text",
    [
        ({"candidates": None}, "candidates", "a sequence of Candidate"),
        ({"candidates": "dr_wide"}, "candidates", "a sequence of Candidate"),
        ({"seed": 2**70}, "seed", "< 2**63"),
        ({"seed": 10**5000}, "seed", "< 2**63"),
        ({"seed": -1}, "seed", ">= 0"),
        ({"objective": 5}, "objective", "an objective name"),
        ({"objective": None}, "objective", "an objective name"),
        ({"objective": "nope"}, "objective", "an objective of the evidence ['success']"),
    ],
)
def test_bad_arguments_are_input_errors_naming_them(kwargs, field, text):
    args = {"evidence": EVIDENCE, "candidates": CANDS, **kwargs}
    with pytest.raises(InputError) as err:
        fit_gains(args.pop("evidence"), args.pop("candidates"), **args)
    assert err.value.field == field and text in str(err.value)
    assert len(str(err.value)) < 300


def test_an_objective_of_the_evidence_or_the_candidates_is_accepted(reached):
    evidence = [*EVIDENCE, PairedReturns("dr_wide", [1.0], [0.5], objective="return")]
    with pytest.raises(_Reached):
        fit_gains(evidence, CANDS, objective="return")
    assert reached["objective"] == "return"
    cands = [Candidate("dr_wide", "adaptation", "data", objectives=("success", "energy"))]
    with pytest.raises(_Reached):
        fit_gains(EVIDENCE[:1], cands, objective="energy")
    with pytest.raises(InputError, match=r"evidence \['return', 'success'\]"):
        fit_gains(evidence, CANDS, objective="retrun")


def test_a_generator_of_records_and_of_candidates_is_read_once(reached):
    with pytest.raises(_Reached):
        fit_gains((r for r in EVIDENCE), (c for c in CANDS))
    assert reached["evidence"] == EVIDENCE and list(reached["candidates"]) == CANDS


def test_a_voided_mistyped_record_lets_the_ledger_fit_again(tmp_path):
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.add_many([*EVIDENCE, PairedEval("dr_typo_friction", 30, 50, 20, 50, id="typo")])
        with pytest.raises(InputError, match="dr_typo_friction"):
            fit_gains(ledger, CANDS, method="svi", svi_steps=20, num_samples=10, num_chains=1)
        ledger.void("typo", "candidate name mistyped")
        belief = fit_gains(ledger, CANDS, method="svi", svi_steps=200, num_samples=50, num_chains=1)
    assert list(belief.names) == ["dr_wide", "dr_narrow"]
