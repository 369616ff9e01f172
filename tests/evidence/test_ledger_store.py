"""The SQLite ledger: append-only, idempotent, atomic, transactional meta, migrations."""

from __future__ import annotations

import sqlite3

import pytest

import bayes_s2r as bs
from bayes_s2r.errors import InputError
from bayes_s2r.evidence import ledger as ledger_mod
from bayes_s2r.evidence.ledger import MIGRATIONS, SCHEMA_VERSION, Ledger, Migration, migrate
from bayes_s2r.evidence.records import ExecutionOutcome, PairedEval, Record, SensitivityTrial

from .strategies import raw_content

A = PairedEval("dr_wide", 38, 50, 28, 50)
B = SensitivityTrial("latency", 0.5, 36, 50)
C = ExecutionOutcome("ft_real", 40, 0)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "ledger.sqlite")


def test_add_is_idempotent_and_keeps_insertion_order(path):
    with Ledger(path) as ledger:
        assert ledger.add(B) is True
        assert ledger.add(A) is True
        assert ledger.add(B) is False  # identical record: nothing changes
        assert ledger.add_many([C, A]) == 1
        assert len(ledger) == 3
        assert ledger.records() == [B, A, C]
        assert ledger.records("paired_eval") == [A]
        assert ledger.records(SensitivityTrial) == [B]
        assert ledger.counts() == {"paired_eval": 1, "sensitivity_trial": 1, "execution_outcome": 1}
        assert A in ledger and A.id in ledger and "nope" not in ledger
        assert ledger.get(C.id) == C and ledger.get("nope") is None
        assert list(ledger) == [B, A, C]
    with Ledger(path, create=False) as again:  # persisted
        assert again.records() == [B, A, C]


def test_public_name_and_journal_mode(path):
    assert bs.Ledger is Ledger
    with Ledger(path) as ledger:
        ledger.add(A)
        assert ledger._db().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert ledger.schema_version == SCHEMA_VERSION


def test_conflicting_record_under_existing_id_is_rejected(path):
    with Ledger(path) as ledger:
        ledger.add(PairedEval("dr_wide", 38, 50, 28, 50, id="trial-1"))
        before = raw_content(path)
        with pytest.raises(InputError, match=r"paired_eval\.id='trial-1'.*different paired_eval"):
            ledger.add(PairedEval("dr_wide", 30, 50, 28, 50, id="trial-1"))
        with pytest.raises(InputError, match="trial-1"):  # ids are global across kinds
            ledger.add(ExecutionOutcome("ft_real", 1, 0, id="trial-1"))
        assert raw_content(path) == before


def test_add_many_is_all_or_nothing(path):
    with Ledger(path) as ledger:
        ledger.add(A)
        before = raw_content(path)
        clash = PairedEval("x", 1, 2, 1, 2, id=B.id)
        with pytest.raises(InputError, match=r"records\[2\]"):
            ledger.add_many([B, C, clash])
        assert raw_content(path) == before
        with pytest.raises(InputError, match=r"records\[1\]"):
            ledger.add_many([B, "not a record"])
        with pytest.raises(InputError, match=r"records\[1\]"):  # a clash inside the batch itself
            ledger.add_many(
                [PairedEval("x", 1, 2, 1, 2, id="k"), PairedEval("y", 1, 2, 1, 2, id="k")]
            )
        assert raw_content(path) == before


def test_meta_is_transactional_json(path):
    with Ledger(path) as ledger:
        assert ledger.get_meta("round", default=-1) == -1
        assert ledger.set_meta("round", 2) == 2
        ledger.set_meta("budget", {"real": 10.0, "compute": [1, 2]})
        ledger.set_meta("round", 3)
        assert ledger.get_meta("round") == 3
        assert ledger.meta() == {"budget": {"compute": [1, 2], "real": 10.0}, "round": 3}
        before = raw_content(path)
        for key, value in [("", 1), (3, 1), ("x", float("nan")), ("x", object())]:
            with pytest.raises(InputError):
                ledger.set_meta(key, value)
        with (
            pytest.raises(RuntimeError),
            ledger.transaction(),
        ):  # any error rolls the whole group back
            ledger.set_meta("round", 4)
            ledger.add(C)
            raise RuntimeError("crash between writes")
        assert raw_content(path) == before
        with ledger.transaction():
            with ledger.transaction():  # nested: joins the outer one
                ledger.add(C)
            ledger.set_meta("round", 4)
        assert ledger.get_meta("round") == 4 and C in ledger


def test_records_kind_argument_is_validated(path):
    with Ledger(path) as ledger:
        for bad in ("nope", 3, int, Record):
            with pytest.raises(InputError, match="kind"):
                ledger.records(bad)


