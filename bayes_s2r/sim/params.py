"""World parameters ξ, perturbation directions and domain-randomization distributions.

ξ is a `Params` NamedTuple of scalars (or of equal-shape arrays for a batch). Every field is
a traced value inside the compiled rollouts, so a new ξ never recompiles anything.

Friction is not a parameter: the `inverted_pendulum` MJCF sets `contype=0`, so no contact
is ever generated and a friction coefficient has no effect on the dynamics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.errors import InputError, require_finite, require_finite_nonneg

__all__ = [
    "DIRECTIONS",
    "MAX_LATENCY",
    "PARAM_NAMES",
    "DRSpec",
    "Direction",
    "Params",
    "broadcast_params",
    "nominal_params",
    "params_from_mapping",
    "perturb",
    "sample_params",
    "stack_params",
]

#: Largest action latency (control steps) the rollouts can represent (static buffer size).
MAX_LATENCY = 5


class Params(NamedTuple):
    """Physical and interface parameters ξ of a world.

    Attributes:
        mass_scale: multiplier on the pole (link) mass and inertia.
        damping_scale: multiplier on every joint's damping.
        gear_scale: multiplier on the actuator gear (actuator gain).
        latency: action latency in control steps (a whole number 0..MAX_LATENCY, stored as float).
        obs_noise: standard deviation of Gaussian noise added to every observation channel.
        obs_bias: constant offset on the pole-angle reading (rad).
        control_period: seconds between two policy actions (physics runs n_frames per action).
    """

    mass_scale: Any = 1.0
    damping_scale: Any = 1.0
    gear_scale: Any = 1.0
    latency: Any = 0.0
    obs_noise: Any = 0.0
    obs_bias: Any = 0.0
    control_period: Any = 0.04


PARAM_NAMES = Params._fields

_POSITIVE = ("mass_scale", "damping_scale", "gear_scale", "control_period")
_NONNEG = ("latency", "obs_noise")


def nominal_params() -> Params:
    """The nominal ξ (every scale 1, no latency, no noise or bias, 25 Hz control)."""
    return Params()


def _check_value(field: str, name: str, value: Any) -> float:
    value = require_finite(f"{field}.{name}", value)
    if name in _POSITIVE and value <= 0:
        raise InputError(f"{field}.{name}", value, "a number > 0")
    if name in _NONNEG and value < 0:
        raise InputError(f"{field}.{name}", value, "a number >= 0")
    if name == "latency" and (value != int(value) or value > MAX_LATENCY):
        raise InputError(f"{field}.{name}", value, f"a whole number of control steps 0..{MAX_LATENCY}")
    return value


def params_from_mapping(values: Mapping[str, Any] | None, *, field: str = "params",
                        base: Params | None = None) -> Params:
    """Validated `Params` from a mapping (unknown keys are rejected; missing keys keep `base`)."""
    base = base or nominal_params()
    if values is None:
        return base
    if not isinstance(values, Mapping):
        raise InputError(field, values, f"a mapping with keys among {PARAM_NAMES}")
    unknown = sorted(set(values) - set(PARAM_NAMES))
    if unknown:
        hint = " (friction has no effect: the MJCF sets contype=0)" if "friction" in unknown else ""
        raise InputError(f"{field}.{unknown[0]}", values[unknown[0]], f"a key among {PARAM_NAMES}{hint}")
    clean = {k: _check_value(field, k, v) for k, v in values.items()}
    return base._replace(**clean)


# ----------------------------------------------------------------------------- directions

@dataclasses.dataclass(frozen=True)
class Direction:
    """A mismatch direction: `level` 1.0 moves `param` by `unit`, a plausible real mismatch size.

    Attributes:
        name: direction name used in records (e.g. "latency").
        param: the `Params` field it moves.
        unit: change of the parameter at level 1.0 (added to the nominal value).
        integer: the parameter takes whole values (latency); levels are rounded.
    """

    name: str
    param: str
    unit: float
    integer: bool = False


#: The standard directions; level 1.0 is a plausible real mismatch for each.
DIRECTIONS: Mapping[str, Direction] = MappingProxyType({
    d.name: d
    for d in (
        Direction("mass", "mass_scale", 0.3),
        Direction("damping", "damping_scale", -0.3),
        Direction("gear", "gear_scale", -0.2),
        Direction("latency", "latency", 2.0, integer=True),
        Direction("obs_noise", "obs_noise", 0.02),
        Direction("obs_bias", "obs_bias", 0.05),
    )
})


def _direction(name: str, field: str = "direction") -> Direction:
    if name not in DIRECTIONS:
        raise InputError(field, name, f"one of {tuple(DIRECTIONS)}")
    return DIRECTIONS[name]


def perturb(params: Params, direction: str, level: float) -> Params:
    """ξ moved along `direction` by `level` units (validated; plain Python, not for jit).

    Example:
        >>> perturb(nominal_params(), "latency", 1.0).latency
        2.0
    """
    d = _direction(direction)
    value = float(getattr(params, d.param)) + d.unit * require_finite("level", level)
    if d.integer:
        value = float(round(value))
    return params_from_mapping({d.param: value}, field=f"perturb[{direction}={level}]", base=params)


def broadcast_params(params: Params, n: int) -> Params:
    """A batch of `n` copies of ξ as float32 arrays of shape [n]."""
    return Params(*(jnp.full((n,), v, dtype=jnp.float32) for v in params))


def stack_params(items: list[Params]) -> Params:
    """Stack a list of scalar `Params` into one batch."""
    return Params(*(jnp.asarray(np.array(col, dtype=np.float32)) for col in zip(*items)))


# ----------------------------------------------------------------------------- DR

class DRSpec(NamedTuple):
    """A domain-randomization distribution p_DR(ξ), independent per parameter.

    Attributes:
        center: `Params` of centers.
        width: `Params` of widths (half-width of a uniform, or standard deviation of a normal);
            0 keeps a parameter fixed at its center.
        normal: `Params` of booleans: True draws a normal, False a uniform.

    Samples are clipped to valid values (scales >= 5% of the center, noise >= 0). Latency is
    drawn uniformly over the whole numbers in [c − w, c + w] ∩ [0, MAX_LATENCY] (so a width
    of 2 around 0 gives {0, 1, 2} with equal mass), or rounded from a normal. All fields are arrays, so a `DRSpec` is a traced argument.
    """

    center: Params
    width: Params
    normal: Params

    @classmethod
    def create(cls, center: Params | Mapping | None = None, width: Mapping[str, float] | None = None,
               normal: Mapping[str, bool] | None = None) -> DRSpec:
        """Validated spec: `width` and `normal` are mappings parameter -> value (others 0 / uniform).

        Example:
            >>> spec = DRSpec.create(width={"latency": 2, "mass_scale": 0.3})
            >>> float(spec.width.latency)
            2.0
        """
        if not isinstance(center, Params):
            center = params_from_mapping(center, field="dr.center")
        width = dict(width or {})
        normal = dict(normal or {})
        for name, table in (("dr.width", width), ("dr.normal", normal)):
            unknown = sorted(set(table) - set(PARAM_NAMES))
            if unknown:
                raise InputError(f"{name}.{unknown[0]}", table[unknown[0]], f"a key among {PARAM_NAMES}")
        for k, v in width.items():
            require_finite_nonneg(f"dr.width.{k}", v)
        for k, v in normal.items():
            if not isinstance(v, bool):
                raise InputError(f"dr.normal.{k}", v, "True or False")
        f32 = lambda x: jnp.asarray(x, dtype=jnp.float32)
        return cls(
            Params(*(f32(v) for v in center)),
            Params(*(f32(width.get(k, 0.0)) for k in PARAM_NAMES)),
            Params(*(jnp.asarray(normal.get(k, False)) for k in PARAM_NAMES)),
        )

    @classmethod
    def from_levels(cls, levels: Mapping[str, float], center: Params | None = None) -> DRSpec:
        """Uniform DR whose half-width along each direction is `level` × the direction's unit."""
        width = {}
        for name, level in levels.items():
            d = _direction(name, field=f"dr.levels.{name}")
            width[d.param] = abs(d.unit) * require_finite_nonneg(f"dr.levels.{name}", level)
        return cls.create(center, width)


