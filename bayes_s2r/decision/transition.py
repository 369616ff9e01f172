"""Transition rules: how the other candidates' gains change once an adaptation is deployed.

A gain is a property of the current policy. After adaptation m is deployed (π_t → π^m),
the look-ahead needs the gains of the remaining adaptations measured from π^m. A rule is
any hashable object with a method

    apply(mean, var, own_gain, j_now) -> (mean, var)

that runs inside `jax.jit`: `mean`, `var` are [C] arrays (the updated belief's mean and
variance of every candidate's gain; 0 for candidates that are not adaptations),
`own_gain` is the updated mean gain of m itself and `j_now` the current J. Frozen
dataclasses are hashable and make good rules; the rule is a static argument of the
compiled look-ahead, so one rule compiles once.

A rule may also set `repeat_share` (default 1): the share of m's own transformed gain that
a repeat of m (if m is repeatable) is expected to bring from π^m. The belief's gain of m is
its effect from π_t; once π^m is deployed, that effect is in the policy. With 1 a repeat is
worth what a first run was (after the rule's scaling), which favours repeatable candidates
over one-off ones by the value of that second run; 0 says a repeat adds nothing.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import jax.numpy as jnp

from bayes_s2r.errors import InputError, require_finite_nonneg

__all__ = ["TRANSITIONS", "AlternativesTransition", "HeadroomTransition", "NoTransition", "repeat_share", "resolve_transition"]


@dataclasses.dataclass(frozen=True)
class HeadroomTransition:
    """The default rule: gains shrink with the headroom that is left.

    After adapting, J_new = J_now + μ'_m, and every remaining adaptation's gain is scaled
    by the headroom ratio r = (1 − J_new) / (1 − J_now), clipped to [0, `max_ratio`]
    (means scale by r, variances by r²). With J on the success-probability scale, an
    intervention that closed half of the gap leaves half of each other gain.

    A repeat of m itself is expected to bring `repeat_share` of that: 1 (the default) takes
    the same share of the remaining headroom again, as more real fine-tuning would; 0 says
    what m fixed is fixed and a repeat adds nothing, as retraining with the same
    randomization would.

    Example:
        >>> import jax.numpy as jnp
        >>> m, v = HeadroomTransition().apply(jnp.array([0.2, 0.1]), jnp.array([0.01, 0.04]), 0.25, 0.5)
        >>> [round(float(x), 3) for x in m], [round(float(x), 4) for x in v]
        ([0.1, 0.05], [0.0025, 0.01])
    """

    max_ratio: float = 2.0
    eps: float = 1e-6
    repeat_share: float = 1.0

    def __post_init__(self):
        for field in ("max_ratio", "eps", "repeat_share"):
            require_finite_nonneg(f"HeadroomTransition.{field}", getattr(self, field))

    def apply(self, mean, var, own_gain, j_now):
        head_now = jnp.maximum(1.0 - j_now, self.eps)
        ratio = jnp.clip((1.0 - (j_now + own_gain)) / head_now, 0.0, self.max_ratio)
        return mean * ratio, var * ratio**2


@dataclasses.dataclass(frozen=True)
class NoTransition:
    """Deploying an adaptation leaves the other gains as they were (gains add up, and a
    repeat adds its gain again: `repeat_share` 1)."""

    repeat_share: float = 1.0

    def __post_init__(self):
        require_finite_nonneg("NoTransition.repeat_share", self.repeat_share)

    def apply(self, mean, var, own_gain, j_now):
        return mean, var


@dataclasses.dataclass(frozen=True)
class AlternativesTransition:
    """The candidates are alternatives: each is trained from the same start policy, and a lab
    keeps the best one it has measured (Weitzman's Pandora's box).

    Once m is deployed, another candidate is worth only what it adds over m: every gain's
    mean drops by m's gain, and its variance is left as it was. A repeat of m brings
    nothing new (`repeat_share` 0).

    Example:
        >>> import jax.numpy as jnp
        >>> m, v = AlternativesTransition().apply(jnp.array([0.2, 0.1]), jnp.array([0.01, 0.04]), 0.15, 0.5)
        >>> [round(float(x), 3) for x in m], [round(float(x), 4) for x in v]
        ([0.05, -0.05], [0.01, 0.04])
    """

    repeat_share: float = 0.0

    def __post_init__(self):
        require_finite_nonneg("AlternativesTransition.repeat_share", self.repeat_share)

    def apply(self, mean, var, own_gain, j_now):
        return mean - own_gain, var


#: Transition rules by name, as a campaign stores them.
TRANSITIONS = MappingProxyType({"headroom": HeadroomTransition, "alternatives": AlternativesTransition,
                                "none": NoTransition})


def repeat_share(rule) -> float:
    """The rule's `repeat_share` (1 for a rule that does not set one)."""
    return float(getattr(rule, "repeat_share", 1.0))


def resolve_transition(rule):
    """`None` -> `HeadroomTransition()`; otherwise check the rule has `apply` and hashes."""
    if rule is None:
        return HeadroomTransition()
    if not callable(getattr(rule, "apply", None)):
        raise InputError("transition", rule, "an object with apply(mean, var, own_gain, j_now) -> (mean, var)")
    try:
        hash(rule)
    except TypeError:
        raise InputError("transition", rule, "a hashable rule (e.g. a frozen dataclass)") from None
    require_finite_nonneg("transition.repeat_share", getattr(rule, "repeat_share", 1.0))
    return rule
