"""Policies as any JAX function of parameters and an observation.

A `Policy` is a pair (apply, params) with `apply(params, obs) -> action`, or
`apply(params, obs, key) -> action` for a policy that draws its action (`keyed=True`; the
episodes hand it a key per step, the same key in both arms of a paired comparison).

The params are traced values and `apply` is static: the compiled episodes are reused by every
policy with the same `apply` and parameter shapes (two MLPs of one architecture, a current
and a candidate PPO policy), so a paired comparison compiles once. The factories below keep
`apply` one function per architecture for that reason.

`LinearPolicy` (the built-in worlds' policy) works wherever a `Policy` is expected through
`as_policy`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bayes_s2r.errors import InputError, require_int

__all__ = ["Policy", "as_policy"]


@dataclasses.dataclass(frozen=True, eq=False)
class Policy:
    """A policy: `apply(params, obs) -> action` (or `apply(params, obs, key)` when `keyed`).

    Attributes:
        apply: a JAX function of (params, one observation[, key]) returning one action.
        params: any pytree of arrays (traced inside the episodes).
        name: label stored in records (default: a hash of the parameters, see `label`).
        keyed: `apply` takes a PRNG key as third argument (a stochastic policy).

    Policies compare and hash by identity (their parameters are arrays).

    Example:
        >>> import jax.numpy as jnp
        >>> p = Policy.linear(jnp.ones((1, 3)), jnp.zeros(1))
        >>> p(jnp.array([0.5, 0.25, -0.125])).tolist()
        [0.625]
    """

    apply: Callable[..., Any]
    params: Any = ()
    name: str | None = None
    keyed: bool = False

    def __post_init__(self):
        if not callable(self.apply):
            raise InputError("policy.apply", self.apply, "a function apply(params, obs) -> action")
        if self.name is not None and not isinstance(self.name, str):
            raise InputError("policy.name", self.name, "a string or None")

    def __call__(self, obs, key: jax.Array | None = None):
        """The action for one observation (`key` is used only by a keyed policy)."""
        if self.keyed:
            return self.apply(self.params, obs, jax.random.key(0) if key is None else key)
        return self.apply(self.params, obs)

    def label(self) -> str:
        """`name`, or a short stable hash of `apply`'s name and the parameters."""
        if self.name is not None:
            return self.name
        h = hashlib.sha256(getattr(self.apply, "__qualname__", type(self.apply).__name__).encode())
        for leaf in jax.tree.leaves(self.params):
            h.update(np.round(np.asarray(leaf, np.float64), 6).tobytes())
        return f"policy-{h.hexdigest()[:10]}"

    # ----------------------------------------------------------------------- factories

    @classmethod
    def linear(cls, weights, bias, *, name: str | None = None) -> Policy:
        """a = clip(weights @ obs + bias, -1, 1); weights [act, obs], bias [act]."""
        w, b = jnp.asarray(weights, jnp.float32), jnp.asarray(bias, jnp.float32)
        if w.ndim != 2 or b.shape != (w.shape[0],):
            raise InputError("policy.weights", (w.shape, b.shape), "weights [act, obs] and bias [act]")
        return cls(_linear_apply, {"w": w, "b": b}, name)

    @classmethod
    def from_linear(cls, policy, *, name: str | None = None) -> Policy:
        """The `Policy` of a built-in `LinearPolicy` (one policy, not a batch); same actions."""
        w, b = jnp.asarray(policy.weights, jnp.float32), jnp.asarray(policy.bias, jnp.float32)
        if w.ndim == 1 and b.ndim == 0:
            w, b = w[None], b[None]
        if w.ndim != 2 or b.ndim != 1:
            raise InputError("policy", (w.shape, b.shape), "one LinearPolicy (not a batch)")
        return cls.linear(w, b, name=name)

    @classmethod
    def mlp(cls, key: jax.Array, obs_size: int, act_size: int, hidden: Sequence[int] = (32, 32),
            *, name: str | None = None) -> Policy:
        """A Flax (linen) MLP with tanh hidden layers and a tanh output in [-1, 1].

        Args:
            key: PRNG key of the initial parameters.
            obs_size, act_size: observation and action sizes.
            hidden: widths of the hidden layers.
        """
        require_int("obs_size", obs_size, 1)
        require_int("act_size", act_size, 1)
        hidden = tuple(hidden)
        if not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in hidden):
            raise InputError("hidden", hidden, "positive layer widths")
        module = _mlp_module(hidden, act_size)
        params = module.init(key, jnp.zeros((obs_size,), jnp.float32))
        return cls(_mlp_apply(hidden, act_size), params, name)

    @classmethod
    def from_brax(cls, make_policy: Callable, params: Any, *, deterministic: bool = True,
                  name: str | None = None) -> Policy:
        """A Brax agent's policy from its `make_policy` (what `make_inference_fn` returns) and params.

        Brax's `make_policy(params, deterministic)` returns `policy(obs, key) -> (action, extras)`.
        Here the parameters stay traced, so policies of one network compile once together.
        """
        if not callable(make_policy):
            raise InputError("make_policy", make_policy, "Brax's make_policy(params, deterministic)")
        return cls(_brax_apply(make_policy, bool(deterministic)), params, name, keyed=True)

    @classmethod
    def from_brax_inference(cls, fn: Callable, *, name: str | None = None) -> Policy:
        """A Brax inference function `fn(obs, key) -> (action, extras)` (parameters inside it).

        Each such function compiles its own episodes; prefer `from_brax` to compare policies.
        """
        if not callable(fn):
            raise InputError("fn", fn, "a Brax inference function fn(obs, key) -> (action, extras)")
        return cls(_inference_apply(fn), (), name, keyed=True)


def _linear_apply(params, obs):
    return jnp.clip(params["w"] @ obs + params["b"], -1.0, 1.0)


@functools.cache
def _mlp_module(hidden: tuple[int, ...], act_size: int):
    """One linen module per architecture, so that equal architectures share compiled episodes."""
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for width in hidden:
                x = nn.tanh(nn.Dense(width)(x))
            return nn.tanh(nn.Dense(act_size)(x))

    return MLP()


@functools.cache
def _mlp_apply(hidden: tuple[int, ...], act_size: int):
    module = _mlp_module(hidden, act_size)

    def apply(params, obs):
        return module.apply(params, obs)

    return apply


@functools.cache
def _brax_apply(make_policy, deterministic: bool):
    def apply(params, obs, key):
        return make_policy(params, deterministic)(obs, key)[0]

    return apply


def _inference_apply(fn):
    def apply(params, obs, key):
        del params
        return fn(obs, key)[0]

    return apply


def as_policy(policy: Any) -> Policy:
    """`policy` as a `Policy`: a `Policy` as is, a `LinearPolicy` through `Policy.from_linear`.

    Raises:
        InputError: for anything else (a bare function needs its params: `Policy(apply, params)`).
    """
    if isinstance(policy, Policy):
        return policy
    if hasattr(policy, "weights") and hasattr(policy, "bias"):
        return Policy.from_linear(policy)
    raise InputError("policy", policy, "a sim.Policy(apply, params) or a LinearPolicy")
