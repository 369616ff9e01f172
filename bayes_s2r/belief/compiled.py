"""Compiling the belief fits: XLA options, compile-cache keys, the model's unconstrained sites.

NUTS (`bayes_s2r.belief.fit`) and SVI (`bayes_s2r.belief.svi`) build one jitted function per
(model spec, data shapes, settings) and keep the last `CACHE_SIZE` of them in a
`functools.lru_cache`; `abstract` turns the data into a hashable key for it. The decision's
look-ahead programs compile with the same CPU options, through `LazyJit`.
"""

from __future__ import annotations

import functools
from types import MappingProxyType

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions.transforms import biject_to

__all__ = ["CACHE_SIZE", "LazyJit", "abstract", "compiler_options", "concrete", "prior_unconstrained",
           "unconstrained_prototype"]

#: Compiled samplers kept (LRU), one per (spec, shapes, settings).
CACHE_SIZE = 8
# NUTS and SVI inline the model's gradient in several places. On a CPU, LLVM's most
# expensive passes and XLA's fusion emitters buy little on these small arrays and cost
# seconds of compile time (NUTS, 64 candidates: 9.3 s -> 7.1 s to the first fit).
_CPU_COMPILER_OPTIONS = MappingProxyType({"xla_backend_optimization_level": 1, "xla_cpu_use_fusion_emitters": False})


def compiler_options() -> dict:
    """XLA options for compiling the belief fits on the default backend (none off the CPU)."""
    return dict(_accepted_cpu_options()) if jax.default_backend() == "cpu" else {}


@functools.cache
def _accepted_cpu_options() -> MappingProxyType:
    # XLA rejects an option it does not know (jax 0.11 dropped the fusion emitters' switch):
    # keep those this XLA accepts, probed once on a trivial program.
    probe = jax.jit(lambda x: x + 1).lower(jnp.float32(0))
    accepted = {}
    for name, value in _CPU_COMPILER_OPTIONS.items():
        try:
            probe.compile(compiler_options={name: value})
        except jax.errors.JaxRuntimeError:
            continue
        accepted[name] = value
    return MappingProxyType(accepted)


class LazyJit:
    """`jax.jit(fun, compiler_options=compiler_options(), **jit_kwargs)`, built at the first call.

    The options depend on the backend, which must not start when a module is imported (the
    host-device count is set before it starts). Attributes such as `lower` and `_cache_size`
    are the jitted function's.
    """

    def __init__(self, fun, **jit_kwargs):
        self._fun, self._jit_kwargs, self._jitted = fun, jit_kwargs, None
        functools.update_wrapper(self, fun)

    def _get(self):
        if self._jitted is None:
            self._jitted = jax.jit(self._fun, compiler_options=compiler_options(), **self._jit_kwargs)
        return self._jitted

    def __call__(self, *args, **kwargs):
        return self._get()(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._get(), name)


def abstract(tree) -> tuple:
    """A hashable stand-in for `tree`'s structure, shapes and dtypes (a compile-cache key)."""
    leaves, treedef = jax.tree.flatten(tree)
    return treedef, tuple((tuple(np.shape(x)), jnp.asarray(x).dtype) for x in leaves)


def concrete(key: tuple):
    """The tree of `jax.ShapeDtypeStruct` that `abstract` describes."""
    treedef, leaves = key
    return jax.tree.unflatten(treedef, [jax.ShapeDtypeStruct(s, d) for s, d in leaves])


def prior_unconstrained(model, rng_key, data, sens) -> dict:
    """One prior draw of the model's latent sites, mapped to the unconstrained space."""
    tr = handlers.trace(handlers.seed(model, rng_key)).get_trace(data, sens=sens)
    return {name: biject_to(site["fn"].support).inv(site["value"])
            for name, site in tr.items()
            if site["type"] == "sample" and not site["is_observed"]}


def unconstrained_prototype(model, data, sens) -> dict:
    """Shapes and dtypes (`jax.ShapeDtypeStruct`) of the model's unconstrained latent sites.

    Traced abstractly (`jax.eval_shape`): nothing runs, so it costs no eager dispatch.
    """
    return jax.eval_shape(functools.partial(prior_unconstrained, model), jax.random.key(0), data, sens)
