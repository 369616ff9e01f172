"""The vocabulary: costs, budgets, resource weights, candidates and policy interfaces.

Every type here is a frozen dataclass validated on construction; bad input raises
`InputError` naming the field, the value and what was expected.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from bayes_s2r.errors import InputError, require_finite_nonneg

__all__ = [
    "LENSES",
    "RESOURCES",
    "ROLES",
    "Budget",
    "Candidate",
    "Cost",
    "PolicyInterface",
    "ResourceWeights",
    "check_shared_interface",
    "validate_candidates",
]

RESOURCES = ("real", "compute", "eng")
ROLES = ("adaptation", "diagnosis", "model_update")
LENSES = ("model", "data", "representation", "optimization")
SAFETY_PREFIX = "safety:"


def _resource_vector(obj) -> np.ndarray:
    return np.array([obj.real, obj.compute, obj.eng], dtype=np.float64)


@dataclasses.dataclass(frozen=True)
class Cost:
    """Incremental resource use ΔC of one candidate: real robot-hours, compute, engineering hours.

    Example:
        >>> Cost(real=1.0, eng=2.0).as_array().tolist()
        [1.0, 0.0, 2.0]
    """

    real: float = 0.0
    compute: float = 0.0
    eng: float = 0.0

    def __post_init__(self):
        for r in RESOURCES:
            object.__setattr__(self, r, require_finite_nonneg(f"cost.{r}", getattr(self, r)))

    def as_array(self) -> np.ndarray:
        return _resource_vector(self)

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(*(self.as_array() + other.as_array()).tolist())

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None, *, field: str = "cost") -> Cost:
        """Build from a mapping with keys among real/compute/eng (missing keys are 0)."""
        if values is None:
            return cls()
        if not isinstance(values, Mapping):
            raise InputError(field, values, "a mapping with keys real, compute, eng")
        unknown = sorted(set(values) - set(RESOURCES))
        if unknown:
            raise InputError(f"{field}.{unknown[0]}", values[unknown[0]], f"one of {RESOURCES}")
        try:
            return cls(**{k: values[k] for k in RESOURCES if k in values})
        except InputError as e:
            raise InputError(e.field.replace("cost", field, 1), e.value, e.expected) from None


@dataclasses.dataclass(frozen=True)
class Budget:
    """Remaining budget b_t, one component per resource.

    Example:
        >>> b = Budget(real=10, compute=100, eng=40)
        >>> b.covers(Cost(real=2)), (b - Cost(real=2)).real
        (True, 8.0)
    """

    real: float = 0.0
    compute: float = 0.0
    eng: float = 0.0

    def __post_init__(self):
        for r in RESOURCES:
            object.__setattr__(self, r, require_finite_nonneg(f"budget.{r}", getattr(self, r)))

    def as_array(self) -> np.ndarray:
        return _resource_vector(self)

    def covers(self, cost: Cost) -> bool:
        """True when ΔC ≤ b_t in every component."""
        return bool(np.all(cost.as_array() <= self.as_array() + 1e-12))

    def __sub__(self, cost: Cost) -> Budget:
        if not isinstance(cost, Cost):
            return NotImplemented
        left = self.as_array() - cost.as_array()
        for r, v in zip(RESOURCES, left):
            if v < -1e-9:
                raise InputError(
                    f"cost.{r}", getattr(cost, r), f"at most the remaining budget {getattr(self, r)}"
                )
        return Budget(*np.maximum(left, 0.0).tolist())

    def spend(self, cost: Cost) -> Budget:
        """Deduct a realized cost, flooring each component at 0 (an overrun spends what is left)."""
        return Budget(*np.maximum(self.as_array() - cost.as_array(), 0.0).tolist())

    def exhausted(self, tol: float = 1e-12) -> bool:
        return bool(np.all(self.as_array() <= tol))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], *, field: str = "budget") -> Budget:
        c = Cost.from_mapping(values, field=field)
        return cls(c.real, c.compute, c.eng)


@dataclasses.dataclass(frozen=True)
class ResourceWeights:
    """Resource weights λ_t with scarcity pricing λ_t = λ0 · (reference / b_t) ** scarcity.

    `scarcity=0` keeps the weights fixed; a positive scarcity raises the price of a resource
    as its remaining budget shrinks relative to `reference` (usually the starting budget).

    Example:
        >>> w = ResourceWeights(real=3.0, compute=0.1, eng=1.0, scarcity=1.0)
        >>> w.at(Budget(5, 50, 20), Budget(10, 100, 40)).tolist()
        [6.0, 0.2, 2.0]
    """

    real: float = 3.0
    compute: float = 0.1
    eng: float = 1.0
    scarcity: float = 0.0

    def __post_init__(self):
        for r in (*RESOURCES, "scarcity"):
            object.__setattr__(self, r, require_finite_nonneg(f"weights.{r}", getattr(self, r)))

    def base(self) -> np.ndarray:
        return _resource_vector(self)

    def at(self, budget: Budget | None = None, reference: Budget | None = None) -> np.ndarray:
        """λ at `budget`; without a budget or reference (or with scarcity 0) the base weights."""
        lam0 = self.base()
        if budget is None or reference is None or self.scarcity == 0.0:
            return lam0
        b, ref = budget.as_array(), reference.as_array()
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(ref > 0, ref / np.where(b > 0, b, 0.0), 1.0)
        return lam0 * ratio**self.scarcity

    def replace(self, **changes) -> ResourceWeights:
        return dataclasses.replace(self, **changes)


def _lens_tuple(lens: Any) -> tuple[str, ...]:
    if isinstance(lens, str):
        lens = (lens,)
    if not isinstance(lens, Iterable):
        raise InputError("candidate.lens", lens, f"a lens or a list of lenses among {LENSES}")
    out = tuple(lens)
    if not out:
        raise InputError("candidate.lens", lens, f"at least one lens among {LENSES}")
    for x in out:
        if x not in LENSES:
            raise InputError("candidate.lens", x, f"one of {LENSES}")
    return tuple(dict.fromkeys(out))


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One intervention m = (role, lens, protocol/batch) with its cost and safety attributes.

    Args:
        name: unique name.
        role: "adaptation" (changes the deployed policy), "diagnosis" (measures something)
            or "model_update" (refreshes the simulator or the belief, not the policy).
        lens: one or more of model, data, representation, optimization.
        method: a label such as "SI", "DR", "DA", "FT"; candidates share a prior by method.
        batch: scale of the protocol (a positive number, e.g. episodes or sim steps); gains
            saturate in it.
        cost: ΔC(m), the cost of running it once.
        touches_robot: whether running it executes anything on the real robot.
        repeatable: False for one-shot candidates that leave the set once run.
        observes: for a diagnosis, the candidate whose gain it measures, or
            "sensitivity:<direction>".
        targets: the mismatch direction an adaptation acts on, e.g. "latency".
        outcome: the outcome model of its experiment, e.g. `BinomialPairedOutcome(50)`.
        objectives: names of objectives it carries gains on (default: just "success").

    Example:
        >>> Candidate("dr_wide", "adaptation", "data", method="DR", cost=Cost(compute=4)).lens
        ('data',)
    """

    name: str
    role: str
    lens: tuple[str, ...] | str = ("data",)
    method: str | None = None
    batch: float | None = None
    cost: Cost = dataclasses.field(default_factory=Cost)
    touches_robot: bool = False
    repeatable: bool = True
    observes: str | None = None
    targets: str | None = None
    outcome: Any = None
    objectives: tuple[str, ...] = ("success",)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip() or self.name != self.name.strip():
            raise InputError("candidate.name", self.name, "a non-empty name without surrounding spaces")
        if self.name.startswith("(") or self.name.startswith("sensitivity:"):
            raise InputError("candidate.name", self.name, "a name not starting with '(' or 'sensitivity:'")
        if self.role not in ROLES:
            raise InputError("candidate.role", self.role, f"one of {ROLES}")
        object.__setattr__(self, "lens", _lens_tuple(self.lens))
        if self.method is not None and (not isinstance(self.method, str) or not self.method):
            raise InputError("candidate.method", self.method, "a non-empty label such as 'DR' or None")
        if self.batch is not None:
            if isinstance(self.batch, bool) or not isinstance(self.batch, (int, float)) or not (
                math.isfinite(self.batch) and self.batch > 0
            ):
                raise InputError("candidate.batch", self.batch, "a finite number > 0 or None")
            object.__setattr__(self, "batch", float(self.batch))
        if isinstance(self.cost, Mapping):
            object.__setattr__(self, "cost", Cost.from_mapping(self.cost, field="candidate.cost"))
        if not isinstance(self.cost, Cost):
            raise InputError("candidate.cost", self.cost, "a Cost")
        for flag in ("touches_robot", "repeatable"):
            if not isinstance(getattr(self, flag), bool):
                raise InputError(f"candidate.{flag}", getattr(self, flag), "True or False")
        if self.role == "diagnosis":
            if not isinstance(self.observes, str) or not self.observes:
                raise InputError(
                    "candidate.observes", self.observes,
                    "for a diagnosis, a candidate name or 'sensitivity:<direction>'",
                )
            if self.observes.startswith("sensitivity:") and not self.observes[len("sensitivity:"):]:
                raise InputError("candidate.observes", self.observes, "'sensitivity:<direction>'")
            if self.observes.startswith(SAFETY_PREFIX) and not self.observes[len(SAFETY_PREFIX):]:
                raise InputError("candidate.observes", self.observes, "'safety:<candidate name>'")
        elif self.observes is not None and not isinstance(self.observes, str):
            raise InputError("candidate.observes", self.observes, "a name or None")
        if self.targets is not None and (not isinstance(self.targets, str) or not self.targets):
            raise InputError("candidate.targets", self.targets, "a direction name or None")
        if self.outcome is not None and not (
            hasattr(self.outcome, "simulate") and hasattr(self.outcome, "log_likelihood")
        ):
            raise InputError(
                "candidate.outcome", self.outcome,
                "an outcome model such as BinomialPairedOutcome(episodes=50) or GaussianOutcome(noise_sd=0.1)",
            )
        objectives = self.objectives
        if isinstance(objectives, str):
            objectives = (objectives,)
        elif isinstance(objectives, Iterable) and not isinstance(objectives, Mapping):
            objectives = tuple(objectives)
        if not isinstance(objectives, tuple) or not objectives or not all(isinstance(o, str) and o for o in objectives):
            raise InputError("candidate.objectives", self.objectives, "one or more objective names")
        object.__setattr__(self, "objectives", objectives)

    @property
    def changes_policy(self) -> bool:
        return self.role == "adaptation"

    @property
    def observed_safety(self) -> str | None:
        """For a safety probe (`observes="safety:<name>"`), the candidate whose execution risk it measures."""
        if self.observes and self.observes.startswith(SAFETY_PREFIX):
            return self.observes[len(SAFETY_PREFIX):]
        return None

    @property
    def observed_direction(self) -> str | None:
        if self.observes and self.observes.startswith("sensitivity:"):
            return self.observes[len("sensitivity:"):]
        return None


