"""CSV and JSON import/export: round trips, idempotence, atomic rejection of bad files."""

from __future__ import annotations

import csv
import importlib.resources
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.io import _cell, read_csv, read_json, write_csv
from bayes_s2r.evidence.ledger import ImportResult, Ledger
from bayes_s2r.evidence.records import PairedEval, SensitivityTrial

from .strategies import BAD_CELLS, BAD_VALUES, raw_content, records, unique_ids

EXAMPLE_CSV = importlib.resources.files("bayes_s2r") / "examples" / "ledger.csv"
# Files are written through tmp_path_factory; ledgers live in memory where the file itself
# is not under test (the SQLite transaction logic is the same), to keep the examples fast.
FUZZ = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _dicts(ledger):
    return [r.to_dict() for r in ledger.records()]


@pytest.fixture
def example_ledger(tmp_path):
    ledger = Ledger(tmp_path / "example.sqlite")
    ledger.import_csv(EXAMPLE_CSV)
    yield ledger
    ledger.close()


def test_example_ledger_imports_and_reimport_is_idempotent(example_ledger, tmp_path):
    counts = example_ledger.counts()
    assert counts == {
        "paired_eval": 11,
        "sensitivity_trial": 11,
        "execution_outcome": 5,
        "deployment_eval": 1,
        "realized_cost": 4,
    }
    before = raw_content(example_ledger.path)
    again = example_ledger.import_csv(EXAMPLE_CSV)
    assert again == ImportResult(str(EXAMPLE_CSV), 32, 0)
    assert raw_content(example_ledger.path) == before


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_example_round_trip(example_ledger, tmp_path, fmt):
    out = tmp_path / f"out.{fmt}"
    assert getattr(example_ledger, f"export_{fmt}")(out) == 32
    with Ledger(tmp_path / "copy.sqlite") as copy:
        assert getattr(copy, f"import_{fmt}")(out).added == 32
        assert _dicts(copy) == _dicts(example_ledger)
        assert copy.records() == example_ledger.records()


@FUZZ
@given(recs=st.lists(records, max_size=6).map(unique_ids))
def test_random_records_round_trip_through_csv_and_json(tmp_path_factory, recs):
    folder = tmp_path_factory.mktemp("rt")
    with Ledger(":memory:") as a:
        assert a.add_many(recs) == len(recs)
        a.export_csv(folder / "a.csv")
        a.export_json(folder / "a.json")
        for fmt in ("csv", "json"):
            with Ledger(":memory:") as b:
                assert getattr(b, f"import_{fmt}")(folder / f"a.{fmt}").added == len(recs)
                assert _dicts(b) == _dicts(a)
                assert getattr(b, f"import_{fmt}")(folder / f"a.{fmt}").added == 0


def test_single_kind_csv_with_kind_argument(tmp_path):
    f = tmp_path / "trials.csv"
    f.write_text("direction,level,successes,episodes\nlatency,0,47,50\nlatency,1,15,50\n\n")
    with Ledger(tmp_path / "l.sqlite") as ledger:
        with pytest.raises(InputError, match="kind"):
            ledger.import_csv(f)
        assert ledger.import_csv(f, kind="sensitivity_trial").added == 2
        assert ledger.import_csv(f, kind=SensitivityTrial).added == 0
        assert ledger.records() == [
            SensitivityTrial("latency", 0.0, 47, 50),
            SensitivityTrial("latency", 1.0, 15, 50),
        ]
        mixed = tmp_path / "mixed.csv"
        mixed.write_text("kind,candidate,executions,unsafe\nexecution_outcome,ft,3,0\n,ft,4,0\n")
        with pytest.raises(InputError, match=r"row 3: kind=''"):
            ledger.import_csv(mixed)
        with pytest.raises(
            InputError, match=r"row 2: kind='execution_outcome': expected 'paired_eval'"
        ):
            ledger.import_csv(mixed, kind="paired_eval")
        assert ledger.import_csv(mixed, kind="execution_outcome").added == 2


