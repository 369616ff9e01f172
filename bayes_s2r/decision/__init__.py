"""Decision engine: scores, Monte-Carlo CVU, stability and `decide` (DESIGN.md §2)."""

from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.decide import decide
from bayes_s2r.decision.result import Decision
from bayes_s2r.decision.transition import AlternativesTransition, HeadroomTransition, NoTransition

__all__ = [
    "AlternativesTransition",
    "DecideConfig",
    "Decision",
    "HeadroomTransition",
    "NoTransition",
    "decide",
]
