"""Belief state q_t: posteriors over gains, sensitivities and risks, and outcome models."""

from bayes_s2r.belief.outcomes import (
    BinomialPairedOutcome,
    GaussianOutcome,
    NoOutcome,
    outcome_from_mapping,
)
from bayes_s2r.belief.posterior import GainBelief

__all__ = [
    "BinomialPairedOutcome",
    "GaussianOutcome",
    "NoOutcome",
    "GainBelief",
    "outcome_from_mapping",
]
