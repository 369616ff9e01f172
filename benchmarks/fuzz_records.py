"""Fuzzing of evidence records and files: what is accepted is stored and read back exactly.

Three properties, checked on inputs drawn by Hypothesis:

- record: a mapping of random field values (any Unicode text, UTF-16 surrogates included;
  integers of any size; non-finite floats; nested data of any depth; values of the wrong
  type) either builds a record whose fields hold exactly the values given, which then
  round-trips through a dict, a CSV row, JSON text and a ledger, or is refused with an
  InputError naming the field;
- files: accepted records written by a ledger to CSV and JSON and imported into a new
  ledger come back exactly, and importing the file again adds nothing;
- truncation: a CSV or JSON export cut at a random byte imports as an exact prefix of
  its records, or is refused with an InputError; never with a record changed.

The test suite checks the same properties with fewer examples
(`tests/evidence/test_roundtrip_properties.py`). Prints one JSON object {"benchmark":
"fuzz_records", "machine", "settings", "results"}: per property, how many inputs were
accepted and refused, and the failing example if a property does not hold.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.io import _cell
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import RECORD_TYPES, TIERS, parse_json_int, record_from_dict

# ----------------------------------------------------------------------------- inputs
HAZARD_TEXT = ["\ud800", "\udfff", "a\udc80", "\ud83d\ude00", "\x00", "a\r\nb", "a\rb", " x", "x ",
               "", ",", '"', "é", "😀", "\u2028", "\ufeffx", "x" * 300]
HAZARD_INTS = [2**53 + 1, 2**63 - 1, 2**63, -1, -(2**63), -(2**63) - 1, 10**25, 10**400]
HAZARD_FLOATS = [float("nan"), float("inf"), -float("inf"), -0.0, 5e-324, 1.7976931348623157e308,
                 9007199254740993.0]

# Valid values of each field kind, and hazards: values near or past the limits of what a
# field holds. A drawn field is left out, junk of any type, a hazard or (mostly) valid.
good_text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=8).filter(
    lambda t: t.strip() == t)
bad_text = st.sampled_from(HAZARD_TEXT) | st.text(st.characters(exclude_categories=[]), max_size=4)
# integers longer than Python prints (it refuses reprs beyond 4300 digits): built by a map
huge_ints = st.integers(4200, 5000).map(lambda n: 10**n)
finite = st.floats(allow_nan=False, allow_infinity=False)
bad_numbers = st.sampled_from(HAZARD_INTS) | st.sampled_from(HAZARD_FLOATS) | huge_ints | st.integers()


def nested(depth: int, leaf: Any = 0) -> Any:
    """`leaf` inside `depth` lists."""
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def json_data(leaves, keys):
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.tuples(inner) | st.dictionaries(keys, inner, max_size=3),
        max_leaves=8,
    )


good_json = json_data(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | finite | good_text,
                      good_text)
bad_json = st.one_of(
    st.integers(25, 80).map(nested),
    json_data(bad_numbers | bad_text, bad_text | st.integers(0, 3)),
)
junk = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), good_text, bad_text,
                 st.lists(st.integers(), max_size=2), st.dictionaries(good_text, st.integers(), max_size=2))

VALID = {
    "int": st.integers(0, 60) | st.integers(0, 2**63 - 1),
    "float": finite | st.integers(-(10**6), 10**6),
    "nonneg": st.floats(0.0, allow_infinity=False) | st.integers(0, 10**6),
    "optfloat": st.none() | finite,
    "str": good_text,
    "optstr": st.none() | good_text,
    "bool": st.booleans(),
    "json": good_json,
    "floats": st.lists(finite, min_size=1, max_size=3),
}
HAZARD = {
    "int": bad_numbers | st.sampled_from([50.0, "5", True]),
    "float": bad_numbers,
    "nonneg": bad_numbers,
    "optfloat": bad_numbers,
    "str": bad_text,
    "optstr": bad_text,
    "bool": st.sampled_from([0, 1, "true", None]),
    "json": bad_json,
    "floats": st.sampled_from([[], [float("nan")], "1;2"]) | st.lists(bad_numbers, min_size=1, max_size=2),
}
BY_NAME = {  # fields with a shape of their own, so that some draws are accepted
    "estimates": st.dictionaries(
        good_text, st.fixed_dictionaries({"mean": finite, "sd": finite}), min_size=1, max_size=2
    ),
    "tier": st.sampled_from(TIERS),
    "episodes_treated": st.integers(40, 60),
    "episodes_control": st.integers(40, 60),
    "episodes": st.integers(40, 60),
    "executions": st.integers(40, 60),
}


@st.composite
def raw_records(draw) -> dict:
    """A mapping for a random record kind: each field left out, junk, a hazard or valid."""
    kind = draw(st.sampled_from(sorted(RECORD_TYPES)))
    data: dict[str, Any] = {"kind": kind}
    for name, parser in RECORD_TYPES[kind].FIELDS.items():
        choice = draw(st.integers(0, 19))
        if choice == 0:
            continue  # left out: its default, or refused when required
        if choice == 1:
            data[name] = draw(junk)
        elif choice == 2:
            data[name] = draw(HAZARD[parser])
        else:
            data[name] = draw(BY_NAME.get(name, VALID[parser]))
    if draw(st.booleans()):
        data["id"] = draw(good_text | bad_text)
    return data


# ----------------------------------------------------------------------------- checks
def canon(value: Any) -> str:
    """Text that tells apart every value JSON can hold (1 and 1.0, true and 1, -0.0 and 0.0)."""
    return json.dumps(value, sort_keys=True, allow_nan=True)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def expected(parser: str, value: Any) -> Any:
    """What a field of this kind must hold after being given `value`: the same value, in
    the field's declared type (50.0 for a count is 50, 1 for a level is 1.0)."""
    if parser in ("float", "nonneg") or (parser == "optfloat" and value is not None):
        return float(value)
    if parser == "int":  # a whole float such as 50.0 is the count 50
        return int(value)
    if parser == "floats":
        return [float(v) for v in value]
    return _plain(value)


