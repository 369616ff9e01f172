"""Shared, compiled-once inputs for the distributed tests (four forced host devices)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

DEVICES = 4


@pytest.fixture(scope="session", autouse=True)
def four_devices():
    if jax.device_count() < DEVICES:
        pytest.fail(f"the distributed tests need {DEVICES} devices; tests/conftest.py sets "
                    f"XLA_FLAGS=--xla_force_host_platform_device_count={DEVICES} before jax starts")
    return DEVICES


@pytest.fixture(scope="session")
def world():
    from bayes_s2r.sim.world import Protocol, make_world

    return make_world(protocol=Protocol(horizon=20))


@pytest.fixture(scope="session")
def policy():
    from bayes_s2r.sim.rollout import LinearPolicy

    # Stabilising gains: episodes differ in length and score, so equality checks have teeth.
    return LinearPolicy(jnp.array([0.3, 2.0, 0.3, 0.4], jnp.float32), jnp.array(0.0, jnp.float32))


@pytest.fixture(scope="session")
def dr_spec():
    from bayes_s2r.sim.params import DRSpec

    return DRSpec.from_levels({"mass": 1.0, "latency": 1.0, "obs_noise": 1.0, "gear": 1.0})


@pytest.fixture(scope="session")
def lookahead_problem():
    """A problem with adaptations (binomial outcomes) and a diagnosis (Gaussian outcome)."""
    import bayes_s2r as bs
    from bayes_s2r.decision.config import DecideConfig
    from bayes_s2r.decision.problem import build_problem

    names = [f"a{i}" for i in range(5)]
    belief = bs.GainBelief.from_gaussian(names, np.linspace(0.02, 0.07, 5), [0.03] * 5,
                                         num_draws=2000, seed=1)
    cands = [bs.Candidate(n, "adaptation", "data", cost=bs.Cost(compute=0.1 * (i + 1)),
                          outcome=bs.BinomialPairedOutcome(episodes=50)) for i, n in enumerate(names)]
    cands.append(bs.Candidate("probe", "diagnosis", "data", cost=bs.Cost(eng=0.01), observes="a3",
                              outcome=bs.GaussianOutcome(noise_sd=0.02)))
    config = DecideConfig.make(cvu_samples=128, seed=3)
    problem = build_problem(belief, cands, bs.Budget(1, 10, 10), bs.ResourceWeights(), risk=None,
                            config=config, reference=None, current_J=None, done=())
    return problem, config
