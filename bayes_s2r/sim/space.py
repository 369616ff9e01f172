"""Mismatch parameter spaces: named directions over any Brax `System` / `mjx.Model`.

A direction is one scalar value per episode:

- `ModelField`: a model field by name and index (``"geom_friction[:, 0]"``,
  ``"body_mass[torso]"``, ``"dof_damping"``, ``"actuator_gear[:, 0]"``, ``"body_ipos[1, 2]"``,
  or a dotted path of Brax's own pipelines such as ``"link.inertia.mass[1]"``), scaled by the
  value (nominal 1) or offset by it (nominal 0). A name inside the brackets is looked up in
  the model (``body_mass[torso]`` is the body named "torso"). Several paths may share one
  value (a mass and its inertia).
- `Latency`: action latency in whole control steps (nominal 0).
- `ObsNoise` / `ObsBias`: standard deviation of Gaussian noise / a constant offset on chosen
  observation channels (nominal 0).
- `SysFn`: a user's own `fn(sys, value) -> sys`.

`level` ℓ of a direction means the value nominal + ℓ·unit, where `unit` is a plausible real
mismatch size (the same convention as the built-in `DIRECTIONS`).

A `DR` is an independent distribution per direction (uniform or normal around a center,
clipped to the direction's valid range); `DR.sample(key, n)` draws one value vector per
episode from the key passed in. `ParamSpace.randomization_fn(dist)` gives Brax's and MuJoCo
Playground's `randomization_fn(sys, rng) -> (sys_v, in_axes)` that draws from `rng`, a batch
of keys, so a new key is a new draw (model directions only; latency and observation
directions live in the episode, not in a model).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.errors import InputError, require_finite, require_finite_nonneg, require_int

__all__ = ["DR", "Latency", "ModelField", "ObsBias", "ObsNoise", "ParamSpace", "SysFn"]

_PATH = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(?:\[(.*)\])?\s*$")
#: Scales are kept above this fraction of their nominal (a mass or gear never flips sign).
MIN_SCALE = 0.05


def _parse_index(text: str | None, field: str) -> tuple:
    """The index items of ``[...]``: ints, slices, ``...`` or names (resolved in the model)."""
    if text is None:
        return ()
    items = []
    for part in text.split(","):
        part = part.strip()
        if part == "...":
            items.append(("ellipsis",))
        elif ":" in part:
            bits = [b.strip() for b in part.split(":")]
            if len(bits) > 3 or not all(re.fullmatch(r"-?\d*", b) for b in bits):
                raise InputError(field, text, "an index of ints, slices such as ':' or '1:3', '...' or names")
            items.append(("slice",) + tuple(int(b) if b else None for b in bits))
        elif re.fullmatch(r"-?\d+", part):
            items.append(("int", int(part)))
        elif re.fullmatch(r"[A-Za-z_][\w.-]*", part):
            items.append(("name", part))
        else:
            raise InputError(field, text, "an index of ints, slices such as ':' or '1:3', '...' or names")
    return tuple(items)


def _resolve(items: tuple, attr: str, sys: Any, field: str) -> tuple:
    out = []
    for item in items:
        if item[0] == "int":
            out.append(item[1])
        elif item[0] == "ellipsis":
            out.append(Ellipsis)
        elif item[0] == "slice":
            out.append(slice(*item[1:]))
        else:
            mj = getattr(sys, "mj_model", None)
            kind = attr.split(".")[-1].split("_")[0]
            try:
                out.append(int(getattr(mj, kind)(item[1]).id))
            except (AttributeError, KeyError, TypeError, ValueError):
                raise InputError(field, item[1], f"the name of a {kind} in the model") from None
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class ModelField:
    """A model field (or several) moved by one value.

    Attributes:
        name: direction name (used in records).
        path: ``"field[index]"`` or a tuple of them, all moved by the same value.
        mode: "scale" (value multiplies the field, nominal 1) or "offset" (value adds, nominal 0).
        unit: change of the value at level 1.0.
        low, high: valid range of the value (default: scale >= 0.05, offset unbounded).
    """

    name: str
    path: str | tuple[str, ...]
    mode: str = "scale"
    unit: float = 0.2
    low: float | None = None
    high: float | None = None

    def __post_init__(self):
        _check_name(self.name)
        paths = (self.path,) if isinstance(self.path, str) else tuple(self.path)
        if not paths or not all(isinstance(p, str) for p in paths):
            raise InputError(f"{self.name}.path", self.path, "a 'field[index]' string or a tuple of them")
        for p in paths:
            m = _PATH.match(p)
            if m is None:
                raise InputError(f"{self.name}.path", p, "'field' or 'field[index]', e.g. 'geom_friction[:, 0]'")
            _parse_index(m.group(2), f"{self.name}.path")
        object.__setattr__(self, "path", paths)
        if self.mode not in ("scale", "offset"):
            raise InputError(f"{self.name}.mode", self.mode, "'scale' or 'offset'")
        object.__setattr__(self, "unit", require_finite(f"{self.name}.unit", self.unit))
        _bounds(self, MIN_SCALE if self.mode == "scale" else -math.inf, math.inf)

    @property
    def nominal(self) -> float:
        return 1.0 if self.mode == "scale" else 0.0

    integer = False

    def apply(self, sys, value):
        """`sys` with this direction at `value` (traceable)."""
        for p in self.path:
            m = _PATH.match(p)
            attr, index = m.group(1), _parse_index(m.group(2), f"{self.name}.path")
            try:
                x = jnp.asarray(_get(sys, attr))
            except AttributeError:
                raise InputError(f"{self.name}.path", p, "a field of the model") from None
            idx = _resolve(index, attr, sys, f"{self.name}.path")
            at = x.at[idx] if idx else x.at[...]
            v = jnp.asarray(value, x.dtype)
            x = at.multiply(v) if self.mode == "scale" else at.add(v)
            sys = _set(sys, attr, x)
        return sys


@dataclasses.dataclass(frozen=True)
class Latency:
    """Action latency in whole control steps (0..max_steps); the action applied at t is a_{t−d}."""

    name: str = "latency"
    max_steps: int = 3
    unit: float = 1.0

    def __post_init__(self):
        _check_name(self.name)
        require_int(f"{self.name}.max_steps", self.max_steps, 1, 64)
        object.__setattr__(self, "unit", require_finite(f"{self.name}.unit", self.unit))

    nominal = 0.0
    integer = True
    low = 0.0

    @property
    def high(self) -> float:
        return float(self.max_steps)


def _channels(obj):
    if obj.channels is not None:
        ch = (obj.channels,) if isinstance(obj.channels, int) else tuple(obj.channels)
        if not ch or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in ch):
            raise InputError(f"{obj.name}.channels", obj.channels, "observation channel indices >= 0, or None for all")
        object.__setattr__(obj, "channels", ch)


@dataclasses.dataclass(frozen=True)
class _ObsChannels:
    """A value acting on chosen observation channels (None: every channel)."""

    name: str
    channels: tuple[int, ...] | None = None
    unit: float = 0.05

    def __post_init__(self):
        _check_name(self.name)
        _channels(self)
        object.__setattr__(self, "unit", require_finite(f"{self.name}.unit", self.unit))

    nominal = 0.0
    integer = False
    high = math.inf


@dataclasses.dataclass(frozen=True)
class ObsNoise(_ObsChannels):
    """Gaussian noise of standard deviation `value` on `channels` (None: every channel)."""

    name: str = "obs_noise"
    low = 0.0


@dataclasses.dataclass(frozen=True)
class ObsBias(_ObsChannels):
    """A constant offset `value` on `channels` (None: every channel)."""

    name: str = "obs_bias"
    low = -math.inf


@dataclasses.dataclass(frozen=True)
class SysFn:
    """A user's own direction: `fn(sys, value) -> sys` (traceable in `value`)."""

    name: str
    fn: Callable[[Any, Any], Any]
    nominal: float = 0.0
    unit: float = 1.0
    low: float | None = None
    high: float | None = None

    def __post_init__(self):
        _check_name(self.name)
        if not callable(self.fn):
            raise InputError(f"{self.name}.fn", self.fn, "a function fn(sys, value) -> sys")
        object.__setattr__(self, "nominal", require_finite(f"{self.name}.nominal", self.nominal))
        object.__setattr__(self, "unit", require_finite(f"{self.name}.unit", self.unit))
        _bounds(self, -math.inf, math.inf)

    integer = False

    def apply(self, sys, value):
        return self.fn(sys, value)


