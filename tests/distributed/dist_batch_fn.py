"""A small rollout-like batch function shared by the multi-process test and its reference.

Each element runs a noisy linear system for a few steps under `lax.scan` with its own key.
"""

import jax
import jax.numpy as jnp

BATCH = 10  # not a multiple of the device counts used: exercises the padding
STEPS = 16


def batch_inputs():
    """(x0 [BATCH], keys [BATCH]) from a fixed seed."""
    k0, k1 = jax.random.split(jax.random.key(7))
    return jax.random.normal(k0, (BATCH,)), jax.random.split(k1, BATCH)


def _one(x0, key, decay):
    def step(x, t):
        return decay * x + 0.1 * jax.random.normal(jax.random.fold_in(key, t)), None

    x, _ = jax.lax.scan(step, x0, jnp.arange(STEPS))
    return x


@jax.jit
def episodes(batch, decay):
    """Final states [B] for the batch (x0 [B], keys [B]) and a shared decay."""
    x0, keys = batch
    return jax.vmap(_one, in_axes=(0, 0, None))(x0, keys, decay)
