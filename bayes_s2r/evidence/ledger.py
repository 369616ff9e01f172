"""The evidence ledger: an append-only SQLite store of evidence records.

A `Ledger` is one SQLite file (standard-library `sqlite3`, WAL journal). Records are
stored as canonical JSON under their stable id; adding the same record again changes
nothing, and a different record under an id already used is refused. Within one batch,
identical records without ids are distinct trials and are all stored (see `add_many`). Every write is one
transaction, so a rejected input or a process killed mid-import leaves the ledger as it
was. Nothing is ever deleted: a record that should not have been stored (a mistyped
candidate name) is taken back with `void`; it stays in the file with the reason, and the
reads that fits use leave it out. A small key/value `meta` table holds campaign state
(mutable, unlike evidence).

The schema carries a version; `MIGRATIONS` lists the forward steps, applied in order when
an older file is opened.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, Self

from bayes_s2r.errors import InputError, shown
from bayes_s2r.evidence.records import (
    RECORD_TYPES,
    PairedEval,
    Record,
    _check_text,
    check_json,
    record_from_dict,
)
from bayes_s2r.evidence.schema import MIGRATIONS, SCHEMA_VERSION, Migration

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "ImportResult", "Ledger", "Migration", "check_candidates", "migrate"]


class ImportResult(NamedTuple):
    """What one import did.

    Attributes:
        path: the file read.
        read: number of records in the file.
        added: number of them that were new (the rest were already stored, identical).
    """

    path: str
    read: int
    added: int


def _canonical(record: Record) -> str:
    return json.dumps(record.to_dict(), sort_keys=True, allow_nan=False, separators=(",", ":"))


def schema_version(conn: sqlite3.Connection) -> int:
    """The schema version of an open database (0 for an empty file)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if row is None:
        return 0
    (version,) = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
    return int(version)


def migrate(conn: sqlite3.Connection, target: int | None = None) -> int:
    """Apply the forward migrations up to `target` (default: the latest); return the version.

    Each step runs in its own `BEGIN IMMEDIATE` transaction and re-reads the version inside
    it, so two processes opening one old file at once migrate it once. The connection must
    be in autocommit mode (`isolation_level=None`).

    Raises:
        InputError: when the file's schema is newer than this code knows.
    """
    target = SCHEMA_VERSION if target is None else target
    current = schema_version(conn)
    if current > SCHEMA_VERSION:
        raise InputError(
            "schema_version",
            current,
            f"at most {SCHEMA_VERSION} (the file was written by a newer bayes_s2r)",
        )
    for step in MIGRATIONS:
        if step.version <= current:
            continue  # no lock taken: opening a current ledger never waits for a writer
        if step.version > target:
            break
        conn.execute("BEGIN IMMEDIATE")
        try:
            if schema_version(conn) >= step.version:
                conn.execute("ROLLBACK")
                continue
            for sql in step.statements:
                conn.execute(sql)
            conn.execute(
                "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                (
                    step.version,
                    step.description,
                    datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                ),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return schema_version(conn)


META_MAX_ITEMS = 10_000_000

# Fields that name a candidate, per record kind.
CANDIDATE_FIELDS = {
    kind: tuple(f for f in ("candidate", "chosen") if f in cls.FIELDS)
    for kind, cls in RECORD_TYPES.items()
}


def check_candidates(
    records: Iterable[Record], candidates: Iterable[Any], *, where: Callable[[int], str] | None = None
) -> None:
    """Refuse a record naming a candidate outside `candidates` (candidates or names).

    Raises:
        InputError: naming the record's position, the field, the unknown name and the
            names in the set.
    """
    names = set()
    for i, c in enumerate(candidates):
        name = getattr(c, "name", c)
        if not isinstance(name, str):
            raise InputError(f"candidates[{i}]", c, "a Candidate or a candidate name")
        names.add(name)
    for i, rec in enumerate(records):
        for f in CANDIDATE_FIELDS.get(rec.KIND, ()):
            value = getattr(rec, f)
            if value is not None and value not in names:
                raise InputError(
                    f"{rec.KIND}.{f}",
                    value,
                    f"a candidate in the set {sorted(names)}",
                    where=where(i) if where else f"records[{i}]",
                )


def _resolve_kind(kind: str | type[Record] | None) -> str | None:
    if kind is None:
        return None
    if isinstance(kind, type) and issubclass(kind, Record) and getattr(kind, "KIND", None):
        return kind.KIND
    if isinstance(kind, str) and kind in RECORD_TYPES:
        return kind
    raise InputError("kind", kind, f"a record kind among {sorted(RECORD_TYPES)} or a record class")