_KINDS = (ModelField, Latency, ObsNoise, ObsBias, SysFn)


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise InputError("direction.name", name, "a non-empty string")


def _bounds(obj, low, high):
    lo = low if obj.low is None else require_finite(f"{obj.name}.low", obj.low)
    hi = high if obj.high is None else require_finite(f"{obj.name}.high", obj.high)
    if not lo <= obj.nominal <= hi:
        raise InputError(f"{obj.name}.low", (lo, hi), f"a range containing the nominal {obj.nominal}")
    object.__setattr__(obj, "low", lo)
    object.__setattr__(obj, "high", hi)


def _get(obj, dotted: str):
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _set(obj, dotted: str, value):
    head, _, rest = dotted.partition(".")
    if not rest:
        return obj.replace(**{head: value})
    return obj.replace(**{head: _set(getattr(obj, head), rest, value)})


@dataclasses.dataclass(frozen=True)
class ParamSpace:
    """Named mismatch directions; a value vector has one entry per direction, in this order.

    Example:
        >>> space = ParamSpace([ModelField("damping", "dof_damping", unit=-0.3), Latency(max_steps=2)])
        >>> space.names, space.nominal.tolist()
        (('damping', 'latency'), [1.0, 0.0])
        >>> space.at_levels({"latency": 1.0}).tolist()
        [1.0, 1.0]
    """

    directions: tuple = ()

    def __post_init__(self):
        dirs = tuple(self.directions)
        for d in dirs:
            if not isinstance(d, _KINDS):
                raise InputError("space.directions", d, "ModelField, Latency, ObsNoise, ObsBias or SysFn")
        names = [d.name for d in dirs]
        if len(set(names)) != len(names):
            raise InputError("space.directions", names, "distinct direction names")
        if sum(isinstance(d, Latency) for d in dirs) > 1:
            raise InputError("space.directions", names, "at most one Latency direction")
        object.__setattr__(self, "directions", dirs)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.directions)

    @property
    def nominal(self) -> np.ndarray:
        return np.array([d.nominal for d in self.directions], np.float32)

    @property
    def max_latency(self) -> int:
        """Largest latency any value can take (the static size of the action buffer)."""
        return max((d.max_steps for d in self.directions if isinstance(d, Latency)), default=0)

    def index(self, name: str, field: str = "direction") -> int:
        if name not in self.names:
            raise InputError(field, name, f"one of {self.names}")
        return self.names.index(name)

    def values(self, changes: Mapping[str, float] | None = None, *, field: str = "values") -> np.ndarray:
        """The value vector: nominal, with `changes` (direction -> value) applied; validated."""
        out = self.nominal.copy()
        if changes is None:
            return out
        if not isinstance(changes, Mapping):
            raise InputError(field, changes, f"a mapping with keys among {self.names}")
        for name, v in changes.items():
            d = self.directions[self.index(name, f"{field}.{name}")]
            v = require_finite(f"{field}.{name}", v)
            if d.integer and v != round(v):
                raise InputError(f"{field}.{name}", v, "a whole number of control steps")
            if not d.low <= v <= d.high:
                raise InputError(f"{field}.{name}", v, f"a value in [{d.low}, {d.high}]")
            out[self.index(name)] = v
        return out

    def at_levels(self, levels: Mapping[str, float], *, field: str = "levels") -> np.ndarray:
        """The value vector with each named direction at nominal + level·unit (rounded if whole)."""
        changes = {}
        for name, level in levels.items():
            d = self.directions[self.index(name, f"{field}.{name}")]
            v = d.nominal + d.unit * require_finite(f"{field}.{name}", level)
            changes[name] = float(round(v)) if d.integer else v
        return self.values(changes, field=field)

    # ----------------------------------------------------------------------- traced parts

    def apply_model(self, sys, values):
        """`sys` with every model direction (ModelField, SysFn) at its value (traceable)."""
        for i, d in enumerate(self.directions):
            if isinstance(d, (ModelField, SysFn)):
                sys = d.apply(sys, values[i])
        return sys

    def latency(self, values) -> jax.Array:
        """The action latency in steps (int32; 0 without a Latency direction)."""
        for i, d in enumerate(self.directions):
            if isinstance(d, Latency):
                return jnp.clip(jnp.round(values[i]), 0, d.max_steps).astype(jnp.int32)
        return jnp.zeros((), jnp.int32)

    def observe(self, obs, values, key: jax.Array):
        """`obs` with the observation noise and bias directions applied."""
        noisy = [(i, d) for i, d in enumerate(self.directions) if isinstance(d, (ObsNoise, ObsBias))]
        if not noisy:
            return obs
        obs = jnp.asarray(obs)
        sd, bias = jnp.zeros(obs.shape), jnp.zeros(obs.shape)
        for i, d in noisy:
            mask = jnp.ones(obs.shape) if d.channels is None else jnp.zeros(obs.shape).at[..., list(d.channels)].set(1.0)
            if isinstance(d, ObsNoise):
                sd = sd + mask * values[i]
            else:
                bias = bias + mask * values[i]
        return obs + bias + sd * jax.random.normal(key, obs.shape)

    # ----------------------------------------------------------------------- distributions

    def dr(self, width: Mapping[str, float] | None = None, *, center: Mapping[str, float] | None = None,
           normal: Mapping[str, bool] | None = None) -> DR:
        """A DR distribution: per direction, uniform center ± width (or normal with sd = width).

        Example:
            >>> space = ParamSpace([ModelField("gear", "actuator_gear[:, 0]")])
            >>> space.dr({"gear": 0.2}).width.tolist()
            [0.20000000298023224]
        """
        c = self.values(center, field="dr.center")
        w = np.zeros(len(self.names), np.float32)
        for name, v in (width or {}).items():
            w[self.index(name, f"dr.width.{name}")] = require_finite_nonneg(f"dr.width.{name}", v)
        nrm = np.zeros(len(self.names), bool)
        for name, v in (normal or {}).items():
            if not isinstance(v, bool):
                raise InputError(f"dr.normal.{name}", v, "True or False")
            nrm[self.index(name, f"dr.normal.{name}")] = v
        return DR(self, c, w, nrm)

    def point(self, values: Mapping[str, float] | None = None) -> DR:
        """A point mass at the given values (e.g. a hidden "real" model): a DR of width 0."""
        return self.dr(center=values)

    def randomization_fn(self, dist: DR):
        """Brax/Playground `randomization_fn(sys, rng) -> (sys_v, in_axes)` drawing from `dist`.

        `rng` is a batch of keys (one per environment); each key draws its own value vector
        (the same vector `dist.sample` gives for that key), so new keys give new models. Only
        the fields the model directions edit are batched (in_axes 0); others stay shared.
        Use it with `functools.partial(fn, rng=keys)` where Brax wants `fn(sys)`.
        """
        if not isinstance(dist, DR) or dist.space != self:
            raise InputError("dist", dist, "a DR of this space (space.dr(...))")

        def randomize(sys, rng):
            keys = _key_batch(rng)
            values = jax.vmap(lambda k: dist.sample(k, 1)[0])(keys)
            leaves, treedef = jax.tree.flatten(sys)
            probe = jax.tree.leaves(self.apply_model(sys, jnp.asarray(self.nominal)))
            edited = [a is not b for a, b in zip(probe, leaves)]

            def changed(v):
                out = jax.tree.leaves(self.apply_model(sys, v))
                return [x for x, e in zip(out, edited) if e]

            batched = iter(jax.vmap(changed)(values))
            new = [next(batched) if e else x for x, e in zip(leaves, edited)]
            axes = [0 if e else None for e in edited]
            return jax.tree.unflatten(treedef, new), jax.tree.unflatten(treedef, axes)

        return randomize


