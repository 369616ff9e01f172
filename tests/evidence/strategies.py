"""Hypothesis strategies: valid records of every kind, bad cell values, junk values."""

from __future__ import annotations

import sqlite3

from hypothesis import strategies as st

from bayes_s2r.evidence.records import (
    RECORD_TYPES,
    DecisionRecord,
    DeploymentEval,
    ExecutionOutcome,
    PairedEval,
    PairedReturns,
    RealizedCost,
    SensitivityTrial,
    SystemIdRecord,
)

# Text a record accepts: non-empty, no surrounding spaces; commas, quotes, inner line
# breaks and non-ASCII letters all included, to exercise CSV quoting.
names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=10
).filter(lambda s: s.strip() == s and s != "")
opt_names = st.none() | names
ids = st.none() | names
counts = st.integers(0, 10**6)
finite = st.floats(allow_nan=False, allow_infinity=False)
nonneg = st.floats(min_value=0.0, allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | finite | names,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def _binomial(draw, lo=1):
    n = draw(st.integers(lo, 10**6))
    return draw(st.integers(0, n)), n


@st.composite
def paired_evals(draw):
    (st_, nt), (sc, nc) = draw(_binomial()), draw(_binomial())
    return PairedEval(
        draw(names),
        st_,
        nt,
        sc,
        nc,
        round=draw(counts),
        matched=draw(st.booleans()),
        policy=draw(opt_names),
        objective=draw(names),
        id=draw(ids),
    )


@st.composite
def paired_returns(draw):
    n = draw(st.integers(1, 4))
    treated = draw(st.lists(finite, min_size=n, max_size=n))
    control = draw(st.lists(finite, min_size=n, max_size=n))
    return PairedReturns(
        draw(names),
        treated,
        control,
        round=draw(counts),
        policy=draw(opt_names),
        objective=draw(names),
        id=draw(ids),
    )


@st.composite
def sensitivity_trials(draw):
    s, n = draw(_binomial())
    direction = draw(names)
    pair = draw(st.none() | names.filter(lambda d: d != direction))
    return SensitivityTrial(
        direction,
        draw(finite),
        s,
        n,
        tier=draw(st.sampled_from(["direct", "proxy", "ablation"])),
        policy=draw(opt_names),
        round=draw(counts),
        pair_direction=pair,
        pair_level=None if pair is None else draw(finite),
        id=draw(ids),
    )


@st.composite
def execution_outcomes(draw):
    u, n = draw(_binomial(lo=0))
    return ExecutionOutcome(draw(names), n, u, round=draw(counts), id=draw(ids))


@st.composite
def deployment_evals(draw):
    n = draw(st.integers(1, 10**6))
    return DeploymentEval(
        draw(names),
        n,
        draw(st.integers(0, n)),
        draw(st.integers(0, n)),
        round=draw(counts),
        id=draw(ids),
    )


@st.composite
def realized_costs(draw):
    return RealizedCost(
        draw(names),
        round=draw(counts),
        real=draw(nonneg),
        compute=draw(nonneg),
        eng=draw(nonneg),
        id=draw(ids),
    )


@st.composite
def system_ids(draw):
    est = draw(
        st.dictionaries(
            names, st.fixed_dictionaries({"mean": finite, "sd": nonneg}), min_size=1, max_size=3
        )
    )
    return SystemIdRecord(
        draw(names), est, draw(counts), round=draw(counts), policy=draw(opt_names), id=draw(ids)
    )


@st.composite
def decisions(draw):
    return DecisionRecord(
        draw(counts),
        draw(opt_names),
        stop_reason=draw(opt_names),
        table=draw(json_values),
        seed=draw(counts),
        version=draw(names),
        extra=draw(json_values),
        id=draw(ids),
    )


RECORD_STRATEGIES = {
    "paired_eval": paired_evals(),
    "paired_returns": paired_returns(),
    "sensitivity_trial": sensitivity_trials(),
    "execution_outcome": execution_outcomes(),
    "deployment_eval": deployment_evals(),
    "realized_cost": realized_costs(),
    "system_id": system_ids(),
    "decision": decisions(),
}
assert set(RECORD_STRATEGIES) == set(RECORD_TYPES)
records = st.one_of(*RECORD_STRATEGIES.values())


def unique_ids(recs):
    """Keep the first record of each id (explicit ids drawn at random may collide)."""
    seen, out = set(), []
    for r in recs:
        if r.id not in seen:
            seen.add(r.id)
            out.append(r)
    return out


# Cells (CSV text) that each field parser must refuse.
BAD_CELLS = {
    "int": ["x", "-1", "1.5", "nan", "inf", "1e400", "true"],
    "float": ["x", "nan", "inf", "-inf", "1e400", "1,5"],
    "nonneg": ["x", "nan", "inf", "-0.5", "1e400"],
    "optfloat": ["x", "nan", "-inf"],
    "bool": ["maybe", "2", "tru", "T"],
    "str": [" lead", "trail ", "\tx"],
    "optstr": [" lead", "trail\n"],
    "json": ["{", "[NaN]", "nope", "[1, 2"],
    "floats": ['[1, "a"]', "x;y", "[]", "[NaN]", "1;inf"],
}
# Typed values (JSON) that each field parser must refuse.
BAD_VALUES = {
    "int": [-1, 1.5, "3", True, [1], {"a": 1}, 2**70],
    "float": ["1.0", True, [1.0], 10**400],
    "nonneg": [-0.5, "1", False],
    "optfloat": ["x", True],
    "bool": ["true", 1, None],
    "str": ["", " x", 5, ["a"]],
    "optstr": ["", "x ", 7],
    "floats": [[], ["a"], "1;2", [True], 3.0],
    "json": [float("nan"), {"a": float("inf")}, {"a": object()}],
}

junk_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
field_names = st.sampled_from(
    sorted({f for c in RECORD_TYPES.values() for f in c.FIELDS} | {"id", "kind"})
)
junk_dicts = st.dictionaries(field_names | st.text(max_size=5), junk_values, max_size=8)


def raw_content(where):
    """Everything a ledger stores, read with plain SQL: (records, meta, versions).

    `where` is a ledger file (read through a connection of its own) or an open Ledger.
    """
    if hasattr(where, "_db"):
        conn = where._db()
        return (
            conn.execute("SELECT seq, id, kind, payload FROM records ORDER BY seq").fetchall(),
            conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall(),
            conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall(),
        )
    conn = sqlite3.connect(where)
    try:
        return (
            conn.execute("SELECT seq, id, kind, payload FROM records ORDER BY seq").fetchall(),
            conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall(),
            conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall(),
        )
    finally:
        conn.close()