class Ledger:
    """Append-only evidence store in one SQLite file.

    Args:
        path: the SQLite file; created (with its parent folder) unless `create` is False.
        create: when False, a missing file is an InputError instead of a new ledger.
        timeout: seconds to wait for another process's write lock.

    Example:
        >>> import tempfile, os
        >>> from bayes_s2r.evidence.records import PairedEval
        >>> folder = tempfile.mkdtemp()
        >>> with Ledger(os.path.join(folder, "ledger.sqlite")) as ledger:
        ...     rec = PairedEval("dr_wide", 40, 50, 31, 50)
        ...     ledger.add(rec), ledger.add(rec), len(ledger)
        (True, False, 1)
    """

    def __init__(self, path: str | os.PathLike, *, create: bool = True, timeout: float = 30.0):
        self.path = str(path)
        self._timeout = float(timeout)
        memory = self.path == ":memory:"
        if not memory:
            p = Path(self.path)
            if p.is_dir():
                raise InputError("path", self.path, "a ledger file, not a folder")
            if not p.exists():
                if not create:
                    raise InputError(
                        "path", self.path, "an existing ledger file (create one with `ledger init`)"
                    )
                p.parent.mkdir(parents=True, exist_ok=True)
        self._depth = 0
        self._conn = None
        try:
            self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as e:
            raise InputError("path", self.path, f"a ledger file SQLite can open ({e})") from None
        try:
            self._retry_while_locked(lambda: self._set_up(memory), timeout)
        except sqlite3.DatabaseError as e:
            self.close()
            raise InputError("path", self.path, f"a bayes_s2r ledger (SQLite says: {e})") from None
        except BaseException:
            self.close()
            raise

    def _set_up(self, memory: bool) -> None:
        db = self._conn
        # The busy timeout first, so every statement below waits for other writers. The
        # switch of a new file to WAL may still be refused at once while another process
        # makes the same switch (SQLite calls no busy handler there): the caller retries.
        db.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
        if not memory and db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.execute("PRAGMA journal_mode=WAL").fetchone()
        if not memory:
            # In WAL mode NORMAL keeps every transaction atomic through a crash of the
            # process; only a power cut may lose the last commits (never corrupt the file).
            db.execute("PRAGMA synchronous=NORMAL")
        self._refuse_foreign_database()
        self._check_tables(min(schema_version(db), SCHEMA_VERSION))  # before adding to it
        migrate(db)
        self._check_tables()

    @staticmethod
    def _retry_while_locked(step: Callable[[], None], timeout: float) -> None:
        """Run `step`, again while SQLite reports the file locked, for up to `timeout` s.

        While one process turns a new file into a WAL database, SQLite may answer another
        one "database is locked" without waiting (its busy handler is not called there).
        Every step of opening is safe to repeat.
        """
        deadline = time.monotonic() + timeout
        pause = 0.002
        while True:
            try:
                return step()
            except sqlite3.OperationalError as e:
                locked = "locked" in str(e) or "busy" in str(e)
                if not locked or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(2 * pause, 0.1)

    def _refuse_foreign_database(self) -> None:
        """Never add ledger tables to another program's SQLite file."""
        db = self._conn
        db.execute("BEGIN")  # one snapshot: another process may be creating the ledger now
        try:
            version = schema_version(db)
            other = [
                r[0]
                for r in db.execute(
                    "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
                )
            ]
        finally:
            db.execute("COMMIT")
        if version == 0 and other:
            raise InputError(
                "path",
                self.path,
                f"a bayes_s2r ledger or an empty file (it holds other tables: {other})",
            )

    def _check_tables(self, version: int = SCHEMA_VERSION) -> None:
        """Refuse a file that lacks a table its schema version should have."""
        names = {
            r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        expected = {
            sql.split()[2]
            for step in MIGRATIONS
            if step.version <= version
            for sql in step.statements
            if sql.startswith("CREATE TABLE")
        }
        missing = expected - names
        if missing:
            raise InputError(
                "path", self.path, f"a bayes_s2r ledger (tables {sorted(missing)} missing)"
            )

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        # At interpreter exit module globals may already be gone (`contextlib` is None):
        # use nothing but the connection itself, and never let an error escape.
        conn = self.__dict__.get("_conn")
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001, S110 (nothing may escape a finalizer)
                pass

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise InputError("ledger", self.path, "an open ledger (it was closed)")
        return self._conn

    @property
    def schema_version(self) -> int:
        """The schema version of the file (equal to `SCHEMA_VERSION` once opened)."""
        return schema_version(self._db())

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Ledger]:
        """Group writes into one transaction: all of them are stored, or none.

        Nested uses join the outermost transaction. Any exception rolls everything back.

        Example:
            >>> with Ledger(":memory:") as ledger:
            ...     with ledger.transaction():
            ...         _ = ledger.set_meta("round", 3)
            ...     ledger.get_meta("round")
            3
        """
        db = self._db()
        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        db.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield self
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # also when COMMIT itself failed (disk full, I/O error)
                db.execute("ROLLBACK")
            raise
        finally:
            self._depth = 0

    # ------------------------------------------------------------------ writing
    def _insert(self, record: Record, text: str) -> bool:
        """Store one record inside the open transaction; True if it was new."""
        db = self._db()
        row = db.execute("SELECT kind, payload FROM records WHERE id = ?", (record.id,)).fetchone()
        if row is not None:
            if row[1] == text:
                return False
            raise InputError(
                f"{record.KIND}.id",
                record.id,
                (
                    f"an id not already used by a different {row[0]} record (ids are stable: "
                    "give this record its own id, or leave id empty to use its content hash)"
                ),
            )
        db.execute(
            "INSERT INTO records (id, kind, payload) VALUES (?, ?, ?)",
            (record.id, record.KIND, text),
        )
        return True

    def add(self, record: Record) -> bool:
        """Append one record; True if new, False if the identical record is already stored.

        Raises:
            InputError: `record` is not a Record, or its id holds a different record.
        """
        return self.add_many([record]) == 1

    def add_many(
        self, records: Iterable[Record], *, where: Callable[[int], str] | None = None
    ) -> int:
        """Append records atomically (all or none); return how many were new.

        Identical records without ids of their own in one batch are distinct trials (two
        matched episodes with the same outcomes), not a repeat: the k-th of them (k ≥ 2) is
        stored under "<content hash>.k". Adding the same batch again (importing the same
        file twice) still stores nothing new.

        Args:
            records: evidence records.
            where: optional function of the 0-based position giving the source of a record
                ("file.csv, row 7"), used in error messages.

        Raises:
            InputError: a non-record, or an id that holds a different record (in the
                ledger or earlier in `records`); nothing is stored then.
        """
        items = list(records)
        for i, rec in enumerate(items):
            if not isinstance(rec, Record) or not hasattr(rec, "id"):
                raise InputError(f"records[{i}]", rec, "an evidence record such as PairedEval(...)")
        taken = {rec.id for rec in items}     # a repeat's number skips ids the batch names itself
        seen: collections.Counter = collections.Counter()
        texts = []
        for i, rec in enumerate(items):
            seen[rec.id] += 1
            if seen[rec.id] > 1 and rec.id == rec.content_hash():
                k = seen[rec.id]
                while f"{rec.id}.{k}" in taken:
                    k += 1
                seen[rec.id] = k
                taken.add(f"{rec.id}.{k}")
                items[i] = rec = dataclasses.replace(rec, id=f"{rec.id}.{k}")
            texts.append(_canonical(rec))
        added = 0
        with self.transaction():
            for i, (rec, text) in enumerate(zip(items, texts)):
                try:
                    added += self._insert(rec, text)
                except InputError as e:
                    loc = where(i) if where else f"records[{i}]"
                    raise InputError(e.field, e.value, e.expected, where=loc) from None
        return added

    # ------------------------------------------------------------------ reading
    _LIVE = "id NOT IN (SELECT id FROM voids)"

    def records(
        self, kind: str | type[Record] | None = None, *, include_void: bool = False
    ) -> list[Record]:
        """All records (or those of one kind) in insertion order.

        Args:
            kind: a record kind or class; None for every kind.
            include_void: also return the records taken back with `void` (see `voided`).
        """
        k = _resolve_kind(kind)
        where = ([] if include_void else [self._LIVE]) + (["kind = ?"] if k else [])
        sql = (
            "SELECT payload FROM records"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY seq"
        )
        rows = self._db().execute(sql, (k,) if k else ())
        return [record_from_dict(json.loads(text), coerce=False) for (text,) in rows]

    def summed_records(self) -> list[Record]:
        """The records in insertion order, with the paired evaluations summed by SQLite.

        PairedEval rows that share candidate, policy, objective and round become one record
        with the summed counts, placed where the last of them was (and carrying the id of
        the first of them), so everything that reads totals and the latest round or policy
        (`fit_gains`) sees the same evidence as from `records()`, without a Python object per
        trial row (500,000 one-episode rows: about 2 s instead of 9 s). Void records are
        left out, as from `records()`.
        """
        db = self._db()
        try:
            db.execute("SELECT json_extract('{}', '$')")
        except sqlite3.OperationalError:  # an SQLite built without its JSON functions
            return self.records()
        field = "json_extract(payload, '$.{}')".format
        counts = ("successes_treated", "episodes_treated", "successes_control", "episodes_control")
        try:
            sums = self._paired_sums(db, field, counts)
        except sqlite3.OperationalError as e:
            if "overflow" not in str(e):
                raise
            raise InputError(
                "paired_eval counts", "a sum of 2**63 or more",
                "summed counts per candidate, policy, objective and round below 2**63",
            ) from None
        out = [(seq, record_from_dict(json.loads(text), coerce=False)) for seq, text in db.execute(
            f"SELECT seq, payload FROM records WHERE kind != ? AND {self._LIVE} ORDER BY seq",
            (PairedEval.KIND,))]
        for last, ident, st, nt, sc, nc, matched, cand, policy, objective, rnd in sums:
            out.append((last, PairedEval(cand, st, nt, sc, nc, round=rnd, matched=bool(matched),
                                         policy=policy, objective=objective, id=ident)))
        out.sort(key=lambda pair: pair[0])
        return [rec for _, rec in out]

    def _paired_sums(self, db, field, counts) -> list[tuple]:
        """One row per (candidate, policy, objective, round) of live paired evaluations."""
        return db.execute(
            "WITH g AS (SELECT MAX(seq) AS last, MIN(seq) AS lo, "
            + ", ".join(f"SUM({field(c)}) AS {c}" for c in counts)
            + f", MIN({field('matched')}) AS matched, {field('candidate')} AS c, {field('policy')} AS p,"
            f" {field('objective')} AS o, {field('round')} AS r"
            f" FROM records WHERE kind = ? AND {self._LIVE} GROUP BY c, p, o, r)"
            " SELECT g.last, records.id, " + ", ".join(f"g.{c}" for c in counts)
            + ", g.matched, g.c, g.p, g.o, g.r FROM g JOIN records ON records.seq = g.lo",
            (PairedEval.KIND,)).fetchall()

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def get(self, record_id: str) -> Record | None:
        """The record stored under `record_id` (void or not), or None."""
        row = (
            self._db().execute("SELECT payload FROM records WHERE id = ?", (record_id,)).fetchone()
        )
        return None if row is None else record_from_dict(json.loads(row[0]), coerce=False)

    def __contains__(self, item: Record | str) -> bool:
        """Whether the id is stored (a void record is still stored: its id stays taken)."""
        ident = item.id if isinstance(item, Record) else item
        return (
            self._db().execute("SELECT 1 FROM records WHERE id = ?", (ident,)).fetchone()
            is not None
        )

    def __len__(self) -> int:
        """The number of records `records()` returns (void ones left out)."""
        sql = f"SELECT COUNT(*) FROM records WHERE {self._LIVE}"
        return int(self._db().execute(sql).fetchone()[0])

    def counts(self) -> dict[str, int]:
        """Number of records per kind (void ones left out), for kinds present, in `RECORD_TYPES` order."""
        got = dict(
            self._db().execute(
                f"SELECT kind, COUNT(*) FROM records WHERE {self._LIVE} GROUP BY kind"
            ).fetchall()
        )
        return {k: int(got[k]) for k in RECORD_TYPES if k in got}

    # ------------------------------------------------------------------ taking records back
    def void(self, record_id: str, why: str) -> Record:
        """Take a record back: it stays in the file, marked void with `why`, and is left out
        of `records()`, `summed_records()`, `len()` and everything fitted from them.

        Evidence is never deleted; a void record is still shown (by `voided` and
        `records(include_void=True)`) and its id stays taken, so importing the same file
        again does not bring it back. A void cannot be undone.

        Args:
            record_id: the id of a stored record.
            why: the reason, kept with the mark (e.g. "candidate name mistyped").

        Returns:
            The record that was voided.

        Raises:
            InputError: an unknown id, a record already void, or an empty reason.

        Example:
            >>> with Ledger(":memory:") as ledger:
            ...     _ = ledger.add(PairedEval("dr_typo", 3, 5, 2, 5, id="t1"))
            ...     _ = ledger.void("t1", "candidate name mistyped")
            ...     len(ledger), ledger.voided()["t1"]["why"]
            (0, 'candidate name mistyped')
        """
        if not isinstance(record_id, str) or not record_id:
            raise InputError("id", record_id, "the id of a stored record")
        if not isinstance(why, str) or not why.strip():
            raise InputError("why", why, "a non-empty reason for taking the record back")
        _check_text("why", why)
        with self.transaction():
            db = self._db()
            record = self.get(record_id)
            if record is None:
                raise InputError("id", record_id, "the id of a stored record")
            row = db.execute("SELECT why FROM voids WHERE id = ?", (record_id,)).fetchone()
            if row is not None:
                raise InputError("id", record_id, f"a record not already void (void: {row[0]})")
            db.execute(
                "INSERT INTO voids (id, why, voided_at) VALUES (?, ?, ?)",
                (record_id, why, datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")),
            )
        return record

    def voided(self) -> dict[str, dict[str, str]]:
        """The void records: id -> {"why", "voided_at"}, in the order they were voided."""
        rows = self._db().execute("SELECT id, why, voided_at FROM voids ORDER BY rowid")
        return {i: {"why": why, "voided_at": at} for i, why, at in rows}

    # ------------------------------------------------------------------ campaign meta
    def set_meta(self, key: str, value: Any) -> Any:
        """Store a JSON-serializable `value` under `key` (replacing any previous value).

        The value follows the limits of a record's JSON fields (`check_json`), but may hold
        up to `META_MAX_ITEMS` values (a campaign keeps its policies' parameters here);
        mapping keys that are numbers, booleans or None are written as text, as JSON does.
        """
        if not isinstance(key, str) or not key.strip():
            raise InputError("meta.key", key, "a non-empty text key")
        _check_text("meta.key", key)
        check_json(f"meta.{key}", value, any_keys=True, max_items=META_MAX_ITEMS)
        try:
            text = json.dumps(value, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            raise InputError(
                f"meta.{key}", shown(value), "JSON-serializable data with finite numbers"
            ) from None
        with self.transaction():
            self._db().execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, text)
            )
        return json.loads(text)

    def get_meta(self, key: str, default: Any = None) -> Any:
        """The value stored under `key`, or `default`."""
        row = self._db().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def meta(self) -> dict[str, Any]:
        """Every meta key and value."""
        return {
            k: json.loads(v)
            for k, v in self._db().execute("SELECT key, value FROM meta ORDER BY key")
        }

    # ------------------------------------------------------------------ files
    def import_csv(
        self,
        path: str | os.PathLike,
        *,
        kind: str | type[Record] | None = None,
        candidates: Iterable[Any] | None = None,
    ) -> ImportResult:
        """Import a CSV file atomically (see `bayes_s2r.evidence.io.read_csv` for the format).

        Args:
            path: the file.
            kind: the record kind of rows without a `kind` cell.
            candidates: when given (candidates or their names), a record naming a candidate
                outside this set is refused before anything is stored.
        """
        from bayes_s2r.evidence.io import read_csv

        return self._import(path, read_csv(path, kind=_resolve_kind(kind)), candidates)

    def import_json(
        self, path: str | os.PathLike, *, candidates: Iterable[Any] | None = None
    ) -> ImportResult:
        """Import a JSON file atomically (see `bayes_s2r.evidence.io.read_json` for the format).

        Args:
            path: the file.
            candidates: as for `import_csv`.
        """
        from bayes_s2r.evidence.io import read_json

        return self._import(path, read_json(path), candidates)

    def _import(self, path, parsed, candidates=None) -> ImportResult:
        records, sources = parsed
        if candidates is not None:
            check_candidates(records, candidates, where=lambda i: f"{path}, {sources[i]}")
        added = self.add_many(records, where=lambda i: f"{path}, {sources[i]}")
        return ImportResult(str(path), len(records), added)

    def export_csv(self, path: str | os.PathLike) -> int:
        """Write every record but the void ones to one CSV file (a `kind` column plus the union of fields)."""
        from bayes_s2r.evidence.io import write_csv

        return write_csv(self.records(), path)

    def export_json(self, path: str | os.PathLike) -> int:
        """Write every record but the void ones to a JSON file {"schema_version": ..., "records": [...]}."""
        from bayes_s2r.evidence.io import write_json

        return write_json(self.records(), path)

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else f"{len(self)} records"
        return f"Ledger({self.path!r}, {state})"
