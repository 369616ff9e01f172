"""Fuzzing of `fit_gains` and `decide` inputs: refused naming a field, or a valid answer.

Two properties, checked on inputs drawn by Hypothesis:

- fit: evidence (paired evaluations of known and unknown candidates), candidate lists,
  fitting options and seeds, each valid or a hazard (non-finite, negative, huge, of the
  wrong type), either give a `GainBelief` over the adaptation candidates whose draws are
  finite gains in [-1, 1], or are refused with an InputError naming a field;
- decide: beliefs whose draws may be far outside the success-rate scale (1e50, ±inf,
  1.5), candidates, budgets, weights, execution-risk beliefs and options, each valid or a
  hazard, either give a `Decision` that holds together (its choice feasible, scores finite
  where they are defined, p_best a distribution, the flip probability 1 − p_best(best)) or
  are refused with an InputError naming a field.

The test suite checks the same properties with fewer examples
(`tests/test_properties_decide.py`). Prints one JSON object {"benchmark": "fuzz_decide",
"machine", "settings", "results"}: per property, how many inputs were accepted and refused,
and the failing example if a property does not hold.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import sys
import time
import warnings
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import bayes_s2r as bs
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import RECORD_TYPES

# ----------------------------------------------------------------------------- inputs
NAMES = ("dr", "si", "ft")
HAZARD_FLOATS = [math.nan, math.inf, -math.inf, -1.0, -0.0, 1e50, 1e51, 1e308, 5e-324, 2.0**63]
HAZARD_INTS = [0, -1, 1, 2**63, 2**70, 10**400]
junk = st.sampled_from([None, "x", 5, 1.5, True, [], {}, object()])

# Fixed shapes (draw counts, look-ahead samples) keep the number of compiled programs small.
NUM_DRAWS = 64
CVU_SAMPLES = (8, 16)

good_gain = st.floats(-0.3, 0.6)
bad_gain = st.sampled_from([1e50, 1e51, -1e50, 1.5, -1.0000001, 1.0000001, math.inf, -math.inf, math.nan])


@st.composite
def beliefs(draw) -> Any:
    """A GainBelief over some of NAMES (built directly, so no check of its own has run), or junk."""
    if draw(st.integers(0, 9)) == 0:
        return draw(junk)
    k = draw(st.sampled_from([len(NAMES)] * 3 + list(range(1, len(NAMES)))))  # mostly every name
    names = list(NAMES[:k])
    if draw(st.integers(0, 5)) == 0:
        names.append("sensitivity:latency")
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    mean = np.array([draw(good_gain) for _ in names])
    sd = np.array([draw(st.floats(0.0, 0.1)) for _ in names])
    draws = np.clip(mean + sd * rng.standard_normal((NUM_DRAWS, len(names))), -1.0, 1.0)
    if draw(st.integers(0, 3)) == 0:  # a hazard in one cell, or a whole column
        j = draw(st.integers(0, len(names) - 1))
        value = draw(bad_gain)
        if draw(st.booleans()):
            draws[:, j] = value
        else:
            draws[draw(st.integers(0, NUM_DRAWS - 1)), j] = value
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return bs.GainBelief(names, draws)
    except InputError:  # non-finite draws are refused at construction already
        return bs.GainBelief(names, np.clip(np.nan_to_num(draws, nan=0.0), -1e51, 1e51))


numbers = st.floats(0.0, 5.0) | st.sampled_from(HAZARD_FLOATS)


@st.composite
def costs(draw) -> Any:
    values = [draw(st.floats(0.0, 2.0) if draw(st.integers(0, 9)) else numbers) for _ in range(3)]
    try:
        return bs.Cost(*values)
    except (InputError, ValueError):
        return bs.Cost(1.0, 1.0, 1.0)


@st.composite
def candidate_lists(draw) -> Any:
    out = []
    k = draw(st.integers(1, len(NAMES)))
    for name in NAMES[:k]:
        out.append(bs.Candidate(name, "adaptation", "data", cost=draw(costs()),
                                touches_robot=draw(st.booleans()), repeatable=draw(st.booleans()),
                                outcome=bs.BinomialPairedOutcome(episodes=draw(st.sampled_from([10, 40])))))
    if draw(st.booleans()):
        out.append(bs.Candidate("pilot", "diagnosis", "data", observes=NAMES[0], cost=draw(costs()),
                                outcome=bs.GaussianOutcome(noise_sd=0.05)))
    if draw(st.integers(0, 9)) == 0:  # a candidate the belief may not hold
        out.append(bs.Candidate("other", "adaptation", "data", cost=bs.Cost(eng=1.0)))
    return out


@st.composite
def budgets(draw) -> Any:
    if draw(st.integers(0, 19)) == 0:
        return draw(junk)
    values = [draw(st.floats(0.0, 10.0) if draw(st.integers(0, 9)) else numbers) for _ in range(3)]
    try:
        return bs.Budget(*values)
    except (InputError, ValueError):
        return bs.Budget(5.0, 5.0, 5.0)


@st.composite
def weight_sets(draw) -> Any:
    if draw(st.integers(0, 19)) == 0:
        return draw(junk)
    values = [draw(st.floats(0.0, 1.0) if draw(st.integers(0, 9)) else numbers) for _ in range(3)]
    scarcity = draw(st.sampled_from([0.0, 0.5, 2.0]))
    try:
        return bs.ResourceWeights(*values, scarcity=scarcity)
    except (InputError, ValueError):
        return bs.ResourceWeights()


class FixedRisk:
    """An execution-risk belief that answers one bound for every candidate."""

    def __init__(self, bound: Any):
        self.bound = bound

    def ucb(self, name: str, delta: float) -> Any:
        return self.bound

    def __repr__(self) -> str:
        return f"FixedRisk({self.bound!r})"


risks = st.one_of(  # mostly valid: a refused risk hides whether the rest would be accepted
    st.none(),
    st.sampled_from([0.0, 0.01, 0.5, 1.0]).map(FixedRisk),
    st.none(),
    st.sampled_from([0.0, 0.01, 0.5, 1.0]).map(FixedRisk),
    st.sampled_from([1.5, -0.1, math.nan, "low"]).map(FixedRisk),
    junk,
)

OPTIONS = {  # decide's keyword options: valid values, then hazards
    "cvu_samples": (st.sampled_from(CVU_SAMPLES), st.sampled_from([0, 1, -3, 2**70, 8.5, True, "8"])),
    "beta": (st.floats(0.0, 2.0), st.sampled_from([-1.0, math.nan, math.inf, "1", None])),
    "alpha_exec": (st.sampled_from([0.05, 0.2]), st.sampled_from([-0.1, 1.5, math.nan, "a"])),
    "delta": (st.sampled_from([0.05, 0.2]), st.sampled_from([0.0, 1.0, -1.0, math.nan])),
    "terminal": (st.booleans(), st.sampled_from([0, "yes", None])),
    "seed": (st.integers(0, 2**31), st.sampled_from([-1, 1.5, "0", None])),
    "utility": (st.sampled_from(["mean", "lcb", "cvar", "adopt"]), st.sampled_from(["max", "", 3])),
    "current_J": (st.none() | st.floats(0.0, 1.0), st.sampled_from([1.5, -0.1, math.nan, "0.5"])),
    "continuation": (st.just("g0"), st.sampled_from(["lookahead", None])),
}


@st.composite
def decide_options(draw) -> dict:
    out = {"allow_bad_belief": True, "cvu_samples": CVU_SAMPLES[0]}
    for name, (good, bad) in OPTIONS.items():
        roll = draw(st.integers(0, 14))
        if roll < 8:
            out[name] = draw(good)
        elif roll == 8:
            out[name] = draw(bad)
    return out


# fit_gains: records of the right types whose values are valid (records check themselves),
# naming known or unknown candidates, with options valid or hazards
@st.composite
def evidence_lists(draw) -> Any:
    if draw(st.integers(0, 19)) == 0:
        return draw(junk)
    out = []
    for _ in range(draw(st.integers(0, 4))):
        name = draw(st.sampled_from([*NAMES[:2], "typo"] if draw(st.integers(0, 9)) == 0 else NAMES[:2]))
        n = draw(st.sampled_from([1, 20, 50, 10**6]))
        out.append(bs.PairedEval(name, draw(st.integers(0, n)), n, draw(st.integers(0, n)), n,
                                 round=draw(st.integers(0, 2))))
    if draw(st.integers(0, 9)) == 0:
        out.append(draw(junk))
    return out


FIT_OPTIONS = {
    "method": (st.just("svi"), st.sampled_from(["hmc", None, 3])),
    "seed": (st.integers(0, 2**31), st.sampled_from([-1, 2**70, 1.5, "0"])),
    "svi_steps": (st.just(50), st.sampled_from([0, -5, 2.5, "50"])),
    "num_samples": (st.just(NUM_DRAWS), st.sampled_from([0, 1, -1, 1.5, 2**70])),
    "svi_learning_rate": (st.just(0.05), st.sampled_from([0.0, -1.0, math.nan, math.inf, "fast"])),
    "svi_guide": (st.sampled_from(["lowrank", "normal"]), st.sampled_from(["full", 1])),
    "objective": (st.just("success"), st.sampled_from(["energy", 5, None])),
}


@st.composite
def fit_options(draw) -> dict:
    out = {"method": "svi", "svi_steps": 50, "num_samples": NUM_DRAWS, "num_chains": 1}
    for name, (good, bad) in FIT_OPTIONS.items():
        roll = draw(st.integers(0, 19))
        if roll < 12:
            out[name] = draw(good)
        elif roll == 12:
            out[name] = draw(bad)
    return out


@st.composite
def fit_candidate_lists(draw) -> Any:
    if draw(st.integers(0, 19)) == 0:
        return draw(junk)
    out = [bs.Candidate(n, "adaptation", "data", outcome=bs.BinomialPairedOutcome(episodes=20))
           for n in NAMES[: draw(st.integers(1, 2))]]
    if draw(st.booleans()):
        out.append(bs.Candidate("pilot", "diagnosis", "data", observes=NAMES[0]))
    return out


# ----------------------------------------------------------------------------- checks
DECIDE_FIELDS = {"belief", "candidates", "budget", "weights", "risk", "reference", "current_J", "done",
                 *OPTIONS, "allow_bad_belief"}
# a record of the evidence is named by its kind and id: "paired_eval[id=...].candidate"
FIT_FIELDS = {"evidence", "candidates", "records", *FIT_OPTIONS, "num_chains", *RECORD_TYPES}


def check_refusal(err: InputError, fields: set[str]) -> None:
    """An InputError names an input (its head before any '.', '[' or ' '), in a readable message."""
    assert isinstance(err.field, str) and err.field in str(err), err
    head = err.field.replace("[", ".").replace(" ", ".").replace("(", ".").split(".")[0]
    assert head in fields, f"{err.field!r} names no input of {sorted(fields)}"
    assert len(str(err)) < 2000, len(str(err))


def check_decide(belief, candidates, budget, weights, risk, options: dict) -> str:
    """The decide property for one input: "accepted" or "refused" (else AssertionError)."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = bs.decide(belief, candidates, budget, weights, risk=risk, **options)
    except InputError as e:
        check_refusal(e, DECIDE_FIELDS)
        return "refused"
    t = d.table
    names = [c.name for c in candidates]
    assert list(t.index) == names
    assert d.stop_reason in (None, "economic", "budget", "no_feasible")
    assert (d.best is None) == (d.stop_reason is not None)
    if d.best is not None:
        assert bool(t.loc[d.best, "feasible"]), d.best
    mu = t["mu_dJ"].to_numpy(float)
    assert np.all(np.isfinite(mu)) and np.all(np.abs(mu) <= 1.0 + 1e-9), mu
    feasible = t["feasible"].to_numpy(bool)
    for col in ("C_lambda", "U0", "Q"):
        assert np.all(np.isfinite(t[col].to_numpy(float)[feasible])), (col, t[col])
    p = d.p_best.to_numpy(float)
    assert np.all(np.isfinite(p)) and np.all(p >= -1e-12) and abs(p.sum() - 1.0) < 1e-6, d.p_best
    assert set(d.p_best.index) <= {*names, "(stop)"}
    key = d.best if d.best is not None else "(stop)"
    assert 0.0 <= d.flip_probability <= 1.0
    assert abs(d.flip_probability - (1.0 - float(d.p_best.get(key, 0.0)))) < 1e-6
    return "accepted"