def _key_batch(rng) -> jax.Array:
    rng = jnp.asarray(rng) if not isinstance(rng, jax.Array) else rng
    if jax.dtypes.issubdtype(rng.dtype, jax.dtypes.prng_key):
        if rng.ndim != 1:
            raise InputError("rng", rng.shape, "a batch of keys [num_envs]")
        return rng
    if rng.ndim != 2 or rng.dtype != jnp.uint32:
        raise InputError("rng", rng.shape, "a batch of keys, [num_envs] typed or [num_envs, 2] uint32")
    return jax.random.wrap_key_data(rng)


@dataclasses.dataclass(frozen=True, eq=False)
class DR:
    """An independent distribution per direction of `space` (build it with `space.dr`).

    Attributes:
        space: the `ParamSpace`.
        center: center of each direction's distribution [D].
        width: half-width of a uniform, or standard deviation of a normal [D]; 0 keeps the center.
        normal: True draws a normal, False a uniform [D].

    Draws are clipped to each direction's valid range; a whole-number direction (latency) is
    uniform over the whole numbers in round(center) ± floor(width), or a rounded normal.
    """

    space: ParamSpace
    center: np.ndarray
    width: np.ndarray
    normal: np.ndarray

    def sample(self, key: jax.Array, n: int) -> jax.Array:
        """`n` value vectors [n, D] drawn with `key` (jittable; `n` static)."""
        out = []
        keys = jax.random.split(key, max(len(self.space.directions), 1))
        for i, d in enumerate(self.space.directions):
            c, w = float(self.center[i]), float(self.width[i])
            z = jax.random.normal(keys[i], (n,))
            if d.integer and not self.normal[i]:
                lo = max(round(c) - math.floor(w), d.low)
                hi = min(round(c) + math.floor(w), d.high)
                v = lo + jnp.minimum(jnp.floor(jax.random.uniform(keys[i], (n,)) * (hi - lo + 1)), hi - lo)
            else:
                u = jax.random.uniform(keys[i], (n,), minval=-1.0, maxval=1.0)
                v = c + w * (z if self.normal[i] else u)
                v = jnp.round(v) if d.integer else v
            out.append(jnp.clip(v, d.low, d.high))
        if not out:
            return jnp.zeros((n, 0), jnp.float32)
        return jnp.stack(out, axis=1).astype(jnp.float32)

    def to_dict(self) -> dict:
        """Plain values: {direction: {"center", "width", "normal"}}."""
        return {n: {"center": float(self.center[i]), "width": float(self.width[i]), "normal": bool(self.normal[i])}
                for i, n in enumerate(self.space.names)}


def space_of(directions: ParamSpace | Sequence | None) -> ParamSpace:
    """A `ParamSpace` from a space, a list of directions or None (the empty space)."""
    if directions is None:
        return ParamSpace()
    if isinstance(directions, ParamSpace):
        return directions
    if isinstance(directions, (list, tuple)):
        return ParamSpace(tuple(directions))
    raise InputError("space", directions, "a ParamSpace or a list of directions")
