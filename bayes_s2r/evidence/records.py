"""Evidence records: frozen, validated on construction, with stable ids.

Every record carries the round and the policy it was measured under, because a gain is a
property of the current policy, not of the method. A record's `id` defaults to a hash of
its content, so importing the same file twice stores nothing new. Identical records in one
batch (one `add_many` call, one imported file) are kept apart by the ledger, which numbers
the repeats; a single record added again in a later call is a repeat. Give explicit ids to
keep identical trials apart across calls.
"""

from __future__ import annotations

import dataclasses
import decimal
import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from bayes_s2r.errors import InputError, shown

__all__ = [
    "RECORD_TYPES",
    "DecisionRecord",
    "DeploymentEval",
    "ExecutionOutcome",
    "PairedEval",
    "PairedReturns",
    "RealizedCost",
    "Record",
    "SensitivityTrial",
    "SystemIdRecord",
    "check_json",
    "loads_json",
    "parse_json_int",
    "record_from_dict",
]

TIERS = ("direct", "proxy", "ablation")


# ----------------------------------------------------------------------------- parsing
# Each field has a kind; `_parse(kind, field, value, coerce)` returns the clean value or
# raises InputError. `coerce=True` accepts the strings that CSV files carry. A value is
# stored as given or refused: nothing is rounded, truncated or re-encoded on the way in.

_INT_LIMIT = 2**63  # counts must fit the 64-bit integers of SQLite and NumPy
_EXACT_FLOAT_INT = 2**53  # whole floats at or above this may already be rounded
# Limits on the data of a JSON field (and of a ledger's meta values): deeper or larger
# structures are refused before anything walks them recursively.
JSON_MAX_DEPTH = 32
JSON_MAX_ITEMS = 100_000
_INT_TEXT = re.compile(r"[+-]?[0-9]+")


def _parse_int(field, value, coerce):
    expected = "a whole number >= 0 and < 2**63"
    if coerce and isinstance(value, str):
        text = value.strip()
        if _INT_TEXT.fullmatch(text):  # exact: never through a float
            digits = text.lstrip("+-").lstrip("0") or "0"
            if len(digits) > 19:
                raise InputError(field, shown(value), expected)
            value = -int(digits) if text.startswith("-") else int(digits)
        else:  # "50.0", "5e1": exact decimal arithmetic, so no digit is lost
            try:
                number = decimal.Decimal(text)
            except decimal.InvalidOperation:
                raise InputError(field, shown(value), "a whole number >= 0") from None
            if not number.is_finite() or number.adjusted() > 19 or number != number.to_integral_value():
                raise InputError(field, shown(value), expected)
            value = int(number)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(field, shown(value), "a whole number >= 0")
    if isinstance(value, int):
        if value < 0 or value >= _INT_LIMIT:
            raise InputError(field, shown(value), expected)
        return value
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise InputError(field, value, "a whole number >= 0")
    if value >= _EXACT_FLOAT_INT:
        raise InputError(field, value, "a whole number < 2**53 when written as a float "
                                       "(write large counts without a decimal point)")
    return int(value)


def _parse_float(field, value, coerce, *, nonneg=False):
    expected = "a finite number >= 0" if nonneg else "a finite number"
    if coerce and isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise InputError(field, shown(value), expected) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(field, shown(value), expected)
    try:
        value = float(value)
    except OverflowError:  # an int too large for a float
        raise InputError(field, shown(value), expected) from None
    if not math.isfinite(value) or (nonneg and value < 0):
        raise InputError(field, value, expected)
    return float(value)


