"""Random and corrupted inputs to the record validators end in InputError, never another error."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.io import _cell
from bayes_s2r.evidence.records import RECORD_TYPES, PairedEval, Record, record_from_dict

from .strategies import BAD_CELLS, BAD_VALUES, junk_dicts, junk_values, records

FUZZ = settings(max_examples=80, deadline=None)


@FUZZ
@given(
    data=junk_dicts,
    kind=st.none() | st.sampled_from(sorted(RECORD_TYPES)) | junk_values,
    coerce=st.booleans(),
)
def test_junk_mapping_gives_record_or_input_error(data, kind, coerce):
    try:
        rec = record_from_dict(data, kind=kind if isinstance(kind, str) else None, coerce=coerce)
    except InputError as e:
        assert str(e)  # a message naming field, value and expectation
        return
    assert isinstance(rec, Record)  # the junk happened to be a valid record


@FUZZ
@given(value=junk_values | st.lists(junk_values, max_size=2))
def test_junk_top_level_value_is_input_error(value):
    with pytest.raises(InputError):
        record_from_dict(value)


@FUZZ
@given(rec=records, data=st.data())
def test_corrupted_csv_cell_is_input_error_naming_the_field(rec, data):
    payload = rec.payload()
    row = {
        "kind": rec.KIND,
        "id": rec.id,
        **{f: _cell(p, payload[f]) for f, p in rec.FIELDS.items()},
    }
    assert record_from_dict(row).to_dict() == rec.to_dict()  # the clean row parses back exactly
    field = data.draw(st.sampled_from(sorted(rec.FIELDS)))
    bad = data.draw(st.sampled_from(BAD_CELLS[rec.FIELDS[field]]))
    with pytest.raises(InputError) as err:
        record_from_dict({**row, field: bad})
    assert err.value.field.startswith(f"{rec.KIND}.{field}")
    assert repr(bad) in str(err.value) or field in str(err.value)


@FUZZ
@given(rec=records, data=st.data())
def test_corrupted_typed_value_is_input_error_naming_the_field(rec, data):
    d = rec.to_dict()
    choices = sorted(f for f, p in rec.FIELDS.items() if p in BAD_VALUES)
    field = data.draw(st.sampled_from(choices))
    bad = data.draw(st.sampled_from(BAD_VALUES[rec.FIELDS[field]]))
    with pytest.raises(InputError) as err:
        record_from_dict({**d, field: bad}, coerce=False)
    assert err.value.field.startswith(f"{rec.KIND}.{field}")


@FUZZ
@given(rec=records)
def test_typed_dict_round_trip_and_stable_id(rec):
    again = record_from_dict(rec.to_dict(), coerce=False)
    assert again == rec and again.to_dict() == rec.to_dict()
    no_id = {k: v for k, v in rec.to_dict().items() if k != "id"}
    assert record_from_dict(no_id, coerce=False).id == rec.content_hash()


def test_content_hash_is_stable_and_content_sensitive():
    a = PairedEval("dr_wide", 40, 50, 30, 50)
    assert a.id == PairedEval("dr_wide", 40, 50, 30, 50).id == a.content_hash()
    assert a.id != PairedEval("dr_wide", 40, 50, 30, 50, round=1).id
    assert PairedEval("dr_wide", 40, 50, 30, 50, id="trial-7").id == "trial-7"
    assert dataclasses.replace(a, id="x") != a


@pytest.mark.parametrize(
    "data, field, text",
    [
        ({"kind": ["paired_eval"]}, "kind", "one of"),
        ({"kind": "paired_eval", 1: 2, "zz": 3}, "paired_eval.1", "a field among"),
        (
            {
                "kind": "paired_eval",
                "candidate": "a",
                "successes_treated": 10**400,
                "episodes_treated": 1,
                "successes_control": 0,
                "episodes_control": 1,
            },
            "paired_eval.successes_treated",
            "< 2**63",
        ),
        (
            {
                "kind": "sensitivity_trial",
                "direction": "a",
                "level": 10**400,
                "successes": 0,
                "episodes": 1,
            },
            "sensitivity_trial.level",
            "finite",
        ),
    ],
)
def test_inputs_that_used_to_escape_as_other_errors(data, field, text):
    with pytest.raises(InputError) as err:
        record_from_dict(data, coerce=False)
    assert err.value.field == field and text in str(err.value)


def test_row_error_message_names_field_value_and_expectation():
    with pytest.raises(
        InputError, match=r"paired_eval.successes_treated='x': expected a whole number >= 0"
    ):
        record_from_dict(
            {
                "kind": "paired_eval",
                "candidate": "a",
                "successes_treated": "x",
                "episodes_treated": "50",
                "successes_control": "1",
                "episodes_control": "50",
            }
        )