def check_refusal(err: InputError, data: dict) -> None:
    """An InputError names a field of the record (or the kind), in a readable message."""
    kind = data.get("kind")
    fields = set(RECORD_TYPES[kind].FIELDS) | {"id"} if kind in RECORD_TYPES else set()
    assert isinstance(err.field, str) and err.field in str(err), err
    head, _, rest = err.field.partition(".")
    if err.field not in ("kind", "record"):
        assert head == kind and rest.split(".")[0].split("[")[0] in fields, err.field
    assert len(str(err)) < 5000, len(str(err))


def check_round_trips(rec) -> None:
    """A record reads back exactly from a dict, a CSV row, JSON text and a ledger."""
    d = rec.to_dict()
    again = record_from_dict(d, coerce=False)
    assert again == rec and canon(again.to_dict()) == canon(d)
    payload = rec.payload()
    row = {"kind": rec.KIND, "id": rec.id, **{f: _cell(p, payload[f]) for f, p in rec.FIELDS.items()}}
    assert canon(record_from_dict(row).to_dict()) == canon(d)
    text = json.dumps(d, ensure_ascii=False, allow_nan=False)
    assert canon(record_from_dict(json.loads(text, parse_int=parse_json_int), coerce=False).to_dict()) == canon(d)
    with Ledger(":memory:") as ledger:
        ledger.add(rec)
        stored = ledger.get(rec.id)
    assert stored == rec and canon(stored.to_dict()) == canon(d)


def check_record(data: dict) -> str:
    """The record property for one mapping: "accepted" or "refused" (else AssertionError)."""
    try:
        rec = record_from_dict(data, coerce=False)
    except InputError as e:
        check_refusal(e, data)
        return "refused"
    payload = rec.payload()
    for name, parser in rec.FIELDS.items():
        if name in data:
            assert canon(payload[name]) == canon(expected(parser, data[name])), (name, data[name])
    if data.get("id") is not None:
        assert rec.id == data["id"]
    check_round_trips(rec)
    return "accepted"


def accepted(datas: list[dict]) -> list:
    """The records built from the mappings that are accepted, first of each id only."""
    out, ids = [], set()
    for data in datas:
        try:
            rec = record_from_dict(data, coerce=False)
        except InputError:
            continue
        if rec.id not in ids:
            ids.add(rec.id)
            out.append(rec)
    return out