def sample_params(key: jax.Array, spec: DRSpec, n: int) -> Params:
    """Draw `n` independent ξ from p_DR (jittable; `n` static). Returns `Params` of shape [n]."""
    keys = jax.random.split(key, len(PARAM_NAMES))
    out = []
    for i, name in enumerate(PARAM_NAMES):
        c, w, is_normal = spec.center[i], spec.width[i], spec.normal[i]
        if name == "latency":  # integers: uniform over the valid whole numbers within c ± w
            u = jax.random.uniform(keys[i], (n,))
            z = jax.random.normal(keys[i], (n,))
            lo = jnp.clip(jnp.round(c) - jnp.floor(w), 0, MAX_LATENCY)
            hi = jnp.clip(jnp.round(c) + jnp.floor(w), 0, MAX_LATENCY)
            uniform = jnp.minimum(lo + jnp.floor(u * (hi - lo + 1)), hi)
            val = jnp.clip(jnp.round(jnp.where(is_normal, c + w * z, uniform)), 0, MAX_LATENCY)
        else:
            u = jax.random.uniform(keys[i], (n,), minval=-1.0, maxval=1.0)
            z = jax.random.normal(keys[i], (n,))
            val = c + w * jnp.where(is_normal, z, u)
            if name in _POSITIVE:
                val = jnp.maximum(val, 0.05 * c)
            elif name in _NONNEG:
                val = jnp.maximum(val, 0.0)
        out.append(val.astype(jnp.float32))
    return Params(*out)
