"""MCMC chains in parallel over host devices give the draws of the same chains run one by one."""

from __future__ import annotations

import numpy as np

from bayes_s2r import Candidate, PairedEval, fit_gains
from bayes_s2r.distributed import chain_method_for

CHAINS = 4


def test_parallel_chains_over_devices_equal_sequential_chains():
    cands = [Candidate("dr", "adaptation", "data", method="DR"),
             Candidate("si", "adaptation", "model", method="SI")]
    evidence = [PairedEval("dr", 30, 50, 20, 50), PairedEval("si", 24, 50, 20, 50)]
    method = chain_method_for(CHAINS)
    assert method == "parallel"
    settings = {"num_warmup": 60, "num_samples": 40, "num_chains": CHAINS, "seed": 4}
    par = fit_gains(evidence, cands, chain_method=method, **settings)
    seq = fit_gains(evidence, cands, chain_method="sequential", **settings)
    assert par.diagnostics["chain_method"] == "parallel" and par.draws.shape == (CHAINS * 40, 2)
    np.testing.assert_allclose(par.draws, seq.draws, rtol=1e-4, atol=1e-5)
    per_chain = par.draws.reshape(CHAINS, 40, 2).mean(1)
    assert np.unique(np.round(per_chain, 6), axis=0).shape[0] == CHAINS  # distinct chains