def check_fit(evidence, candidates, options: dict) -> str:
    """The fit property for one input: "accepted" or "refused" (else AssertionError)."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            belief = bs.fit_gains(evidence, candidates, **options)
    except InputError as e:
        check_refusal(e, FIT_FIELDS)
        return "refused"
    adapt = [c.name for c in candidates if c.role == "adaptation"]
    assert [n for n in belief.names if not n.startswith("sensitivity:")] == adapt, belief.names
    draws = np.asarray(belief.draws)
    assert draws.shape[1] == len(belief.names) and draws.shape[0] >= 2
    assert np.all(np.isfinite(draws)) and np.all(np.abs(draws) <= 1.0), "a gain outside [-1, 1]"
    return "accepted"


# ----------------------------------------------------------------------------- running
def run(examples: int, seed: int, fit_examples: int | None = None) -> dict[str, dict[str, int]]:
    """Check both properties (`fit_examples` inputs for the fit, default a quarter of
    `examples`, as each accepted one runs a short SVI fit); return the outcome counts.

    Raises:
        AssertionError: a property does not hold (Hypothesis reports the smallest example).
    """
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    fit_examples = max(1, examples // 4) if fit_examples is None else fit_examples

    def cfg(n):
        return settings(max_examples=n, deadline=None, database=None,  # quiet: stdout is the JSON
                        suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)

    @hypothesis_seed(seed)
    @cfg(examples)
    @given(beliefs(), candidate_lists(), budgets(), weight_sets(), risks, decide_options())
    def decide_property(belief, candidates, budget, weights, risk, options):
        counts["decide"][check_decide(belief, candidates, budget, weights, risk, options)] += 1

    @hypothesis_seed(seed)
    @cfg(fit_examples)
    @given(evidence_lists(), fit_candidate_lists(), fit_options())
    def fit_property(evidence, candidates, options):
        counts["fit"][check_fit(evidence, candidates, options)] += 1

    for prop in (decide_property, fit_property):
        prop()
    return {k: dict(sorted(v.items())) for k, v in sorted(counts.items())}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=2000, help="inputs of the decide property")
    p.add_argument("--fit-examples", type=int, default=None,
                   help="inputs of the fit property (default: a quarter of --examples)")
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
        results = run(args.examples, args.seed, args.fit_examples)
    except Exception as e:  # noqa: BLE001  (any error fails a property; reported with its example)
        notes = "; ".join(getattr(e, "__notes__", []))  # Hypothesis adds the failing example
        results, failure = {}, f"{type(e).__name__}: {e} ({notes})"
    result = {
        "benchmark": "fuzz_decide",
        "machine": machine(),
        "settings": {"examples": args.examples, "fit_examples": args.fit_examples, "seed": args.seed},
        "results": {"counts": results, "ok": failure is None, "failure": failure,
                    "wall_s": round(time.perf_counter() - start, 2)},
    }
    return emit(result, args.out)


if __name__ == "__main__":
    sys.exit(0 if main()["results"]["ok"] else 1)