def validate_candidates(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """Check a candidate set as a whole: unique names, diagnoses observe known candidates."""
    if isinstance(candidates, (str, bytes, Mapping)) or not isinstance(candidates, Iterable):
        raise InputError("candidates", candidates, "a list of Candidate objects")
    cands = tuple(candidates)
    if not cands:
        raise InputError("candidates", [], "at least one candidate")
    seen: set[str] = set()
    for i, c in enumerate(cands):
        if not isinstance(c, Candidate):
            raise InputError(f"candidates[{i}]", c, "a Candidate")
        if c.name in seen:
            raise InputError(f"candidates[{i}].name", c.name, "a name not used by another candidate")
        seen.add(c.name)
    for i, c in enumerate(cands):
        target = c.observed_safety
        if target is not None:
            robot = {x.name for x in cands if x.touches_robot and x.name != c.name}
            if target not in robot:
                raise InputError(f"candidates[{i}].observes", c.observes,
                                 f"'safety:<name>' of a robot-touching candidate in the set (have {sorted(robot)})")
            continue
        if c.role == "diagnosis" and c.observed_direction is None and c.observes not in seen:
            raise InputError(
                f"candidates[{i}].observes", c.observes,
                "the name of a candidate in the set or 'sensitivity:<direction>'",
            )
    return cands


# --------------------------------------------------------------------------- interfaces

_ACTION_KINDS = ("continuous", "discrete")
_ACTION_MODES = ("torque", "velocity", "position")
_HOLD = ("zero_order_hold", "first_order_hold", "none")


@dataclasses.dataclass(frozen=True)
class PolicyInterface:
    """What a policy sees and commands. Sim and real must agree for δ_J to be defined.

    Args:
        observation: mapping key -> dict(shape=tuple, units=str, normalization=str).
        action_kind: "continuous" or "discrete".
        action_mode: "torque", "velocity" or "position".
        action_bounds: (low, high) per action dimension, or a single pair.
        action_clamp: whether out-of-bound actions are clamped (else rejected).
        control_hz: control frequency in Hz.
        action_hold: "zero_order_hold", "first_order_hold" or "none".
        assumed_latency_steps: latency the policy was designed for, in control steps.
    """

    observation: Mapping[str, Mapping[str, Any]]
    action_kind: str = "continuous"
    action_mode: str = "torque"
    action_bounds: tuple = (-1.0, 1.0)
    action_clamp: bool = True
    control_hz: float = 25.0
    action_hold: str = "zero_order_hold"
    assumed_latency_steps: int = 0

    def __post_init__(self):
        if not isinstance(self.observation, Mapping) or not self.observation:
            raise InputError("interface.observation", self.observation, "a non-empty mapping key -> spec")
        frozen = {}
        for key, spec in self.observation.items():
            if not isinstance(spec, Mapping):
                raise InputError(f"interface.observation.{key}", spec, "a mapping with shape/units/normalization")
            try:
                shape = tuple(int(s) for s in spec.get("shape", ()))
            except (TypeError, ValueError):
                raise InputError(f"interface.observation.{key}.shape", spec.get("shape"),
                                 "a tuple of whole numbers") from None
            frozen[str(key)] = (
                ("shape", shape),
                ("units", str(spec.get("units", ""))),
                ("normalization", str(spec.get("normalization", "none"))),
            )
        object.__setattr__(self, "observation", dict(sorted(frozen.items())))
        if self.action_kind not in _ACTION_KINDS:
            raise InputError("interface.action_kind", self.action_kind, f"one of {_ACTION_KINDS}")
        if self.action_mode not in _ACTION_MODES:
            raise InputError("interface.action_mode", self.action_mode, f"one of {_ACTION_MODES}")
        if self.action_hold not in _HOLD:
            raise InputError("interface.action_hold", self.action_hold, f"one of {_HOLD}")
        if isinstance(self.control_hz, bool) or not (
            isinstance(self.control_hz, (int, float)) and math.isfinite(self.control_hz) and self.control_hz > 0
        ):
            raise InputError("interface.control_hz", self.control_hz, "a finite frequency > 0")
        try:
            bounds = tuple(np.asarray(self.action_bounds, dtype=float).ravel().tolist())
        except (TypeError, ValueError):
            bounds = (math.nan,)
        if len(bounds) % 2 or not all(math.isfinite(b) for b in bounds):
            raise InputError("interface.action_bounds", self.action_bounds, "finite (low, high) pairs")
        object.__setattr__(self, "action_bounds", bounds)
        if isinstance(self.assumed_latency_steps, bool) or not isinstance(self.assumed_latency_steps, int) or self.assumed_latency_steps < 0:
            raise InputError("interface.assumed_latency_steps", self.assumed_latency_steps, "a whole number >= 0")

    def differences(self, other: PolicyInterface) -> list[str]:
        """Every field that differs, as readable lines."""
        diffs = []
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if f.name == "observation":
                for key in sorted(set(a) | set(b)):
                    if a.get(key) != b.get(key):
                        diffs.append(f"observation.{key}: {dict(a[key]) if key in a else None} != "
                                     f"{dict(b[key]) if key in b else None}")
            elif a != b:
                diffs.append(f"{f.name}: {a!r} != {b!r}")
        return diffs


def check_shared_interface(sim: PolicyInterface, real: PolicyInterface) -> None:
    """Refuse to go on unless sim and real share one policy interface.

    The transfer delta δ_J = J_real − J_sim is undefined otherwise.

    Raises:
        InputError: listing every field that differs.
    """
    diffs = sim.differences(real)
    if diffs:
        raise InputError(
            "policy_interface", "; ".join(diffs),
            "the same policy interface in sim and real (the transfer delta is undefined otherwise)",
        )