def test_bad_row_imports_nothing_and_names_row_field_value(example_ledger, tmp_path):
    rows = EXAMPLE_CSV.read_text().splitlines()
    assert rows[12].startswith("paired_eval,dr_narrow")
    rows[12] = rows[12].replace("paired_eval,dr_narrow,pi0,0,33", "paired_eval,dr_narrow,pi0,0,x")
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(rows) + "\n")
    with Ledger(tmp_path / "fresh.sqlite") as fresh:
        with pytest.raises(InputError) as err:
            fresh.import_csv(bad)
        assert len(fresh) == 0
    assert (
        "bad.csv, row 13: paired_eval.successes_treated='x': expected a whole number >= 0"
        in str(err.value)
    )
    before = raw_content(example_ledger.path)
    with pytest.raises(InputError, match="row 13"):
        example_ledger.import_csv(bad)
    assert raw_content(example_ledger.path) == before


@FUZZ
@given(recs=st.lists(records, min_size=1, max_size=5).map(unique_ids), data=st.data())
def test_one_corrupted_csv_cell_rejects_the_whole_file(tmp_path_factory, recs, data):
    folder = tmp_path_factory.mktemp("bad")
    with Ledger(":memory:") as ledger:
        ledger.add(PairedEval("base", 1, 2, 1, 2))
        before = raw_content(ledger)
        write_csv(recs, folder / "good.csv")
        with open(folder / "good.csv", newline="", encoding="utf-8") as f:
            table = list(csv.reader(f))
        i = data.draw(st.integers(0, len(recs) - 1))
        rec = recs[i]
        field = data.draw(st.sampled_from(sorted(rec.FIELDS)))
        bad = data.draw(st.sampled_from(BAD_CELLS[rec.FIELDS[field]]))
        table[i + 1][table[0].index(field)] = bad
        with open(folder / "bad.csv", "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows(table)
        with pytest.raises(InputError) as err:
            ledger.import_csv(folder / "bad.csv")
        _, sources = read_csv(
            folder / "good.csv"
        )  # where row i starts (cells may hold line breaks)
        assert f"{sources[i]}: {rec.KIND}.{field}" in str(err.value)
        assert raw_content(ledger) == before


@FUZZ
@given(recs=st.lists(records, min_size=1, max_size=5).map(unique_ids), data=st.data())
def test_one_corrupted_json_value_rejects_the_whole_file(tmp_path_factory, recs, data):
    folder = tmp_path_factory.mktemp("badjson")
    with Ledger(":memory:") as ledger:
        ledger.add(PairedEval("base", 1, 2, 1, 2))
        before = raw_content(ledger)
        items = [r.to_dict() for r in recs]
        i = data.draw(st.integers(0, len(recs) - 1))
        fields = sorted(f for f, p in recs[i].FIELDS.items() if p in BAD_VALUES and p != "json")
        field = data.draw(st.sampled_from(fields))
        items[i][field] = data.draw(st.sampled_from(BAD_VALUES[recs[i].FIELDS[field]]))
        (folder / "bad.json").write_text(json.dumps({"records": items}))
        with pytest.raises(InputError) as err:
            ledger.import_json(folder / "bad.json")
        assert f"records[{i}]: {recs[i].KIND}.{field}" in str(err.value)
        assert raw_content(ledger) == before


@FUZZ
@given(
    content=st.binary(max_size=300) | st.text(max_size=300).map(str.encode),
    suffix=st.sampled_from(["csv", "json"]),
    kind=st.none() | st.just("paired_eval"),
)
def test_random_file_content_is_input_error_or_a_valid_import(
    tmp_path_factory, content, suffix, kind
):
    folder = tmp_path_factory.mktemp("junk")
    with Ledger(":memory:") as ledger:
        ledger.add(PairedEval("base", 1, 2, 1, 2))
        before = raw_content(ledger)
        f = folder / f"junk.{suffix}"
        f.write_bytes(content)
        try:
            result = ledger.import_csv(f, kind=kind) if suffix == "csv" else ledger.import_json(f)
        except InputError as e:
            assert str(f) in str(e)
            assert raw_content(ledger) == before
        else:
            assert len(ledger) == 1 + result.added


@FUZZ
@given(
    header=st.lists(
        st.sampled_from(["kind", "candidate", "executions", "unsafe", "round", "id", "junk", ""]),
        max_size=6,
    ),
    rows=st.lists(
        st.lists(
            st.sampled_from(["", "execution_outcome", "ft", "3", "0", "-1", "x", " a"]), max_size=7
        ),
        max_size=4,
    ),
)
def test_random_csv_tables_are_input_error_or_a_valid_import(tmp_path_factory, header, rows):
    folder = tmp_path_factory.mktemp("tab")
    f = folder / "t.csv"
    with open(f, "w", newline="") as fh:
        csv.writer(fh).writerows([header, *rows])
    with Ledger(":memory:") as ledger:
        before = raw_content(ledger)
        try:
            result = ledger.import_csv(f)
        except InputError:
            assert raw_content(ledger) == before
        else:
            assert len(ledger) == result.added <= result.read


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "header row"),
        ("kind,kind\n", "each column named once"),
        (
            "kind,candidate,executions,unsafe\nexecution_outcome,ft,3,0,5\n",
            "row 2: row=.*at most 4 cells",
        ),
        ('kind,candidate\n"unterminated\n', "well-formed CSV"),
        (
            "kind,candidate,executions,unsafe,level\nexecution_outcome,ft,3,0,0.5\n",
            r"row 2: execution_outcome.level='0.5': expected a field among",
        ),
        (
            "kind,candidate,executions,unsafe\nexecution_outcome,ft,3,4\n",
            r"row 2: execution_outcome.unsafe=4: expected at most",
        ),
        ("kind,candidate\nno_such_kind,ft\n", r"row 2: kind='no_such_kind'"),
    ],
)
def test_malformed_csv_messages(tmp_path, text, match):
    f = tmp_path / "f.csv"
    f.write_text(text)
    with pytest.raises(InputError, match=match):
        read_csv(f)


