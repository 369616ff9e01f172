"""Worlds: a Brax system, its parameters ξ, the evaluation protocol and the policy interface.

A `World` is an immutable value. Its Brax `System` is loaded once per environment and never
mutated; `apply_params` returns an edited copy with `tree_replace`, inside jit, so the
parameters are traced values.

Backend (`World.backend`, one of `BACKENDS`): Brax's `generalized` pipeline (the default) or
MJX (`"mjx"`, MuJoCo's maintained JAX engine, through Brax's `brax.mjx.pipeline`). Both run
the same model, ξ edits, episode logic and protocol; they integrate slightly different
equations (MuJoCo's Euler step treats joint damping implicitly), so the same episode agrees
closely but not to the last digit. Every world in a comparison (sim, "real", identified)
should use one backend.

Why `generalized` stays the default (`benchmarks/bench_backends.py`, `bench_sysid.py
--backend mjx`; docs/results.md, "Testbed physics"): MJX is as fast on the cart-pole, about
6× faster on the reacher and 2–3× faster to identify on a 2-core CPU, and identification is
as well calibrated on it; but the shipped world cards were designed on `generalized`, and on
MJX some hidden gaps change character (the nominal policy's unsafe rate on `real_combo`
falls from about 0.9 to 0, its success on `bench_combo` from about 0.12 to 0.01), and the
same episodes succeed more often on MJX (+0.04 on the cart-pole). Switching the default
means re-tuning the cards and regenerating every table measured on them; until then MJX is
one argument away (`make_world(..., backend="mjx")`, `backend = "mjx"` in a card).

Environments (`ENVS`):

- ``inverted_pendulum`` (default): cart-pole balancing; one actuator (the cart), observation
  [cart position, pole angle, cart velocity, pole velocity]; the pole link is mass-scaled.
- ``reacher``: a planar two-link arm (shoulder, elbow) that must bring its fingertip to a
  target; two actuators, observation [shoulder error, elbow error, shoulder velocity, elbow
  velocity], where the errors are to the target's joint-space pose (its analytic inverse
  kinematics, elbow-positive branch; the shoulder error is wrapped to (−π, π]). Both arm links
  are mass-scaled; `obs_bias` offsets the shoulder reading. The task and its success and
  unsafe criteria are stated in `bayes_s2r.sim.rollout`.

World cards are small TOML files shipped in `bayes_s2r/sim/cards/`:

    name = "real_latency"
    kind = "real"            # "sim" or "real"
    env = "inverted_pendulum"
    backend = "generalized"  # optional: "generalized" (default) or "mjx"
    description = "..."
    [params]                 # any `Params` field; missing ones are nominal
    latency = 2
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jax.numpy as jnp
import numpy as np

from bayes_s2r.errors import InputError, require_finite_nonneg, require_int, require_positive
from bayes_s2r.sim.params import Params, params_from_mapping
from bayes_s2r.vocab import PolicyInterface

__all__ = ["BACKENDS", "ENVS", "Protocol", "World", "apply_params", "list_cards", "load_card", "make_world"]

#: Supported environments: name -> MJCF file inside brax, physics frames per action, the
#: mass-scaled link(s) ("pole_link": an index, or a tuple of indices), the action size, the
#: observation size and the observation channel that `obs_bias` offsets.
ENVS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "inverted_pendulum": MappingProxyType({
        "xml": "envs/assets/inverted_pendulum.xml", "n_frames": 2, "pole_link": 1, "act_size": 1,
        "obs_size": 4, "bias_index": 1}),
    # MJCF time step 0.01 s: 4 frames per 0.04 s control period keep it at the nominal ξ.
    "reacher": MappingProxyType({
        "xml": "envs/assets/reacher.xml", "n_frames": 4, "pole_link": (0, 1), "act_size": 2,
        "obs_size": 4, "bias_index": 0}),
})

#: Physics backends of the built-in worlds (Brax pipelines with the same `init`/`step`).
BACKENDS = ("generalized", "mjx")


def pipeline(backend: str):
    """The Brax pipeline module of `backend` (`init(sys, q, qd)`, `step(sys, state, ctrl)`)."""
    if backend == "mjx":
        from brax.mjx import pipeline as mjx_pipeline

        return mjx_pipeline
    if backend != "generalized":
        raise InputError("world.backend", backend, f"one of {BACKENDS}")
    from brax.generalized import pipeline as generalized_pipeline

    return generalized_pipeline


@dataclasses.dataclass(frozen=True)
class Protocol:
    """One evaluation protocol: initial-state distribution, horizon and success criterion.

    Attributes:
        horizon: control steps per episode.
        init_scale: initial q and qd are uniform in ±init_scale around the MJCF's init_q.
        angle_limit: success needs |pole angle| <= angle_limit (rad) at every step.
        rail_limit: success needs |cart position| <= rail_limit (m) at every step.
        fall_limit: |pole angle| beyond this is an unsafe event (the pole fell); the episode
            freezes there (the physics is not integrated towards the ±90° hinge limit).
        rail_end: |cart position| beyond this is an unsafe event (cart hit the rail end).
        reach_tolerance: reacher only: success needs the fingertip within this distance (m)
            of the target ...
        hold_steps: ... at each of the last `hold_steps` control steps (at most the horizon).
        speed_limit: reacher only: an arm joint faster than this (rad/s) is an unsafe event
            (the arm whips around); the episode freezes there.

    horizon and init_scale serve both environments; angle_limit, rail_limit, fall_limit and
    rail_end only the cart-pole; reach_tolerance, hold_steps and speed_limit only the reacher.
    """

    horizon: int = 200
    init_scale: float = 0.05
    angle_limit: float = 0.2
    rail_limit: float = 0.9
    fall_limit: float = 0.5
    rail_end: float = 0.95
    reach_tolerance: float = 0.02
    hold_steps: int = 10
    speed_limit: float = 15.0

    def __post_init__(self):
        require_int("protocol.horizon", self.horizon, 1, 5000)
        for f in ("init_scale", "angle_limit", "rail_limit", "fall_limit", "rail_end"):
            object.__setattr__(self, f, require_finite_nonneg(f"protocol.{f}", getattr(self, f)))
        if self.fall_limit < self.angle_limit or self.rail_end < self.rail_limit:
            raise InputError("protocol.fall_limit", (self.fall_limit, self.rail_end),
                             "unsafe limits at least as wide as the success limits")
        require_int("protocol.hold_steps", self.hold_steps, 1)
        for f in ("reach_tolerance", "speed_limit"):
            object.__setattr__(self, f, require_positive(f"protocol.{f}", getattr(self, f)))
        if self.fall_limit >= 1.5:
            raise InputError("protocol.fall_limit", self.fall_limit, "below the ±1.57 rad hinge limit")


@functools.cache
def _base_system(env: str):
    """The Brax system of `env`, loaded once (never mutated)."""
    from brax.io import mjcf
    from etils import epath

    sys = mjcf.load(epath.resource_path("brax") / ENVS[env]["xml"])
    # The protocol freezes an episode before any joint limit is reached (fall_limit < 90°,
    # rail_end < 1 m), so the limit constraints never act; dropping them removes the
    # constraint solver from every step (about 2x faster, much shorter compiles).
    # Reacher: the target's slide joints never move (no force acts on them); the elbow's
    # ±3 rad limit is dropped too (the task's targets keep the elbow within 0.3..2.3 rad, but
    # nothing stops a policy from folding the arm past ±3 rad).
    # `dof.limit` is what `generalized` reads, `jnt_limited` what MJX reads.
    return sys.replace(dof=sys.dof.replace(limit=None), jnt_limited=np.zeros_like(sys.jnt_limited))


def apply_params(sys, params: Params, n_frames: int, pole_link: int):
    """A copy of `sys` with ξ applied (jittable; `params` may be traced).

    Scales the mass and inertia of the pole link (`pole_link`: an index; or a tuple of indices,
    e.g. the reacher's two arm links), every joint's damping and the actuator gear, and sets
    the physics time step to control_period / n_frames. Both the fields `generalized` reads
    (`link.*`, `dof.damping`, `actuator.gear`) and those MJX reads (`body_mass`,
    `body_inertia`, `dof_damping`, `actuator_gear`) are edited, so one system serves both
    backends.
    """
    inertia = sys.link.inertia
    # a mask, not `.at[links].multiply`: JAX has no gradient of a scatter-multiply with
    # several indices, and identification differentiates through the scale
    links = jnp.asarray(pole_link, jnp.int32)
    scale = jnp.where(jnp.isin(jnp.arange(inertia.mass.shape[0]), links), params.mass_scale, 1.0)
    # body 0 is the world body: link i is body i + 1
    body_scale = jnp.where(jnp.isin(jnp.arange(sys.body_mass.shape[0]), links + 1), params.mass_scale, 1.0)
    return sys.tree_replace({
        "link.inertia.mass": inertia.mass * scale,
        "link.inertia.i": inertia.i * scale[:, None, None],
        "body_mass": sys.body_mass * body_scale,
        "body_inertia": sys.body_inertia * body_scale[:, None],
        "dof.damping": sys.dof.damping * params.damping_scale,
        "dof_damping": sys.dof_damping * params.damping_scale,
        "actuator.gear": sys.actuator.gear * params.gear_scale,
        "actuator_gear": sys.actuator_gear * params.gear_scale,
        "opt.timestep": jnp.asarray(params.control_period, jnp.float32) / n_frames,
    })


@dataclasses.dataclass(frozen=True)
class World:
    """An environment with explicit parameters ξ under one evaluation protocol.

    Attributes:
        name: label (a card name for card worlds).
        env: Brax environment name (a key of `ENVS`).
        params: the world's ξ.
        protocol: the evaluation protocol.
        kind: "sim" or "real" (a real world is meant to be used through `RealRobot`).
        description: free text from the card.
        backend: physics engine, one of `BACKENDS` ("generalized" or "mjx").
    """

    name: str = "sim"
    env: str = "inverted_pendulum"
    params: Params = dataclasses.field(default_factory=Params)
    protocol: Protocol = dataclasses.field(default_factory=Protocol)
    kind: str = "sim"
    description: str = ""
    backend: str = "generalized"

    def __post_init__(self):
        if self.env not in ENVS:
            raise InputError("world.env", self.env, f"one of {tuple(ENVS)}")
        if self.backend not in BACKENDS:
            raise InputError("world.backend", self.backend, f"one of {BACKENDS}")
        if self.kind not in ("sim", "real"):
            raise InputError("world.kind", self.kind, "'sim' or 'real'")
        if not isinstance(self.params, Params):
            object.__setattr__(self, "params", params_from_mapping(self.params, field="world.params"))
        if not isinstance(self.protocol, Protocol):
            raise InputError("world.protocol", self.protocol, "a Protocol")

    @property
    def sys(self):
        """The nominal Brax system (ξ is applied inside the rollouts)."""
        return _base_system(self.env)

    @property
    def n_frames(self) -> int:
        return ENVS[self.env]["n_frames"]

    @property
    def pole_link(self) -> int:
        return ENVS[self.env]["pole_link"]

    @property
    def obs_size(self) -> int:
        return ENVS[self.env]["obs_size"]

    @property
    def act_size(self) -> int:
        """Actuators (1: one scalar action; more: an action vector, see `LinearPolicy`)."""
        return ENVS[self.env]["act_size"]

    @property
    def interface(self) -> PolicyInterface:
        """The policy interface: observation layout, action bounds, control rate, latency assumed."""
        if self.env == "reacher":
            units = {"shoulder_err": "rad", "elbow_err": "rad", "shoulder_vel": "rad/s", "elbow_vel": "rad/s"}
            bounds = ((-1.0, 1.0),) * self.act_size
        else:
            units = {"cart_pos": "m", "pole_angle": "rad", "cart_vel": "m/s", "pole_vel": "rad/s"}
            bounds = (-1.0, 1.0)
        return PolicyInterface(
            observation={k: {"shape": (), "units": u, "normalization": "none"} for k, u in units.items()},
            action_kind="continuous", action_mode="torque", action_bounds=bounds,
            action_clamp=True, control_hz=round(1.0 / float(self.params.control_period), 6),
            action_hold="zero_order_hold", assumed_latency_steps=0,
        )

    def with_params(self, params: Params | None = None, **changes) -> World:
        """A new world with ξ replaced (validated); the original is unchanged."""
        base = params if params is not None else self.params
        return dataclasses.replace(self, params=params_from_mapping(changes, base=base, field="params"))

    def episode_hours(self, episodes: int = 1, reset_overhead_s: float = 0.0) -> float:
        """Wall-clock hours of `episodes` full-horizon episodes plus a reset overhead each."""
        per = self.protocol.horizon * float(self.params.control_period) + reset_overhead_s
        return episodes * per / 3600.0


def make_world(env: str = "inverted_pendulum", params: Params | dict | None = None,
               protocol: Protocol | None = None, name: str = "sim", backend: str = "generalized") -> World:
    """The nominal sim world (or one with the given ξ) on `backend` ("generalized" or "mjx")."""
    p = params if isinstance(params, Params) else params_from_mapping(params, field="params")
    return World(name=name, env=env, params=p, protocol=protocol or Protocol(), backend=backend)


def list_cards() -> list[str]:
    """Names of the world cards shipped with the package."""
    folder = resources.files("bayes_s2r.sim") / "cards"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml") and p.name != "costs.toml")


def load_card(name_or_path: str | Path, protocol: Protocol | None = None) -> World:
    """A `World` from a shipped card name (e.g. "real_latency") or a TOML file path."""
    path = Path(str(name_or_path))
    if path.suffix == ".toml" and path.exists():
        text = path.read_text()
    else:
        if str(name_or_path) not in list_cards():
            raise InputError("card", name_or_path, f"a TOML path or one of {list_cards()}")
        text = (resources.files("bayes_s2r.sim") / "cards" / f"{name_or_path}.toml").read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError("card", str(name_or_path), f"valid TOML ({e})") from None
    allowed = {"name", "kind", "env", "description", "params", "backend"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise InputError(f"card.{unknown[0]}", data[unknown[0]], f"a key among {sorted(allowed)}")
    params = params_from_mapping(data.get("params", {}), field=f"card[{name_or_path}].params")
    return World(name=str(data.get("name", path.stem)), env=str(data.get("env", "inverted_pendulum")),
                 params=params, protocol=protocol or Protocol(), kind=str(data.get("kind", "sim")),
                 description=str(data.get("description", "")), backend=str(data.get("backend", "generalized")))