def test_closed_ledger_refuses_use(path):
    ledger = Ledger(path)
    ledger.close()
    ledger.close()  # idempotent
    with pytest.raises(InputError, match="closed"):
        ledger.add(A)
    assert "closed" in repr(ledger)


def test_bad_paths_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="an existing ledger file"):
        Ledger(tmp_path / "missing.sqlite", create=False)
    assert not (tmp_path / "missing.sqlite").exists()
    with pytest.raises(InputError, match="not a folder"):
        Ledger(tmp_path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database, just text" * 40)
    with pytest.raises(InputError, match="junk.sqlite"):
        Ledger(junk)
    assert junk.read_bytes() == b"this is not a database, just text" * 40
    other = tmp_path / "other.sqlite"  # a SQLite file of another program
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE schema_version (version INTEGER)")
    conn.execute("INSERT INTO schema_version VALUES (2)")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match="missing"):
        Ledger(other)
    foreign = tmp_path / "foreign.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE photos (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match=r"other tables: \['photos'\]"):
        Ledger(foreign)
    conn = sqlite3.connect(foreign)
    assert _tables(conn) == [("table", "photos")]  # nothing added to it
    conn.close()


# ----------------------------------------------------------------------------- migrations
# The schema as version 1 of the code wrote it, frozen here on purpose: migrating a real
# v1 file must keep working even when the migration list changes.
V1_SCHEMA = [
    (
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
        " applied_at TEXT NOT NULL)"
    ),
    (
        "CREATE TABLE records (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
        " kind TEXT NOT NULL, payload TEXT NOT NULL)"
    ),
    (
        "INSERT INTO schema_version VALUES"
        " (1, 'evidence records and schema history', '2026-01-01T00:00:00+00:00')"
    ),
]


def _tables(conn):
    return sorted(
        conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
    )


def test_first_migration_matches_the_frozen_v1_schema(tmp_path):
    a, b = (
        sqlite3.connect(tmp_path / "a.sqlite", isolation_level=None),
        sqlite3.connect(tmp_path / "b.sqlite"),
    )
    assert migrate(a, target=1) == 1
    for sql in V1_SCHEMA:
        b.execute(sql)
    b.commit()
    assert _tables(a) == _tables(b)
    sql = "SELECT sql FROM sqlite_master WHERE name = 'records'"
    assert a.execute(sql).fetchone() == b.execute(sql).fetchone()


def test_open_v1_ledger_migrates_forward_and_keeps_records(path):
    conn = sqlite3.connect(path)
    for sql in V1_SCHEMA:
        conn.execute(sql)
    for rec in (A, B):  # records as v1 stored them: canonical JSON under the stable id
        conn.execute(
            "INSERT INTO records (id, kind, payload) VALUES (?, ?, ?)",
            (rec.id, rec.KIND, ledger_mod._canonical(rec)),
        )
    conn.commit()
    conn.close()
    with Ledger(path) as ledger:
        assert ledger.schema_version == SCHEMA_VERSION == MIGRATIONS[-1].version
        assert ledger.records() == [A, B]
        assert ledger.add(A) is False
        ledger.set_meta("round", 1)  # the v2 table exists
        assert ledger.records("paired_eval") == [A]
    _, meta, versions = raw_content(path)
    assert [v for (v,) in versions] == [m.version for m in MIGRATIONS]
    assert meta == [("round", "1")]


def test_newer_schema_is_refused(path):
    with Ledger(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_version VALUES (99, 'from the future', 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match=r"schema_version=99: expected at most"):
        Ledger(path)


def test_failed_migration_step_rolls_back(path, monkeypatch):
    with Ledger(path) as ledger:
        ledger.add(A)
    before = raw_content(path)
    broken = Migration(SCHEMA_VERSION + 1, "broken", ("CREATE TABLE extra (x)", "THIS IS NOT SQL"))
    monkeypatch.setattr(ledger_mod, "MIGRATIONS", (*MIGRATIONS, broken))
    conn = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError):
        migrate(conn, target=broken.version)
    assert ledger_mod.schema_version(conn) == SCHEMA_VERSION
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'extra'").fetchone() is None
    conn.close()
    assert raw_content(path) == before


def test_migrations_are_ordered_and_contiguous():
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))


def test_readers_open_and_read_while_a_write_is_in_progress(path):
    with Ledger(path) as writer:
        writer.add(A)
        with writer.transaction():
            writer.add(B)
            with Ledger(path, create=False, timeout=0.2) as reader:  # no wait for the writer's lock
                assert reader.records() == [A]
        with Ledger(path, create=False) as reader:
            assert reader.records() == [A, B]
