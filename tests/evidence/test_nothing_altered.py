"""What a user records is stored exactly or refused with an InputError naming the field."""

from __future__ import annotations

import json

import pytest

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import (
    JSON_MAX_DEPTH,
    DecisionRecord,
    PairedEval,
    SystemIdRecord,
    record_from_dict,
)

from .strategies import raw_content

HEADER = "kind,candidate,successes_treated,episodes_treated,successes_control,episodes_control,round\n"
ROWS = "paired_eval,dr,3,10,2,10,35\npaired_eval,dr,1,10,1,10,36\n"


def _nested(depth, leaf=1):
    for _ in range(depth):
        leaf = [leaf]
    return leaf


# ----------------------------------------------------------------------------- cut CSV files
@pytest.mark.parametrize("cut", range(1, len(ROWS.splitlines()[-1]) + 1))
def test_csv_cut_in_its_last_row_is_refused_naming_the_row(tmp_path, cut):
    text = HEADER + ROWS[: len(ROWS) - cut]  # everything up to `cut` characters before the end
    path = tmp_path / "cut.csv"
    path.write_text(text)
    with Ledger(":memory:") as ledger:
        with pytest.raises(InputError, match=r"cut\.csv, row 3: row=.*line break") as err:
            ledger.import_csv(path)
        assert err.value.field == "row"
        assert len(ledger) == 0