@pytest.mark.parametrize(
    "text, match",
    [
        ("[1, 2", "well-formed JSON"),
        ('{"rows": []}', "rows"),
        ('{"records": {}}', "records"),
        ("3", "records"),
        ('[{"candidate": "x"}]', r"records\[0\]: record=.*kind"),
        (
            (
                '[{"kind": "paired_eval", "candidate": "x", "successes_treated": "3",'
                ' "episodes_treated": 5, "successes_control": 1, "episodes_control": 5}]'
            ),
            r"records\[0\]: paired_eval.successes_treated='3'",
        ),
        ("[" * 100000, "well-formed JSON|nested"),
    ],
)
def test_malformed_json_messages(tmp_path, text, match):
    f = tmp_path / "f.json"
    f.write_text(text)
    with pytest.raises(InputError, match=match):
        read_json(f)


def test_missing_unreadable_and_non_utf8_files(tmp_path):
    with Ledger(tmp_path / "l.sqlite") as ledger:
        missing = tmp_path / "missing.csv"
        with pytest.raises(InputError, match=r"missing.csv.*an existing CSV file"):
            ledger.import_csv(missing)
        with pytest.raises(InputError, match="not a folder"):
            ledger.import_json(tmp_path)
        latin = tmp_path / "latin.csv"
        latin.write_bytes("kind,candidate\nexecution_outcome,caf\xe9\n".encode("latin-1"))
        with pytest.raises(InputError, match="UTF-8"):
            ledger.import_csv(latin)
        if os.geteuid() != 0:  # root reads anything
            locked = tmp_path / "locked.json"
            locked.write_text("[]")
            locked.chmod(0)
            with pytest.raises(InputError, match="locked.json.*readable"):
                ledger.import_json(locked)
        with pytest.raises(InputError, match="not a folder"):
            ledger.export_csv(tmp_path)
        assert len(ledger) == 0


def test_csv_cells_keep_null_empty_and_lists_apart():
    assert _cell("json", None) == "null" and _cell("json", "") == '""' and _cell("json", []) == "[]"
    assert _cell("optstr", None) == "" and _cell("bool", False) == "false"
    assert _cell("floats", [0.1, -0.0]) == "[0.1, -0.0]" and _cell("float", 1e-300) == "1e-300"


