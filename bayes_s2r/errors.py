"""The one error type users see for bad input."""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = [
    "InputError",
    "require",
    "require_bool",
    "require_choice",
    "require_finite",
    "require_finite_nonneg",
    "require_int",
    "require_int_nonneg",
    "require_positive",
    "require_probability",
    "require_seed",
    "shown",
]


class InputError(ValueError):
    """Bad input: the message names the field, the value and what was expected."""

    def __init__(self, field: str, value: Any, expected: str, *, where: str | None = None):
        self.field = field
        self.value = value
        self.expected = expected
        self.where = where
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}{field}={value!r}: expected {expected}")

    def __reduce__(self):  # picklable, so an error in a worker process reaches its parent
        return _rebuild_input_error, (self.field, self.value, self.expected, self.where)


def _rebuild_input_error(field: str, value: Any, expected: str, where: str | None) -> InputError:
    return InputError(field, value, expected, where=where)


def require(condition: bool, field: str, value: Any, expected: str) -> None:
    """Raise `InputError(field, value, expected)` unless `condition` holds."""
    if not condition:
        raise InputError(field, value, expected)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) or (
        hasattr(value, "dtype") and getattr(value, "shape", None) == () and value.dtype.kind in "iuf"
    )


def _as_float(value: Any) -> float:
    """float(value), with integers too large for a float read as infinite."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def require_finite_nonneg(field: str, value: Any) -> float:
    """Return `value` as a float, or raise unless it is a finite number >= 0."""
    if not _is_real(value) or not math.isfinite(_as_float(value)) or _as_float(value) < 0:
        raise InputError(field, value, "a finite number >= 0")
    return float(value)


def require_finite(field: str, value: Any) -> float:
    """Return `value` as a float, or raise unless it is a finite number."""
    if not _is_real(value) or not math.isfinite(_as_float(value)):
        raise InputError(field, value, "a finite number")
    return float(value)


def require_int_nonneg(field: str, value: Any) -> int:
    """Return `value` as an int, or raise unless it is a whole number >= 0."""
    if isinstance(value, bool) or not _is_real(value):
        raise InputError(field, value, "a whole number >= 0")
    f = _as_float(value)
    if not math.isfinite(f) or f < 0 or f != int(f):
        raise InputError(field, value, "a whole number >= 0")
    return int(f)


def require_int(field: str, value: Any, low: int = 0, high: int | None = None) -> int:
    """Return `value` as an int, or raise unless it is an integer (not a bool) in low..high.

    Unlike `require_int_nonneg` a float is refused even when whole: for counts and settings
    given in code, 3.0 is a slip.

    Example:
        >>> require_int("episodes", 4, low=1)
        4
        >>> try:
        ...     require_int("episodes", 0, low=1)
        ... except InputError as e:
        ...     print(e)
        episodes=0: expected a whole number >= 1
    """
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low
    if not ok or (high is not None and value > high):
        span = f">= {low}" if high is None else f"{low}..{high}"
        raise InputError(field, shown(value), f"a whole number {span}")
    return int(value)


def require_positive(field: str, value: Any) -> float:
    """Return `value` as a float, or raise unless it is a finite number > 0."""
    if not _is_real(value) or not math.isfinite(_as_float(value)) or _as_float(value) <= 0:
        raise InputError(field, value, "a finite number > 0")
    return float(value)


def require_probability(field: str, value: Any, *, closed: bool = False) -> float:
    """Return `value` as a float, or raise unless it lies strictly between 0 and 1 (in [0, 1]
    when `closed`).

    Example:
        >>> require_probability("delta", 0.05)
        0.05
        >>> require_probability("alpha_exec", 0, closed=True)
        0.0
    """
    v = _as_float(value) if _is_real(value) else math.nan
    if not (0 <= v <= 1 if closed else 0 < v < 1):
        raise InputError(field, value, "a probability in [0, 1]" if closed else
                         "a probability strictly between 0 and 1")
    return float(value)


def require_bool(field: str, value: Any) -> bool:
    """Return `value`, or raise unless it is True or False (not 0, 1 or a text)."""
    if not isinstance(value, bool):
        raise InputError(field, value, "True or False")
    return value


def require_choice(field: str, value: Any, choices: tuple) -> Any:
    """Return `value`, or raise unless it is one of `choices` (text matches text; otherwise the
    type must match too, so True is not 1).

    Example:
        >>> require_choice("guide", "normal", ("lowrank", "normal"))
        'normal'
    """
    if not any((type(value) is type(c) or isinstance(value, str) and isinstance(c, str)) and value == c
               for c in choices):
        raise InputError(field, shown(value), f"one of {choices}")
    return value


def require_seed(field: str, value: Any) -> int:
    """Return `value` as an int, or raise unless it is a whole number >= 0 that a 64-bit PRNG
    key holds (< 2**63)."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and 0 <= value < 2**63
    if not ok:
        raise InputError(field, shown(value), "a whole number >= 0 and < 2**63")
    return int(value)


class _Shown:
    """A stand-in with a short repr for a value whose own repr is too long or fails."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def shown(value: Any, limit: int = 200) -> Any:
    """`value`, or a stand-in with a short repr, for the value of an `InputError`.

    Python refuses to print integers of more than a few thousand digits (the repr raises
    ValueError), so an error about such a value would itself fail; long text is cut too.

    Example:
        >>> shown(10**5000)
        <an integer of 5001 digits>
        >>> shown(7)
        7
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 3 * limit:
        return _Shown(f"<an integer of {int(math.log10(abs(value))) + 1} digits>")
    if type(value) is str and len(value) > limit:  # a str subclass keeps its own repr
        return _Shown(repr(value[:limit]) + f"… ({len(value)} characters)")
    return value
