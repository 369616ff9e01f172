"""Small Brax tasks shared by the Task tests (built once per session, so they compile once).

Brax's own `inverted_pendulum` on the MJX backend: obs [cart x, pole angle, cart vel, pole
vel], the environment ends an episode when |pole angle| > 0.2. The project's nominal linear
policy balances it; a two-step action latency makes it fall (FINDINGS).
"""

from __future__ import annotations

import functools

HORIZON = 60
CHUNK = 8


@functools.cache
def pendulum_env():
    import brax.envs

    from bayes_s2r import sim  # noqa: F401  (filters Brax's notice before the model loads)

    return brax.envs.get_environment("inverted_pendulum", backend="mjx")


def _tilted(ep):
    import jax.numpy as jnp

    return jnp.any(jnp.abs(ep.obs[:, 1]) > 0.15)


@functools.cache
def pendulum_task():
    """Success: not terminated; unsafe: the pole ever tilted past 0.15 rad."""
    from bayes_s2r import sim

    return sim.Task.from_brax(pendulum_env(), horizon=HORIZON, unsafe=_tilted, chunk=CHUNK)


@functools.cache
def pendulum_space():
    from bayes_s2r import sim

    return sim.ParamSpace([
        sim.ModelField("gear", "actuator_gear[:, 0]", unit=-0.5),
        sim.ModelField("pole_mass", ("body_mass[pole]", "body_inertia[pole]"), unit=0.5),
        sim.Latency(max_steps=3),
        sim.ObsNoise(channels=(1,), unit=0.05),
    ])


@functools.cache
def nominal():
    from bayes_s2r import sim

    return sim.nominal_policy()
