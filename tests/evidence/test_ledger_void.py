"""Taking a record back (`Ledger.void`) and refusing records that name unknown candidates."""

from __future__ import annotations

import sqlite3

import pytest

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.ledger import Ledger, check_candidates
from bayes_s2r.evidence.records import DecisionRecord, ExecutionOutcome, PairedEval

from .strategies import raw_content

TYPO = PairedEval("dr_typo_friction", 30, 50, 20, 50, id="typo")
GOOD = PairedEval("dr_wide", 30, 50, 20, 50)


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "l.sqlite") as led:
        led.add_many([GOOD, TYPO, ExecutionOutcome("dr_wide", 5, 0)])
        yield led


def test_void_keeps_the_record_but_leaves_it_out_of_reads(ledger, tmp_path):
    assert ledger.void("typo", "candidate name mistyped") == TYPO
    assert TYPO not in ledger.records() and GOOD in ledger.records()
    assert TYPO not in ledger.summed_records()
    assert ledger.records(include_void=True)[1] == TYPO
    assert ledger.records(PairedEval) == [GOOD]
    assert len(ledger) == 2 and ledger.counts() == {"paired_eval": 1, "execution_outcome": 1}
    assert ledger.get("typo") == TYPO and "typo" in ledger
    (entry,) = ledger.voided().items()
    assert entry[0] == "typo" and entry[1]["why"] == "candidate name mistyped"
    # never deleted: the row is still in the file
    assert "typo" in [row[1] for row in raw_content(ledger.path)[0]]
    # adding the same record again does not bring it back
    assert ledger.add(TYPO) is False and TYPO not in ledger.records()
    # exports hold the records in use
    assert ledger.export_csv(tmp_path / "out.csv") == 2


def test_void_survives_reopening(ledger):
    ledger.void("typo", "mistyped")
    path = ledger.path
    ledger.close()
    with Ledger(path) as again:
        assert again.voided()["typo"]["why"] == "mistyped"
        assert TYPO not in again.records()


@pytest.mark.parametrize(
    "ident, why, match",
    [
        ("nope", "x", "id='nope': expected the id of a stored record"),
        ("typo", "", "why='': expected a non-empty reason"),
        ("typo", "  ", "why='  ': expected a non-empty reason"),
        ("typo", None, "why=None"),
        ("typo", "\ud800", "why='\\\\ud800': expected valid Unicode"),
        (7, "x", "id=7"),
    ],
)
def test_bad_voids_are_input_errors_that_change_nothing(ledger, ident, why, match):
    before = raw_content(ledger.path)
    with pytest.raises(InputError, match=match):
        ledger.void(ident, why)
    assert raw_content(ledger.path) == before


def test_voiding_twice_is_an_input_error(ledger):
    ledger.void("typo", "mistyped")
    before = raw_content(ledger.path)
    with pytest.raises(InputError, match="expected a record not already void"):
        ledger.void("typo", "again")
    assert raw_content(ledger.path) == before


def test_a_version_2_ledger_migrates_and_keeps_its_records(tmp_path):
    path = tmp_path / "v2.sqlite"
    with Ledger(path) as led:
        led.add(GOOD)
    conn = sqlite3.connect(path)  # roll the file back to schema version 2
    conn.execute("DROP TABLE voids")
    conn.execute("DELETE FROM schema_version WHERE version = 3")
    conn.commit()
    conn.close()
    with Ledger(path) as led:
        assert led.records() == [GOOD] and led.voided() == {}


def test_import_with_candidates_refuses_unknown_names_before_storing(tmp_path):
    path = tmp_path / "ev.csv"
    path.write_text(
        "kind,candidate,successes_treated,episodes_treated,successes_control,episodes_control\n"
        "paired_eval,dr_wide,3,5,2,5\npaired_eval,dr_typo,3,5,2,5\n"
    )
    with Ledger(tmp_path / "l.sqlite") as led:
        before = raw_content(led)
        with pytest.raises(InputError) as err:
            led.import_csv(path, candidates=["dr_wide", "ft_real"])
        assert str(err.value).startswith(
            f"{path}, row 3: paired_eval.candidate='dr_typo': expected a candidate in the set"
        )
        assert "'dr_wide', 'ft_real'" in str(err.value)
        assert raw_content(led) == before
        assert led.import_csv(path).added == 2  # without the set the file is imported


def test_check_candidates_reads_candidate_and_chosen_fields():
    from bayes_s2r.vocab import Candidate

    cands = [Candidate("dr", "adaptation", "data")]
    check_candidates([PairedEval("dr", 1, 2, 1, 2), DecisionRecord(0, None)], cands)
    with pytest.raises(InputError, match=r"records\[1\]: decision.chosen='ft'"):
        check_candidates([PairedEval("dr", 1, 2, 1, 2), DecisionRecord(0, "ft")], cands)
    with pytest.raises(InputError, match=r"candidates\[0\]"):
        check_candidates([], [3])
