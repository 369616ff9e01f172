"""Compiling the belief fits: compile-cache keys, the model's unconstrained sites.

NUTS (`bayes_s2r.belief.fit`) and SVI (`bayes_s2r.belief.svi`) build one jitted function per
(model spec, data shapes, settings) and keep the last `CACHE_SIZE` of them in a
`functools.lru_cache`; `abstract` turns the data into a hashable key for it. The XLA options
are `bayes_s2r.compiling.compiler_options`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions.transforms import biject_to

__all__ = ["CACHE_SIZE", "abstract", "concrete", "prior_unconstrained", "unconstrained_prototype"]

#: Compiled samplers kept (LRU), one per (spec, shapes, settings).
CACHE_SIZE = 8


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
