"""The ledger's SQLite schema: its forward migrations and the current version.

Kept apart from `bayes_s2r.evidence.ledger` so that the file formats (`bayes_s2r.evidence.io`)
can stamp the version without importing the ledger, which imports them.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration"]


class Migration(NamedTuple):
    """One forward schema step.

    Attributes:
        version: the schema version the database has after this step.
        description: what the step changes, stored in the `schema_version` table.
        statements: SQL statements run in order inside the step's transaction.
    """

    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "evidence records and schema history",
        (
            (
                "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
                " applied_at TEXT NOT NULL)"
            ),
            (
                "CREATE TABLE records (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
                " kind TEXT NOT NULL, payload TEXT NOT NULL)"
            ),
        ),
    ),
    Migration(
        2,
        "campaign meta table and an index on record kind",
        (
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "CREATE INDEX records_kind ON records (kind, seq)",
        ),
    ),
    Migration(
        3,
        "voided records: kept, with the reason, and left out of reads by default",
        (
            (
                "CREATE TABLE voids (id TEXT PRIMARY KEY REFERENCES records (id),"
                " why TEXT NOT NULL, voided_at TEXT NOT NULL)"
            ),
        ),
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
