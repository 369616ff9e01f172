"""Shared fixtures of the belief tests: small candidate sets and evidence, fitted once.

Every NUTS fit here uses the same sampler settings (`FIT`) so that fits of the same data
shape share one compiled sampler (see `bayes_s2r.belief.fit`).
"""

import numpy as np
import pytest

from bayes_s2r import Candidate, PairedEval

FIT = {"num_warmup": 500, "num_samples": 500, "num_chains": 2}


def pooled_candidates():
    """Five DR candidates of one group: a, b, c data-rich, d data-poor, e unseen."""
    return [Candidate(n, "adaptation", "data", method="DR") for n in "abcde"]


def pooled_evidence(episodes: int, seed: int = 0):
    """a, b, c gain about 0.2 over a 0.5 control; d shows no gain on 10 episodes; e nothing."""
    rng = np.random.default_rng(seed)
    ev = []
    for n in "abc":
        ev.append(PairedEval(n, int(rng.binomial(episodes, 0.7)), episodes,
                             int(rng.binomial(episodes, 0.5)), episodes, id=f"{n}-{episodes}"))
    ev.append(PairedEval("d", 5, 10, 5, 10, id="d"))
    return ev


@pytest.fixture(scope="session")
def pooled_fits():
    """NUTS fits of the pooled set with 20 and with 400 episodes per sibling."""
    from bayes_s2r import fit_gains

    cands = pooled_candidates()
    return {n: fit_gains(pooled_evidence(n), cands, seed=0, **FIT) for n in (20, 400)}


@pytest.fixture(scope="session")
def gains_kit():
    """The helpers above, for test modules (tests/ is not a package)."""
    from types import SimpleNamespace

    return SimpleNamespace(FIT=FIT, candidates=pooled_candidates, evidence=pooled_evidence)
