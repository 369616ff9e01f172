"""A fitted `GainBelief` kept as JSON (in a ledger's meta), and the key of the fit it came from.

A fit reads the live evidence, the candidates and its own settings; when none of them has
changed, the draws it gave last time are the draws it would give again (same seed), so a
command line run can reuse them instead of sampling again. `fit_key` hashes those inputs;
`to_json` / `from_json` write and read the belief exactly (the draws as the bytes of their
floats, not as decimal text).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from bayes_s2r.belief.posterior import GainBelief
from bayes_s2r.errors import InputError
from bayes_s2r.vocab import Candidate

__all__ = ["FORMAT", "fit_key", "from_json", "to_json"]

#: Version of the stored layout; a different one is never read (the fit runs again).
FORMAT = 1


def _plain(value: Any) -> Any:
    """NumPy scalars and arrays as Python values, tuples as lists, so JSON keeps them."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def fit_key(records: Iterable, candidates: Sequence[Candidate], settings: Mapping[str, Any]) -> str:
    """A content hash of everything a fit reads: evidence, candidates and settings.

    Args:
        records: the records the fit reads (void records already left out); decision records
            are skipped, since no fit reads them and each `decide` adds one.
        candidates: the candidate set.
        settings: the fit's method, seed, prior and any other setting (JSON data).

    Returns:
        A hex digest; equal digests mean the fit would see the same inputs.
    """
    from bayes_s2r.evidence.io import candidate_to_mapping
    from bayes_s2r.evidence.records import DecisionRecord

    h = hashlib.sha256()
    h.update(json.dumps(_plain(settings), sort_keys=True, default=str).encode())
    for c in candidates:
        h.update(json.dumps(candidate_to_mapping(c), sort_keys=True, default=str).encode())
    h.update(b"|evidence|")
    for rec in records:
        if not isinstance(rec, DecisionRecord):
            h.update(json.dumps(rec.to_dict(), sort_keys=True, allow_nan=False).encode() + b"\n")
    return h.hexdigest()


def to_json(belief: GainBelief, key: str) -> dict[str, Any]:
    """The belief as JSON data, tagged with the `fit_key` of its inputs.

    Draws are stored as base64 of their little-endian bytes: as float32 when every draw is
    one (a fit on JAX's default precision), else float64, so they read back bit for bit.
    Of `extra`, the entries that are JSON data are kept (the current policy's J among them).
    Diagnostics and extra are kept as JSON text, which holds the NaN an SVI fit reports for
    its R-hat (a ledger's meta takes finite numbers only).

    Example:
        >>> b = GainBelief.from_gaussian(["a", "b"], [0.1, 0.0], [0.05, 0.02], num_draws=100)
        >>> back = from_json(to_json(b, "k"), "k")
        >>> bool((back.draws == b.draws).all())
        True
    """
    draws = np.ascontiguousarray(belief.draws)
    narrow = draws.astype("<f4")
    dtype, raw = ("float32", narrow) if np.array_equal(narrow.astype(np.float64), draws) else ("float64", draws)
    extra = {k: v for k, v in ((str(k), _plain(v)) for k, v in belief.extra.items()) if _jsonable(v)}
    return {
        "format": FORMAT, "key": key, "names": list(belief.names), "shape": list(draws.shape),
        "dtype": dtype, "draws": base64.b64encode(raw.astype("<f8" if dtype == "float64" else "<f4")
                                                  .tobytes()).decode("ascii"),
        "chains": belief.chains, "method": belief.method,
        "diagnostics": json.dumps(_plain(belief.diagnostics)), "extra": json.dumps(extra),
    }


def from_json(data: Any, key: str) -> GainBelief | None:
    """The stored belief if it was fitted on inputs with this `key`, else None.

    Anything unreadable (another layout, a damaged value) is None too: the caller fits again.
    """
    if not isinstance(data, Mapping) or data.get("format") != FORMAT or data.get("key") != key:
        return None
    try:
        dtype = {"float32": "<f4", "float64": "<f8"}[data["dtype"]]
        rows, cols = (int(n) for n in data["shape"])
        draws = np.frombuffer(base64.b64decode(data["draws"], validate=True), dtype=dtype)
        draws = draws.astype(np.float64).reshape(rows, cols)
        return GainBelief(data["names"], draws, chains=int(data["chains"]), method=str(data["method"]),
                          diagnostics=dict(json.loads(data["diagnostics"])),
                          extra=dict(json.loads(data["extra"])))
    except (KeyError, TypeError, ValueError, InputError):
        return None