def _check_text(field, value):
    """Refuse text that is not valid Unicode (lone or paired UTF-16 surrogates).

    Such text cannot be written as UTF-8, so it would break every later export, and a
    surrogate pair would come back from JSON as a different string.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(
            field, shown(value), f"valid Unicode text (character {e.start} is a UTF-16 surrogate)"
        ) from None


def _parse_str(field, value, coerce, *, optional=False):
    if optional and (value is None or (coerce and value == "")):
        return None
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise InputError(field, shown(value), "a non-empty text without surrounding spaces")
    _check_text(field, value)
    return value


def _parse_bool(field, value, coerce):
    if coerce and isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no"):
            return False
    if coerce and isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    if not isinstance(value, bool):
        raise InputError(field, shown(value), "true or false")
    return value


class _BigNumber(str):
    """An integer literal too long to read, kept as its text so a field check names it."""

    def __repr__(self) -> str:
        return f"<an integer of {len(self.lstrip('-'))} digits>"


def parse_json_int(text: str):
    """`parse_int` hook of `json.loads`: integer literals too long to read become a marker."""
    return int(text) if len(text) <= 40 else _BigNumber(text)


def loads_json(text: str, field: str):
    """`json.loads` whose failures are InputErrors naming `field`.

    Integer literals too long for Python to read come back as a marker that
    `check_json` refuses, naming the field, instead of a ValueError naming nothing.
    """
    try:
        return json.loads(text, parse_int=parse_json_int)
    except json.JSONDecodeError as e:
        raise InputError(field, shown(text), f"JSON text ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise InputError(field, shown(text), f"JSON nested at most {JSON_MAX_DEPTH} deep") from None


def check_json(field: str, value: Any, *, any_keys: bool = False, max_items: int = JSON_MAX_ITEMS) -> None:
    """Check that `value` is JSON data that is stored and read back exactly.

    Accepted: None, booleans, integers in the 64-bit range, finite floats, valid Unicode
    text, lists (and tuples) and mappings with text keys, nested at most `JSON_MAX_DEPTH`
    deep and holding at most `max_items` values in all. With `any_keys`, mapping keys may
    also be numbers, booleans or None (which JSON writes as text).

    Raises:
        InputError: naming the field and the path inside it (`field.key[2]`).
    """
    count = 0

    def walk(v, where, depth):
        nonlocal count
        count += 1
        if count > max_items:
            raise InputError(field, f"<data of more than {max_items} values>",
                             f"JSON data of at most {max_items} values")
        if depth > JSON_MAX_DEPTH:
            raise InputError(field, f"<data nested more than {JSON_MAX_DEPTH} deep>",
                             f"JSON data nested at most {JSON_MAX_DEPTH} deep")
        if v is None or isinstance(v, bool):
            return
        if isinstance(v, _BigNumber) or (isinstance(v, int) and not -_INT_LIMIT <= v < _INT_LIMIT):
            raise InputError(where, shown(v), "an integer between -2**63 and 2**63 - 1")
        if isinstance(v, int):
            return
        if isinstance(v, float):
            if not math.isfinite(v):
                raise InputError(where, v, "a finite number")
            return
        if isinstance(v, str):
            _check_text(where, v)
            return
        if isinstance(v, _FrozenMap):
            v = dict(v)
        if isinstance(v, Mapping):
            for k, item in v.items():
                if isinstance(k, str):
                    _check_text(f"{where} key", k)
                elif not (any_keys and (k is None or isinstance(k, (int, float)))):
                    raise InputError(f"{where}.{k!r}", shown(k), "a text key (JSON keys are text)")
                elif isinstance(k, (int, float)):
                    walk(k, f"{where} key", depth + 1)
                walk(item, f"{where}.{k}", depth + 1)
            return
        if isinstance(v, (list, tuple)):
            for i, item in enumerate(v):
                walk(item, f"{where}[{i}]", depth + 1)
            return
        raise InputError(where, shown(v), "JSON data: null, true/false, a number, text, a list or a mapping")

    walk(value, field, 0)


def _parse_json(field, value, coerce):
    if coerce and isinstance(value, str):
        value = loads_json(value, field)
    check_json(field, value)
    return _freeze(value)


def _parse_floats(field, value, coerce):
    if coerce and isinstance(value, str):
        try:
            value = loads_json(value, field) if value.strip().startswith("[") else [
                float(v) for v in value.split(";") if v.strip()
            ]
        except ValueError:
            raise InputError(field, shown(value), "a list of finite numbers") from None
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise InputError(field, shown(value), "a list of finite numbers")
    out = tuple(_parse_float(f"{field}[{i}]", v, coerce) for i, v in enumerate(value))
    if not out:
        raise InputError(field, value, "at least one number")
    return out


class _FrozenMap(tuple):
    """A mapping frozen as sorted (key, value) pairs, so records stay hashable."""


def _freeze(value):
    if isinstance(value, _FrozenMap):  # already frozen (a record copied with replace())
        return value
    if isinstance(value, Mapping):
        return _FrozenMap(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value):
    if isinstance(value, _FrozenMap):
        return {k: _thaw(v) for k, v in value}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


_PARSERS = {
    "int": _parse_int,
    "float": _parse_float,
    "nonneg": lambda f, v, c: _parse_float(f, v, c, nonneg=True),
    "str": _parse_str,
    "optstr": lambda f, v, c: _parse_str(f, v, c, optional=True),
    "optfloat": lambda f, v, c: None if v is None or (c and v == "") else _parse_float(f, v, c),
    "bool": _parse_bool,
    "json": _parse_json,
    "floats": _parse_floats,
}


# ----------------------------------------------------------------------------- base

class Record:
    """Base of all evidence records. Subclasses are frozen dataclasses with `FIELDS`."""

    KIND: ClassVar[str]
    FIELDS: ClassVar[dict[str, str]]

    def _validate(self, coerce: bool = False) -> None:
        for name, kind in self.FIELDS.items():
            clean = _PARSERS[kind](f"{self.KIND}.{name}", getattr(self, name), coerce)
            object.__setattr__(self, name, clean)
        self._check()
        ident = self.id
        if ident is None or (coerce and ident == ""):
            object.__setattr__(self, "id", self.content_hash())
        else:
            object.__setattr__(self, "id", _parse_str(f"{self.KIND}.id", ident, coerce))

    def __post_init__(self):
        self._validate(coerce=False)

    def _check(self) -> None:
        """Cross-field checks; subclasses override."""

    def payload(self) -> dict[str, Any]:
        """The fields as plain JSON-ready data, without the id."""
        return {name: _thaw(getattr(self, name)) for name in self.FIELDS}

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND, "id": self.id, **self.payload()}

    def content_hash(self) -> str:
        text = json.dumps([self.KIND, self.payload()], sort_keys=True, allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, coerce: bool = True):
        """Build from a mapping (a JSON object or a CSV row); strings are parsed when `coerce`."""
        if not isinstance(data, Mapping):
            raise InputError(cls.KIND, data, "a mapping of field -> value")
        allowed = set(cls.FIELDS) | {"id", "kind"}
        unknown = sorted((k for k in data if k not in allowed and not (coerce and data[k] in ("", None))), key=str)
        if unknown:
            raise InputError(f"{cls.KIND}.{unknown[0]}", data[unknown[0]], f"a field among {sorted(allowed)}")
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        values = {}
        for name in (*cls.FIELDS, "id"):
            v = data.get(name, defaults[name])
            if coerce and v == "" and name in defaults and defaults[name] is not dataclasses.MISSING:
                v = defaults[name]
            if v is dataclasses.MISSING:
                raise InputError(f"{cls.KIND}.{name}", None, "a value (the field is required)")
            values[name] = v
        obj = object.__new__(cls)
        for k, v in values.items():
            object.__setattr__(obj, k, v)
        obj._validate(coerce=coerce)
        return obj


# ----------------------------------------------------------------------------- records

@dataclasses.dataclass(frozen=True)
class PairedEval(Record):
    """Paired binomial evaluation of a candidate against the current policy on matched seeds."""

    KIND: ClassVar[str] = "paired_eval"
    FIELDS: ClassVar[dict[str, str]] = {
        "candidate": "str", "successes_treated": "int", "episodes_treated": "int",
        "successes_control": "int", "episodes_control": "int", "round": "int",
        "matched": "bool", "policy": "optstr", "objective": "str",
    }
    candidate: str
    successes_treated: int
    episodes_treated: int
    successes_control: int
    episodes_control: int
    round: int = 0
    matched: bool = True
    policy: str | None = None
    objective: str = "success"
    id: str | None = None

    def _check(self):
        for arm in ("treated", "control"):
            s, n = getattr(self, f"successes_{arm}"), getattr(self, f"episodes_{arm}")
            if n == 0:
                raise InputError(f"{self.KIND}.episodes_{arm}", n, "at least one episode")
            if s > n:
                raise InputError(f"{self.KIND}.successes_{arm}", s, f"at most episodes_{arm}={n}")

    @property
    def delta_hat(self) -> float:
        return self.successes_treated / self.episodes_treated - self.successes_control / self.episodes_control


@dataclasses.dataclass(frozen=True)
class PairedReturns(Record):
    """Paired continuous returns (one per matched episode) of a candidate and the current policy."""

    KIND: ClassVar[str] = "paired_returns"
    FIELDS: ClassVar[dict[str, str]] = {
        "candidate": "str", "returns_treated": "floats", "returns_control": "floats",
        "round": "int", "policy": "optstr", "objective": "str",
    }
    candidate: str
    returns_treated: tuple[float, ...]
    returns_control: tuple[float, ...]
    round: int = 0
    policy: str | None = None
    objective: str = "success"
    id: str | None = None

    def _check(self):
        if len(self.returns_treated) != len(self.returns_control):
            raise InputError(
                f"{self.KIND}.returns_control", len(self.returns_control),
                f"as many matched returns as returns_treated ({len(self.returns_treated)})",
            )


@dataclasses.dataclass(frozen=True)
class SensitivityTrial(Record):
    """Performance of a policy with mismatch direction perturbed to `level` (0 = nominal).

    A pairwise trial also sets `pair_direction` and `pair_level`, for synergy estimates.
    """

    KIND: ClassVar[str] = "sensitivity_trial"
    FIELDS: ClassVar[dict[str, str]] = {
        "direction": "str", "level": "float", "successes": "int", "episodes": "int",
        "tier": "str", "policy": "optstr", "round": "int",
        "pair_direction": "optstr", "pair_level": "optfloat",
    }
    direction: str
    level: float
    successes: int
    episodes: int
    tier: str = "proxy"
    policy: str | None = None
    round: int = 0
    pair_direction: str | None = None
    pair_level: float | None = None
    id: str | None = None

    def _check(self):
        if self.episodes == 0:
            raise InputError(f"{self.KIND}.episodes", self.episodes, "at least one episode")
        if self.successes > self.episodes:
            raise InputError(f"{self.KIND}.successes", self.successes, f"at most episodes={self.episodes}")
        if self.tier not in TIERS:
            raise InputError(f"{self.KIND}.tier", self.tier, f"one of {TIERS}")
        if (self.pair_direction is None) != (self.pair_level is None):
            raise InputError(f"{self.KIND}.pair_level", self.pair_level,
                             "set together with pair_direction (both or neither)")
        if self.pair_direction is not None and self.pair_direction == self.direction:
            raise InputError(f"{self.KIND}.pair_direction", self.pair_direction,
                             "a direction other than `direction`")


@dataclasses.dataclass(frozen=True)
class ExecutionOutcome(Record):
    """How many times a candidate ran on the robot and how many runs had an unsafe event."""

    KIND: ClassVar[str] = "execution_outcome"
    FIELDS: ClassVar[dict[str, str]] = {
        "candidate": "str", "executions": "int", "unsafe": "int", "round": "int",
    }
    candidate: str
    executions: int
    unsafe: int
    round: int = 0
    id: str | None = None

    def _check(self):
        if self.unsafe > self.executions:
            raise InputError(f"{self.KIND}.unsafe", self.unsafe, f"at most executions={self.executions}")


@dataclasses.dataclass(frozen=True)
class DeploymentEval(Record):
    """Evaluation of a policy under deployment conditions: successes and unsafe episodes."""

    KIND: ClassVar[str] = "deployment_eval"
    FIELDS: ClassVar[dict[str, str]] = {
        "policy": "str", "episodes": "int", "successes": "int", "unsafe": "int", "round": "int",
    }
    policy: str
    episodes: int
    successes: int
    unsafe: int
    round: int = 0
    id: str | None = None

    def _check(self):
        if self.episodes == 0:
            raise InputError(f"{self.KIND}.episodes", self.episodes, "at least one episode")
        for f in ("successes", "unsafe"):
            if getattr(self, f) > self.episodes:
                raise InputError(f"{self.KIND}.{f}", getattr(self, f), f"at most episodes={self.episodes}")


@dataclasses.dataclass(frozen=True)
class RealizedCost(Record):
    """What running a candidate actually cost, per resource."""

    KIND: ClassVar[str] = "realized_cost"
    FIELDS: ClassVar[dict[str, str]] = {
        "candidate": "str", "round": "int", "real": "nonneg", "compute": "nonneg", "eng": "nonneg",
    }
    candidate: str
    round: int = 0
    real: float = 0.0
    compute: float = 0.0
    eng: float = 0.0
    id: str | None = None


@dataclasses.dataclass(frozen=True)
class SystemIdRecord(Record):
    """A system-identification estimate: parameter -> {mean, sd}, from `trajectories` real runs."""

    KIND: ClassVar[str] = "system_id"
    FIELDS: ClassVar[dict[str, str]] = {
        "candidate": "str", "estimates": "json", "trajectories": "int", "round": "int",
        "policy": "optstr",
    }
    candidate: str
    estimates: Any
    trajectories: int
    round: int = 0
    policy: str | None = None
    id: str | None = None

    def _check(self):
        est = _thaw(self.estimates)
        if not isinstance(est, dict) or not est:
            raise InputError(f"{self.KIND}.estimates", est, "a mapping parameter -> {mean, sd}")
        for k, v in est.items():
            if not isinstance(v, dict) or not {"mean", "sd"} <= set(v):
                raise InputError(f"{self.KIND}.estimates.{k}", v, "a mapping with mean and sd")


@dataclasses.dataclass(frozen=True)
class DecisionRecord(Record):
    """One round's decision: the chosen candidate (None for a stop), its table, seed and version."""

    KIND: ClassVar[str] = "decision"
    FIELDS: ClassVar[dict[str, str]] = {
        "round": "int", "chosen": "optstr", "stop_reason": "optstr", "table": "json",
        "seed": "int", "version": "str", "extra": "json",
    }
    round: int
    chosen: str | None
    stop_reason: str | None = None
    table: Any = ()
    seed: int = 0
    version: str = "0"
    extra: Any = ()
    id: str | None = None


RECORD_TYPES: dict[str, type[Record]] = {
    cls.KIND: cls
    for cls in (PairedEval, PairedReturns, SensitivityTrial, ExecutionOutcome, DeploymentEval,
                RealizedCost, SystemIdRecord, DecisionRecord)
}


def record_from_dict(data: Mapping[str, Any], *, kind: str | None = None, coerce: bool = True) -> Record:
    """Build the record named by `data["kind"]` (or `kind`) from a mapping."""
    if not isinstance(data, Mapping):
        raise InputError("record", data, "a mapping of field -> value")
    k = data.get("kind") or kind
    if not isinstance(k, str) or k not in RECORD_TYPES:
        raise InputError("kind", k, f"one of {sorted(RECORD_TYPES)}")
    return RECORD_TYPES[k].from_dict(data, coerce=coerce)