def test_identical_trials_in_one_batch_are_all_kept(tmp_path):
    # one-episode matched pairs: many rows have the same content and no id of their own
    won, lost = PairedEval("dr", 1, 1, 0, 1), PairedEval("dr", 0, 1, 0, 1)
    batch = [won, won, lost, won]
    with Ledger(tmp_path / "a.sqlite") as ledger:
        assert ledger.add_many(batch) == 4
        assert ledger.add_many(batch) == 0          # the same batch again is a repeat
        assert ledger.add(won) is False             # so is a single record added later
        ids = [r.id for r in ledger.records()]
        assert ids == [won.id, f"{won.id}.2", lost.id, f"{won.id}.3"]
        assert sum(r.successes_treated for r in ledger.records()) == 3
        ledger.export_csv(tmp_path / "a.csv")
    csv = tmp_path / "plain.csv"    # the same trials as a file without ids
    csv.write_text("kind,candidate,successes_treated,episodes_treated,successes_control,episodes_control\n"
                   + "".join(f"paired_eval,dr,{r.successes_treated},1,0,1\n" for r in batch))
    with Ledger(tmp_path / "b.sqlite") as other:
        assert other.import_csv(csv).added == 4
        assert other.import_csv(csv).added == 0
        assert other.import_csv(tmp_path / "a.csv").added == 0   # the export names the same ids
        assert sorted(r.id for r in other.records()) == sorted(ids)


def test_summed_records_give_the_gains_fit_the_same_evidence(tmp_path):
    import numpy as np

    from bayes_s2r import Candidate, DeploymentEval
    from bayes_s2r.belief.data import prepare_gains

    cands = [Candidate(n, "adaptation", "data", method="DR") for n in ("a", "b")]
    rng = np.random.default_rng(0)
    rows = []
    for rnd, policy in ((0, "pi0"), (1, "pi1"), (1, "pi0")):
        for _ in range(30):
            cand = str(rng.choice(["a", "b"]))
            rows.append(PairedEval(cand, int(rng.integers(0, 2)), 1, int(rng.integers(0, 2)), 1,
                                   round=rnd, policy=policy))
        rows.append(DeploymentEval(policy, 10, 7, 0, round=rnd))
    rows.append(PairedEval("a", 3, 5, 2, 5, round=1, policy="pi1", objective="energy"))
    with Ledger(tmp_path / "s.sqlite") as ledger:
        ledger.add_many(rows)
        summed = ledger.summed_records()
        plain = ledger.records()
        pe = [r for r in summed if isinstance(r, PairedEval)]
        assert len(plain) == len(rows) and len(pe) < len(rows) - 3
        for kind in ("successes_treated", "episodes_treated", "successes_control", "episodes_control"):
            assert sum(getattr(r, kind) for r in pe) == sum(getattr(r, kind) for r in rows
                                                            if isinstance(r, PairedEval))
        assert {r.id for r in pe} <= {r.id for r in plain}
        # the deployment evaluations keep their places; the last record decides the policy
        a, b = prepare_gains(ledger, cands), prepare_gains(plain, cands)
    assert a.current_policy == b.current_policy == "pi0" and a.policies == b.policies
    for x, y in zip(a.data, b.data):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_new_identical_trial_next_to_numbered_ones_is_kept(tmp_path):
    won = PairedEval("dr", 1, 1, 0, 1)
    with Ledger(tmp_path / "n.sqlite") as ledger:
        assert ledger.add_many([won, won, won]) == 3
        ledger.export_json(tmp_path / "n.json")
        doc = json.loads((tmp_path / "n.json").read_text())
        rows = doc["records"]
        rows.append({k: v for k, v in rows[0].items() if k != "id"})   # one more, without an id
        (tmp_path / "more.json").write_text(json.dumps(doc))
        assert ledger.import_json(tmp_path / "more.json").added == 1
        assert ledger.import_json(tmp_path / "more.json").added == 0
        assert ledger.add_many([won, PairedEval("dr", 1, 1, 0, 1, id=f"{won.id}.2"), won]) == 0
        assert len(ledger) == 4
