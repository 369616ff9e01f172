"""Shared, compiled-once fixtures of the Brax testbed tests.

Every test uses the standard protocol, so the rollouts compile once for the whole session
(the chunked rollout function is cached by jax.jit per world structure and chunk shape).
"""

import jax
import pytest


@pytest.fixture(scope="session")
def sim():
    from bayes_s2r import sim

    return sim


@pytest.fixture(scope="session")
def world(sim):
    return sim.make_world()


@pytest.fixture(scope="session")
def nominal(sim):
    return sim.nominal_policy()


@pytest.fixture(scope="session")
def compiled(sim, world, nominal):
    """Runs the rollout once (compiling it) and returns the compiled-chunk count right after."""
    from bayes_s2r.sim.rollout import _chunk_fn

    jax.block_until_ready(sim.rollout(jax.random.key(0), world, nominal, 8))
    return _chunk_fn._cache_size()


@pytest.fixture(scope="session")
def sweep_result(sim, world, nominal, compiled):
    return sim.sensitivity_sweep(jax.random.key(1), world, nominal, levels=(0.0, 1.0), episodes=16,
                                 pairs=[("latency", "mass")], pair_levels=(0.5, 1.0))