def check_files(recs: list, folder: Path) -> str:
    """The files property: an export imports into a new ledger exactly, once."""
    with Ledger(":memory:") as a:
        a.add_many(recs)
        want = [canon(r.to_dict()) for r in a.records()]
        for fmt in ("csv", "json"):
            path = folder / f"export.{fmt}"
            getattr(a, f"export_{fmt}")(path)
            with Ledger(":memory:") as b:
                assert getattr(b, f"import_{fmt}")(path).added == len(want)
                assert [canon(r.to_dict()) for r in b.records()] == want
                assert getattr(b, f"import_{fmt}")(path).added == 0
    return "accepted"


CUTS = ("anywhere", "after_line_break", "before_line_break")


def cut_at(data: bytes, where: str, fraction: float) -> bytes:
    """`data` cut at `fraction` of its length, or at the line break nearest after it."""
    at = int(len(data) * fraction)
    if where != "anywhere":
        brk = data.find(b"\n", at)
        at = len(data) if brk < 0 else brk + (where == "after_line_break")
    return data[:at]


def check_truncated(recs: list, fmt: str, where: str, fraction: float, folder: Path) -> str:
    """The truncation property: an export cut short is refused or an exact prefix."""
    path = folder / f"cut.{fmt}"
    with Ledger(":memory:") as a:
        a.add_many(recs)
        want = [canon(r.to_dict()) for r in a.records()]
        getattr(a, f"export_{fmt}")(path)
    data = path.read_bytes()
    path.write_bytes(cut_at(data, where, fraction))
    with Ledger(":memory:") as b:
        try:
            getattr(b, f"import_{fmt}")(path)
        except InputError as e:
            assert isinstance(e.field, str) and len(b) == 0
            return "refused"
        got = [canon(r.to_dict()) for r in b.records()]
    assert got == want[: len(got)], "an imported record differs from the one exported"
    return "whole" if len(got) == len(want) else "prefix"


# ----------------------------------------------------------------------------- running
record_lists = st.lists(raw_records(), min_size=1, max_size=6).map(accepted).filter(bool)


def run(examples: int, seed: int) -> dict[str, dict[str, int]]:
    """Check every property on `examples` inputs each; return the outcome counts.

    Raises:
        AssertionError: a property does not hold (Hypothesis reports the smallest example).
    """
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    cfg = settings(max_examples=examples, deadline=None, database=None,  # quiet: stdout is the JSON
                   suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    folder = Path(tempfile.mkdtemp(prefix="fuzz_records."))

    @hypothesis_seed(seed)
    @cfg
    @given(raw_records())
    def record(data):
        counts["record"][check_record(data)] += 1

    @hypothesis_seed(seed)
    @cfg
    @given(record_lists)
    def files(recs):
        counts["files"][check_files(recs, folder)] += 1

    @hypothesis_seed(seed)
    @cfg
    @given(record_lists, st.sampled_from(["csv", "json"]), st.sampled_from(CUTS), st.floats(0.0, 1.0))
    def truncation(recs, fmt, where, fraction):
        counts[f"truncation_{fmt}"][check_truncated(recs, fmt, where, fraction, folder)] += 1

    for prop in (record, files, truncation):
        prop()
    return {k: dict(sorted(v.items())) for k, v in sorted(counts.items())}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=2000, help="inputs per property")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="also write the JSON to this file")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import emit, machine

    start = time.perf_counter()
    failure = None
    try:
        results = run(args.examples, args.seed)
    except AssertionError as e:  # the property and its smallest failing example
        notes = "; ".join(getattr(e, "__notes__", []))  # Hypothesis adds the failing example
        results, failure = {}, f"{type(e).__name__}: {e} ({notes})"
    result = {
        "benchmark": "fuzz_records",
        "machine": machine(),
        "settings": {"examples": args.examples, "seed": args.seed},
        "results": {"counts": results, "ok": failure is None, "failure": failure,
                    "wall_s": round(time.perf_counter() - start, 2)},
    }
    return emit(result, args.out)


if __name__ == "__main__":
    sys.exit(0 if main()["results"]["ok"] else 1)