def test_csv_without_final_line_break_is_refused_and_with_it_is_read(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text(HEADER + ROWS.rstrip("\n"))
    with Ledger(":memory:") as ledger, pytest.raises(InputError, match="row 3"):
        ledger.import_csv(path)
    for end in ("\n", "\r\n", "\n\n"):
        path.write_text(HEADER + ROWS.rstrip("\n") + end, newline="")
        with Ledger(":memory:") as ledger:
            assert ledger.import_csv(path).added == 2
            assert [r.round for r in ledger.records()] == [35, 36]


def test_csv_row_with_fewer_cells_than_the_header_is_refused(tmp_path):
    path = tmp_path / "short.csv"
    path.write_text(HEADER + "paired_eval,dr,3,10,2,10,35\npaired_eval,dr,1,10,1,10\n")
    with Ledger(":memory:") as ledger:
        with pytest.raises(InputError, match=r"short\.csv, row 3: row=.*7 cells.*it has 6"):
            ledger.import_csv(path)
        assert len(ledger) == 0


# ----------------------------------------------------------------------------- Unicode text
@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\ud83d\ude00"])
@pytest.mark.parametrize("field", ["candidate", "policy", "objective", "id"])
def test_text_with_surrogates_is_refused_naming_the_field(text, field):
    with pytest.raises(InputError, match="valid Unicode") as err:
        PairedEval(**{"candidate": "dr", "successes_treated": 1, "episodes_treated": 2,
                      "successes_control": 1, "episodes_control": 2, field: text})
    assert err.value.field == f"paired_eval.{field}"


def test_surrogate_in_an_imported_json_file_stores_nothing(tmp_path):
    path = tmp_path / "surr.json"
    rec = {"kind": "paired_eval", "candidate": "\ud800", "successes_treated": 1,
           "episodes_treated": 2, "successes_control": 1, "episodes_control": 2}
    path.write_text(json.dumps([rec]))  # ensure_ascii: the file holds the escape \ud800
    db = tmp_path / "l.sqlite"
    with Ledger(db) as ledger:
        ledger.add(PairedEval("dr", 1, 2, 1, 2))
        before = raw_content(ledger)
        with pytest.raises(InputError, match=r"records\[0\]: paired_eval.candidate='\\ud800'"):
            ledger.import_json(path)
        assert raw_content(ledger) == before
        ledger.export_csv(tmp_path / "out.csv")  # the ledger stays exportable
        ledger.export_json(tmp_path / "out.json")


def test_astral_characters_round_trip_exactly(tmp_path):
    rec = PairedEval("dr_😀", 1, 2, 1, 2, policy="π₀", id="é😀")
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.add(rec)
        assert ledger.get("é😀") == rec
        for fmt in ("csv", "json"):
            getattr(ledger, f"export_{fmt}")(tmp_path / f"out.{fmt}")
            with Ledger(":memory:") as copy:
                getattr(copy, f"import_{fmt}")(tmp_path / f"out.{fmt}")
                assert copy.records() == [rec]


def test_surrogates_inside_json_fields_and_meta_are_refused():
    with pytest.raises(InputError) as err:
        DecisionRecord(0, None, table={"a": ["x", "\ud800"]})
    assert err.value.field == "decision.table.a[1]"
    with pytest.raises(InputError, match="valid Unicode"):
        DecisionRecord(0, None, extra={"\udc00": 1})
    with Ledger(":memory:") as ledger, pytest.raises(InputError, match="meta.k"):
        ledger.set_meta("k", ["\ud800"])


# ----------------------------------------------------------------------------- integers
def test_csv_integers_are_read_exactly(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text(HEADER + "paired_eval,dr,1,9007199254740993,1,10,0\n")
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.import_csv(path)
        assert ledger.records()[0].episodes_treated == 9007199254740993
        ledger.export_csv(tmp_path / "out.csv")
        assert ledger.import_csv(tmp_path / "out.csv").added == 0  # no id conflict
        with Ledger(":memory:") as copy:
            copy.import_csv(tmp_path / "out.csv")
            assert copy.records() == ledger.records()


@pytest.mark.parametrize(
    "cell, value",
    [("50", 50), ("+50", 50), (" 50 ", 50), ("50.0", 50), ("5e1", 50), ("0" * 5000 + "7", 7),
     ("9223372036854775807", 2**63 - 1)],
)
def test_integer_cells_in_other_notations(cell, value):
    row = {"kind": "execution_outcome", "candidate": "a", "executions": cell, "unsafe": "0"}
    assert record_from_dict(row).executions == value


@pytest.mark.parametrize("cell", ["9223372036854775808", "1e19", "1" * 5000, "1e999999999", "50.5", "0x10"])
def test_integer_cells_out_of_range_or_not_whole_are_refused(cell):
    row = {"kind": "execution_outcome", "candidate": "a", "executions": cell, "unsafe": "0"}
    with pytest.raises(InputError) as err:
        record_from_dict(row)
    assert err.value.field == "execution_outcome.executions"
    assert len(str(err.value)) < 400


def test_whole_float_that_may_be_rounded_is_refused_for_a_count():
    with pytest.raises(InputError, match="without a decimal point"):
        record_from_dict({"kind": "execution_outcome", "candidate": "a",
                          "executions": 9007199254740993.0, "unsafe": 0}, coerce=False)


def test_huge_integers_are_input_errors_naming_the_field(tmp_path):
    huge = 10**5000
    with pytest.raises(InputError, match=r"paired_eval.successes_treated=<an integer of 5001 digits>"):
        PairedEval("dr", huge, 1, 1, 1)
    with pytest.raises(InputError, match=r"decision.table.n=<an integer of 5001 digits>"):
        DecisionRecord(0, None, table={"n": huge})
    with pytest.raises(InputError, match="realized_cost.real"):
        record_from_dict({"kind": "realized_cost", "candidate": "a", "real": huge}, coerce=False)
    with Ledger(":memory:") as ledger, pytest.raises(InputError, match="meta.k"):
        ledger.set_meta("k", {"n": huge})
    path = tmp_path / "huge.json"
    path.write_text('[{"kind": "decision", "round": 0, "chosen": null, "table": [' + "7" * 5000 + "]}]")
    with Ledger(":memory:") as ledger, pytest.raises(InputError, match=r"decision.table\[0\]=<an integer"):
        ledger.import_json(path)
    path.write_text(
        '[{"kind": "execution_outcome", "candidate": "a", "executions": ' + "7" * 5000 + ', "unsafe": 0}]'
    )
    with Ledger(":memory:") as ledger, pytest.raises(InputError, match="execution_outcome.executions"):
        ledger.import_json(path)


# ----------------------------------------------------------------------------- nested data
@pytest.mark.parametrize(
    "build, field",
    [
        (lambda v: SystemIdRecord("si", {"mass": {"mean": 1.0, "sd": v}}, 3), "system_id.estimates"),
        (lambda v: DecisionRecord(0, None, table=v), "decision.table"),
        (lambda v: DecisionRecord(0, None, extra={"x": v}), "decision.extra"),
    ],
)
def test_deeply_nested_json_fields_are_input_errors(build, field):
    for depth in (JSON_MAX_DEPTH + 1, 500, 5000):
        with pytest.raises(InputError, match="nested at most") as err:
            build(_nested(depth))
        assert err.value.field == field
    build(_nested(JSON_MAX_DEPTH - 3))  # within the limit


def test_deep_meta_and_deep_imported_files_are_input_errors(tmp_path):
    with Ledger(":memory:") as ledger:
        with pytest.raises(InputError, match="meta.state.*nested at most"):
            ledger.set_meta("state", {"a": _nested(500)})
        assert ledger.meta() == {}
    deep = "[" * 500 + "]" * 500
    for name, text in [
        ("deep.json", '[{"kind": "decision", "round": 0, "chosen": null, "table": ' + deep + "}]"),
        ("deep.csv", "kind,round,chosen,table\ndecision,0,," + deep + "\n"),
        ("deeper.csv", "kind,round,chosen,table\ndecision,0,," + "[" * 50_000 + "]" * 50_000 + "\n"),
    ]:
        (tmp_path / name).write_text(text)
        with Ledger(":memory:") as ledger:
            with pytest.raises(InputError, match="decision.table") as err:
                getattr(ledger, "import_" + name.split(".")[1])(tmp_path / name)
            assert "nested" in str(err.value) and len(str(err.value)) < 600
            assert len(ledger) == 0


def test_json_fields_with_too_many_values_are_input_errors():
    with pytest.raises(InputError, match="at most 100000 values"):
        DecisionRecord(0, None, table=list(range(100_001)))


def test_meta_holds_large_values_such_as_policy_parameters():
    params = {"policies": {f"pi{i}": [0.5] * 50_000 for i in range(4)}}
    with Ledger(":memory:") as ledger:
        assert ledger.set_meta("executor.policies", params) == params


def test_non_text_keys_in_a_record_are_refused_not_rewritten():
    with pytest.raises(InputError, match="a text key") as err:
        DecisionRecord(0, None, table={1: "a", "1": "b"})
    assert err.value.field.startswith("decision.table")


def test_identical_json_records_in_one_batch_are_stored_unchanged():
    table = {"dr": {"Q": 0.1}}
    rec = DecisionRecord(0, "dr", table=table)
    est = SystemIdRecord("si", {"mass": {"mean": 1.0, "sd": 0.1}}, 3)
    with Ledger(":memory:") as ledger:
        assert ledger.add_many([rec, rec, est, est]) == 4
        stored = ledger.records()
    assert [r.payload()["table"] for r in stored[:2]] == [table, table]
    assert [r.payload()["estimates"] for r in stored[2:]] == [{"mass": {"mean": 1.0, "sd": 0.1}}] * 2


def test_paired_counts_summing_past_64_bits_are_an_input_error():
    with Ledger(":memory:") as ledger:
        ledger.add_many([PairedEval("dr", 1, 2**62, 1, 2), PairedEval("dr", 1, 2**62 + 1, 1, 2)])
        with pytest.raises(InputError, match="paired_eval counts"):
            ledger.summed_records()
        assert len(ledger.records()) == 2
