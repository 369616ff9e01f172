"""Where the report's gain posterior comes from.

Preferred: refit the gain posterior on the ledger's evidence with `bayes_s2r.fit_gains`
(imported lazily: it is the heavy part and may be absent). Fallback: the latest round's
stored belief summary (DecisionRecord.extra["belief"]: mean and sd per adaptation
candidate), drawn as independent normals; the figure's title says which one it shows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple

from bayes_s2r.belief.posterior import GainBelief
from bayes_s2r.errors import InputError
from bayes_s2r.report.data import ReportData, _extra

__all__ = ["POSTERIOR_MODES", "BeliefSource", "candidates_from_meta", "report_belief"]

POSTERIOR_MODES = ("auto", "refit", "summary")


class BeliefSource(NamedTuple):
    """The belief to draw and where it came from.

    Attributes:
        belief: a GainBelief, or None when the ledger holds none.
        source: a short phrase for the figure title ("round 3, refit on the ledger").
        note: why the preferred source was not used, or None.
    """

    belief: GainBelief | None
    source: str
    note: str | None


def candidates_from_meta(data: ReportData) -> list:
    """Build `Candidate` objects from meta["campaign"]["candidates"] (candidate-file dicts)."""
    from bayes_s2r.belief.outcomes import outcome_from_mapping
    from bayes_s2r.vocab import Candidate

    specs = data.campaign.get("candidates") or []
    fields = {f.name for f in dataclasses.fields(Candidate)}
    out = []
    for i, spec in enumerate(specs):
        if not isinstance(spec, Mapping):
            raise InputError(f"campaign.candidates[{i}]", spec, "a candidate table")
        kw: dict[str, Any] = {k: v for k, v in spec.items() if k in fields}
        if isinstance(kw.get("outcome"), Mapping):
            kw["outcome"] = outcome_from_mapping(dict(kw["outcome"]), field=f"candidates[{i}].outcome")
        if isinstance(kw.get("objectives"), list):
            kw["objectives"] = tuple(kw["objectives"])
        out.append(Candidate(**kw))
    return out


def _from_summary(data: ReportData) -> BeliefSource:
    for d in reversed(data.decisions):
        b = _extra(d).get("belief")
        if not isinstance(b, Mapping):
            continue
        rows = [(n, s) for n, s in b.items() if isinstance(s, Mapping)
                and isinstance(s.get("mean"), (int, float)) and isinstance(s.get("sd"), (int, float))]
        if rows:
            names = [n for n, _ in rows]
            belief = GainBelief.from_gaussian(names, [s["mean"] for _, s in rows],
                                              [max(float(s["sd"]), 0.0) for _, s in rows],
                                              num_draws=4000, seed=0)
            return BeliefSource(belief, f"round {d.round}, normal approximation of the stored summary",
                                None)
    return BeliefSource(None, "needs a belief summary, which each DecisionRecord of `bayes-s2r decide` "
                              "or of a campaign holds", None)


def _fit_gains():
    """The belief package's `fit_gains`, imported only when a refit is asked for."""
    from bayes_s2r.belief.fit import fit_gains

    return fit_gains


def _fit_settings(data: ReportData, fit_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The campaign's own fit settings (method, seed; for candidates that are alternatives, the
    policy they are trained from), overridden by `fit_kwargs`."""
    from bayes_s2r.belief.data import alternatives_fit

    camp = data.campaign
    out: dict[str, Any] = {}
    if isinstance(camp.get("fit_method"), str):
        out["method"] = camp["fit_method"]
    if isinstance(camp.get("seed"), int):
        out["seed"] = camp["seed"]
    if camp.get("transition_rule") == "alternatives" and isinstance(camp.get("policy"), str):
        out.update(alternatives_fit(camp["policy"], camp.get("adoptions")))
    return {**out, **dict(fit_kwargs or {})}


def report_belief(data: ReportData, posterior: str = "auto",
                  fit_kwargs: Mapping[str, Any] | None = None) -> BeliefSource:
    """The gain belief for the posterior figure.

    Args:
        data: the ledger's content.
        posterior: "refit" (fit_gains on the ledger's evidence; errors propagate),
            "summary" (normal approximation of the latest stored summary) or "auto"
            (refit when `fit_gains` and the campaign's candidates are available, else
            the summary, with the reason in `note`).
        fit_kwargs: keyword arguments for `fit_gains` (e.g. a smaller sample size); by
            default the campaign's own `fit_method` and `seed` from meta.

    Returns:
        BeliefSource.
    """
    if posterior not in POSTERIOR_MODES:
        raise InputError("posterior", posterior, f"one of {POSTERIOR_MODES}")
    if posterior == "summary":
        return _from_summary(data)
    try:
        fit_gains = _fit_gains()
    except ImportError as e:
        if posterior == "refit":
            raise
        fallback = _from_summary(data)
        return fallback._replace(note=f"fit_gains unavailable ({e.name or e})")
    if posterior == "auto" and not data.campaign.get("candidates"):  # a ledger filled by hand
        fallback = _from_summary(data)
        return fallback._replace(note="the ledger holds no campaign candidates to refit with")
    try:
        candidates = candidates_from_meta(data)
        if not candidates:
            raise InputError("campaign.candidates", [], "the campaign's candidates in meta")
        belief = fit_gains(list(data.records), candidates, **_fit_settings(data, fit_kwargs))
    except Exception as e:
        if posterior == "refit":
            raise
        fallback = _from_summary(data)
        return fallback._replace(note=f"refit failed ({type(e).__name__}: {e})")
    last = data.decisions[-1].round if data.decisions else None
    where = f"after round {last}" if last is not None else "ledger evidence"
    return BeliefSource(belief, f"{where}, refit on the ledger's evidence ({belief.method})", None)
