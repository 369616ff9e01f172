"""Evidence and candidate files: CSV and JSON records, TOML candidate sets.

CSV: one file may hold several kinds of records, with a `kind` column and the union of
their fields as columns (an empty cell means the field's default, or "not this kind's
field"); a file of one kind may leave out the `kind` column and name the kind when read.
Row numbers in messages are spreadsheet rows: the header is row 1. Every row has one cell
per header column, and the file ends with a line break: a file cut off part-way through
its last row (a partial copy or download) is refused rather than read with that row
changed. A file cut exactly after a line break looks like a complete, shorter file; only
a count or checksum kept beside the file could tell.

JSON: a list of objects, each with a `kind`, or an object {"records": [...]} (what
`write_json` writes). Values are typed: numbers are numbers, not text.

Candidates: a TOML file of `[[candidate]]` tables; see `load_candidates`.

Readers return records and never touch a ledger; `Ledger.import_csv` / `import_json`
store what they return in one transaction.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import tempfile
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import RECORD_TYPES, Record, parse_json_int, record_from_dict
from bayes_s2r.evidence.schema import SCHEMA_VERSION
from bayes_s2r.vocab import Candidate, Cost, validate_candidates

__all__ = [
    "candidate_to_mapping",
    "dump_candidates",
    "load_candidates",
    "read_csv",
    "read_json",
    "write_csv",
    "write_json",
]


# ----------------------------------------------------------------------------- reading
def _read_text(path: str | os.PathLike, what: str) -> str:
    p = Path(path)
    try:  # newline="": a "\r" inside a quoted CSV cell must reach the parser untranslated
        with open(p, encoding="utf-8-sig", newline="") as f:
            return f.read()
    except FileNotFoundError:
        raise InputError("path", str(path), f"an existing {what} file") from None
    except IsADirectoryError:
        raise InputError("path", str(path), f"a {what} file, not a folder") from None
    except UnicodeDecodeError as e:
        raise InputError(
            "path", str(path), f"a UTF-8 {what} file (byte {e.start} is not UTF-8)"
        ) from None
    except OSError as e:
        raise InputError("path", str(path), f"a readable {what} file ({e.strerror or e})") from None


def _blank(row: Sequence[str]) -> bool:
    return all(not c.strip() for c in row)


def _check_complete(text: str, path) -> None:
    """Refuse a CSV text whose last line has no line break: it was cut off."""
    if not text or text.endswith(("\n", "\r")):
        return
    cut = max(text.rfind("\n"), text.rfind("\r")) + 1
    row = text[:cut].replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1  # as the reader counts
    last = text[cut:]
    raise InputError(
        "row",
        last if len(last) <= 200 else last[:200] + "…",
        "a last row that ends with a line break (the file looks cut off; if it is complete, "
        "add the final line break)",
        where=f"{path}, row {row}",
    )


def read_csv(path: str | os.PathLike, *, kind: str | None = None) -> tuple[list[Record], list[str]]:
    """Parse a CSV file of records; nothing is stored.

    Args:
        path: the file.
        kind: the record kind of rows whose `kind` cell is missing or empty.

    Returns:
        (records, sources): the records in file order and, for each, "row N".

    Raises:
        InputError: unreadable or malformed file (naming the path), a last row without a
            line break or a row with fewer cells than the header (naming the row), or a bad
            row (naming the row, the field and the value).
    """
    if kind is not None and kind not in RECORD_TYPES:
        raise InputError("kind", kind, f"one of {sorted(RECORD_TYPES)}")
    text = _read_text(path, "CSV")
    _check_complete(text, path)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records: list[Record] = []
    sources: list[str] = []
    try:
        header = next(reader, None)
        if header is None or _blank(header):
            raise InputError("header", header, "a header row naming the columns", where=str(path))
        columns = [c.strip() for c in header]
        for i, c in enumerate(columns):  # unknown columns are refused by the rows that fill them
            if c and columns.index(c) != i:
                raise InputError("header", c, "each column named once", where=f"{path}, row 1")
        if "kind" not in columns and kind is None:
            raise InputError(
                "kind", None, "a `kind` column, or the kind given when importing", where=str(path)
            )
        while True:
            start = reader.line_num + 1
            row = next(reader, None)
            if row is None:
                break
            if _blank(row):
                continue
            where = f"row {start}"
            if len(row) > len(columns) and not _blank(row[len(columns) :]):
                raise InputError(
                    "row",
                    row,
                    f"at most {len(columns)} cells, one per header column",
                    where=f"{path}, {where}",
                )
            if len(row) < len(columns):  # a shifted or cut row: its cells would be misread
                raise InputError(
                    "row",
                    row,
                    f"{len(columns)} cells, one per header column (it has {len(row)})",
                    where=f"{path}, {where}",
                )
            cells = {c: v for c, v in zip(columns, row) if c}
            row_kind = cells.pop("kind", "").strip() or kind
            if row_kind is None:
                raise InputError(
                    "kind", "", f"one of {sorted(RECORD_TYPES)}", where=f"{path}, {where}"
                )
            if kind is not None and row_kind != kind:
                raise InputError(
                    "kind",
                    row_kind,
                    f"{kind!r} (the kind given for this file)",
                    where=f"{path}, {where}",
                )
            try:
                records.append(record_from_dict(cells, kind=row_kind, coerce=True))
            except InputError as e:
                raise InputError(e.field, e.value, e.expected, where=f"{path}, {where}") from None
            sources.append(where)
    except csv.Error as e:
        raise InputError(
            "path", str(path), f"well-formed CSV (line {reader.line_num}: {e})"
        ) from None
    return records, sources


_JSON_TOP_KEYS = ("records", "format", "schema_version")


def read_json(path: str | os.PathLike) -> tuple[list[Record], list[str]]:
    """Parse a JSON file of records: a list of objects with `kind`, or {"records": [...]}.

    Returns:
        (records, sources): the records in file order and, for each, "records[i]".

    Raises:
        InputError: unreadable or malformed file (naming the path), or a bad record
            (naming its position, the field and the value).
    """
    text = _read_text(path, "JSON")
    try:
        data = json.loads(text, parse_int=parse_json_int)  # long integers: refused per field
    except json.JSONDecodeError as e:
        raise InputError(
            "path", str(path), f"well-formed JSON (line {e.lineno} column {e.colno}: {e.msg})"
        ) from None
    except RecursionError:
        raise InputError("path", str(path), "JSON nested less deeply") from None
    if isinstance(data, dict):
        unknown = [k for k in data if k not in _JSON_TOP_KEYS]
        if unknown or "records" not in data:
            key = unknown[0] if unknown else "records"
            raise InputError(
                key, data.get(key), 'a list of records or {"records": [...]}', where=str(path)
            )
        data = data["records"]
    if not isinstance(data, list):
        raise InputError(
            "records", data, 'a list of records or {"records": [...]}', where=str(path)
        )
    records: list[Record] = []
    sources: list[str] = []
    for i, item in enumerate(data):
        where = f"records[{i}]"
        if not isinstance(item, dict) or "kind" not in item:
            raise InputError(
                "record", item, "an object with a `kind` field", where=f"{path}, {where}"
            )
        try:
            records.append(record_from_dict(item, coerce=False))
        except InputError as e:
            raise InputError(e.field, e.value, e.expected, where=f"{path}, {where}") from None
        sources.append(where)
    return records, sources


# ----------------------------------------------------------------------------- writing
def _atomic_write(path: str | os.PathLike, write) -> None:
    """Write through a temporary file in the same folder, then rename over `path`."""
    p = Path(path)
    if p.is_dir():
        raise InputError("path", str(path), "a file name, not a folder")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    except OSError as e:
        raise InputError("path", str(path), f"a writable location ({e.strerror or e})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            write(f)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cell(parser: str, value: Any) -> str:
    """One CSV cell; `import` parses it back to the same value."""
    if parser == "json":  # JSON text, so that null, "" and [] stay apart from an empty cell
        return json.dumps(value, sort_keys=True, allow_nan=False)
    if value is None:
        return ""
    if parser == "bool":
        return "true" if value else "false"
    if parser in ("float", "nonneg", "optfloat"):
        return repr(float(value))
    if parser == "floats":
        return json.dumps(value, allow_nan=False)
    return str(value)


def _records(records: Iterable[Record]) -> list[Record]:
    out = list(records)
    for i, r in enumerate(out):
        if not isinstance(r, Record):
            raise InputError(f"records[{i}]", r, "an evidence record")
    return out


def write_csv(records: Iterable[Record], path: str | os.PathLike) -> int:
    """Write records to one CSV file: `kind`, `id`, then the union of their fields.

    Returns:
        The number of records written.
    """
    recs = _records(records)
    kinds = [k for k in RECORD_TYPES if any(r.KIND == k for r in recs)]
    fields = list(dict.fromkeys(f for k in kinds for f in RECORD_TYPES[k].FIELDS))

    def write(f):
        w = csv.writer(f)  # RFC 4180 line ends: a cell with a lone "\r" is then quoted too
        w.writerow(["kind", "id", *fields])
        for r in recs:
            payload = r.payload()
            w.writerow(
                [
                    r.KIND,
                    r.id,
                    *(
                        _cell(r.FIELDS[name], payload[name]) if name in r.FIELDS else ""
                        for name in fields
                    ),
                ]
            )

    _atomic_write(path, write)
    return len(recs)


def write_json(records: Iterable[Record], path: str | os.PathLike) -> int:
    """Write records to a JSON file {"format", "schema_version", "records": [...]}.

    Returns:
        The number of records written.
    """
    recs = _records(records)
    lines = [json.dumps(r.to_dict(), allow_nan=False, ensure_ascii=False) for r in recs]
    text = (
        f'{{"format": "bayes_s2r.evidence", "schema_version": {SCHEMA_VERSION}, "records": [\n'
        + "".join(line + ",\n" for line in lines[:-1])
        + "".join(lines[-1:])
        + "\n]}\n"
    )  # one record per line: readable, diff-friendly
    _atomic_write(path, lambda f: f.write(text))
    return len(recs)


# ----------------------------------------------------------------------------- candidates
_CANDIDATE_KEYS = (
    "name",
    "role",
    "lens",
    "method",
    "batch",
    "cost",
    "touches_robot",
    "repeatable",
    "observes",
    "targets",
    "outcome",
    "objectives",
)


def _candidate(i: int, table: Any, path: str) -> Candidate:
    label = f"{path}: candidate[{i}]"
    if not isinstance(table, dict):
        raise InputError("candidate", table, "a [[candidate]] table", where=label)
    if isinstance(table.get("name"), str):
        label += f" ({table['name']})"
    for key in table:
        if key not in _CANDIDATE_KEYS:
            raise InputError(
                f"candidate.{key}", table[key], f"a key among {list(_CANDIDATE_KEYS)}", where=label
            )
    for key in ("name", "role"):
        if key not in table:
            raise InputError(f"candidate.{key}", None, "a value (the key is required)", where=label)
    kwargs = dict(table)
    try:
        if "cost" in kwargs:
            kwargs["cost"] = Cost.from_mapping(kwargs["cost"], field="candidate.cost")
        if "outcome" in kwargs:
            from bayes_s2r.outcomes import outcome_from_mapping  # imports JAX: only when needed

            kwargs["outcome"] = outcome_from_mapping(kwargs["outcome"], field="candidate.outcome")
        return Candidate(**kwargs)
    except InputError as e:
        raise InputError(e.field, e.value, e.expected, where=label) from None
    except (TypeError, ValueError, OverflowError) as e:  # a value the validators did not foresee
        raise InputError("candidate", table, f"valid candidate fields ({e})", where=label) from None


def load_candidates(path: str | os.PathLike) -> tuple[Candidate, ...]:
    """Read a candidate set from TOML `[[candidate]]` tables and validate it as a set.

    Each table has `name`, `role` and optionally `lens` (a lens or a list), `method`,
    `batch`, `cost = {real, compute, eng}`, `touches_robot`, `repeatable`, `observes`,
    `targets`, `outcome = {kind = "binomial_paired", episodes = 50}` and `objectives`.
    Other top-level tables (a budget, weights) are left to their own readers.

    Raises:
        InputError: naming the path, the candidate's index and name, the field and the value.

    Example:
        >>> import importlib.resources as ir
        >>> cands = load_candidates(ir.files("bayes_s2r") / "examples" / "candidates.toml")
        >>> [c.name for c in cands if c.touches_robot]
        ['ft_real', 'probe_dr_wide']
    """
    text = _read_text(path, "TOML")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError("path", str(path), f"well-formed TOML ({e})") from None
    tables = data.get("candidate")
    if not isinstance(tables, list) or not tables:
        raise InputError("candidate", tables, "one or more [[candidate]] tables", where=str(path))
    cands = [_candidate(i, t, str(path)) for i, t in enumerate(tables)]
    try:
        return validate_candidates(cands)
    except InputError as e:
        raise InputError(e.field, e.value, e.expected, where=str(path)) from None


def _outcome_mapping(outcome: Any) -> dict[str, Any]:
    from bayes_s2r.outcomes import OUTCOME_KINDS

    names = {code: name for name, code in OUTCOME_KINDS.items()}
    code = outcome.params()[0]
    if code not in names or not dataclasses.is_dataclass(outcome):
        raise InputError(
            "candidate.outcome", outcome, "an outcome model built by outcome_from_mapping"
        )
    return {
        "kind": names[code],
        **{f.name: getattr(outcome, f.name) for f in dataclasses.fields(outcome)},
    }


def candidate_to_mapping(candidate: Candidate) -> dict[str, Any]:
    """The TOML table of one candidate (keys left out where the value is None or default)."""
    c = candidate
    out: dict[str, Any] = {
        "name": c.name,
        "role": c.role,
        "lens": c.lens[0] if len(c.lens) == 1 else list(c.lens),
    }
    for key in ("method", "batch", "observes", "targets"):
        if getattr(c, key) is not None:
            out[key] = getattr(c, key)
    out["cost"] = {"real": c.cost.real, "compute": c.cost.compute, "eng": c.cost.eng}
    out["touches_robot"] = c.touches_robot
    out["repeatable"] = c.repeatable
    if c.outcome is not None:
        out["outcome"] = _outcome_mapping(c.outcome)
    if c.objectives != ("success",):
        out["objectives"] = list(c.objectives)
    return out


def dump_candidates(candidates: Iterable[Candidate], path: str | os.PathLike) -> int:
    """Write a candidate set as TOML `[[candidate]]` tables that `load_candidates` reads back.

    Returns:
        The number of candidates written.
    """
    import tomli_w

    cands = validate_candidates(list(candidates))
    doc = {"candidate": [candidate_to_mapping(c) for c in cands]}
    _atomic_write(path, lambda f: f.write(tomli_w.dumps(doc)))
    return len(cands)
