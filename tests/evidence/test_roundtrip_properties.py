"""Property: any input is refused with an InputError naming a field, or stored and read back exactly.

The properties and their input strategies live in `benchmarks/fuzz_records.py`, which runs
them longer; here each runs a few hundred derandomized examples.
"""

from __future__ import annotations

import json

import fuzz_records as fz
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import DecisionRecord, PairedEval

PROPERTY = settings(
    max_examples=250,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.filter_too_much],
)


@PROPERTY
@given(data=fz.raw_records())
def test_any_mapping_is_refused_naming_a_field_or_stored_exactly(data):
    fz.check_record(data)


@PROPERTY
@given(recs=fz.record_lists)
def test_accepted_records_round_trip_through_csv_and_json_files(tmp_path_factory, recs):
    fz.check_files(recs, tmp_path_factory.mktemp("files"))


@PROPERTY
@given(recs=fz.record_lists, fmt=st.sampled_from(["csv", "json"]), where=st.sampled_from(fz.CUTS),
       fraction=st.floats(0.0, 1.0))
def test_a_cut_export_is_refused_or_an_exact_prefix(tmp_path_factory, recs, fmt, where, fraction):
    fz.check_truncated(recs, fmt, where, fraction, tmp_path_factory.mktemp("cut"))


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "paired_eval", "candidate": "\ud800", "successes_treated": 1, "episodes_treated": 2,
         "successes_control": 1, "episodes_control": 2},
        {"kind": "decision", "round": 0, "chosen": None, "table": fz.nested(500)},
        {"kind": "decision", "round": 0, "chosen": None, "extra": {"n": 10**5000}},
        {"kind": "execution_outcome", "candidate": "a", "executions": 10**5000, "unsafe": 0},
    ],
)
def test_the_checks_refuse_known_bad_inputs(data):
    assert fz.check_record(data) == "refused"


def test_the_checks_catch_an_altered_value(monkeypatch):
    # A checker that passes everything proves nothing: a parser that rounds must fail it.
    from bayes_s2r.evidence import records

    monkeypatch.setitem(records._PARSERS, "int", lambda f, v, c: int(float(v)))
    data = {"kind": "execution_outcome", "candidate": "a", "executions": 2**53 + 1, "unsafe": 0}
    with pytest.raises(AssertionError):
        fz.check_record(data)


def test_a_cut_that_changes_a_record_fails_the_truncation_check(tmp_path, monkeypatch):
    import bayes_s2r.evidence.io as io_mod

    monkeypatch.setattr(io_mod, "_check_complete", lambda text, path: None)  # the old reader
    recs = [PairedEval("dr", 1, 10, 1, 10, round=36)]
    with pytest.raises(AssertionError, match="differs"):
        fz.check_truncated(recs, "csv", "anywhere", 0.985, tmp_path)  # in the last cell
    assert fz.check_truncated([DecisionRecord(0, None)], "json", "anywhere", 0.5, tmp_path) == "refused"


def test_fuzz_records_benchmark_smoke(tmp_path, capsys):
    out = tmp_path / "fuzz.json"
    result = fz.main(["--examples", "5", "--seed", "3", "--out", str(out)])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert set(result) == {"benchmark", "machine", "settings", "results"}
    assert result["benchmark"] == "fuzz_records" and result["results"]["ok"] is True
    counts = result["results"]["counts"]
    assert sum(counts["record"].values()) == 5
    assert set(counts) >= {"record", "files"}


def test_input_error_messages_name_the_field():
    with pytest.raises(InputError) as err:
        fz.record_from_dict({"kind": "paired_eval", "candidate": "a\udc80", "successes_treated": 1,
                             "episodes_treated": 1, "successes_control": 1, "episodes_control": 1},
                            coerce=False)
    fz.check_refusal(err.value, {"kind": "paired_eval"})
