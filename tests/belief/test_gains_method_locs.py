"""Per-method prior means (`GainPrior(method_locs=...)`): the prior of a method's candidates is
centred on its own mean, the others keep `gain_loc`, and a posterior moves with it."""

import jax
import numpy as np
import pytest
import sbc_gains

from bayes_s2r import Candidate, GainPrior, InputError, PairedEval, fit_gains


def test_a_method_mean_moves_only_that_methods_prior():
    # identity link, small fixed scales: each candidate's prior mean is its method's mean
    prior = GainPrior(link="identity", gain_loc=0.05, gain_scale=0.01, method_scale=0.01, group_scale=0.0,
                      candidate_scale=0.02, fixed_scales=True, method_locs={"SI": 0.3})
    cands, eps = sbc_gains.design(num_methods=2, lenses=2, per_group=1, episodes=(0,))  # batch 1: dose 1
    gains, _, _ = sbc_gains.prior_draws(jax.random.key(0), cands, eps, 4000, prior)
    gains = np.asarray(gains)
    methods = np.array([c.method for c in cands])
    assert gains[:, methods == "DR"].mean() == pytest.approx(0.05, abs=0.003)
    assert gains[:, methods == "SI"].mean() == pytest.approx(0.3, abs=0.003)
    # the spread is the hierarchy's, not changed by the shift
    sd = np.sqrt(0.01**2 + 0.01**2 + 0.02**2)
    assert gains[:, methods == "SI"].std() == pytest.approx(sd, rel=0.1)
    # one method alone (no method level sampled) is shifted as well
    one, eps1 = sbc_gains.design(num_methods=1, lenses=1, per_group=1, episodes=(0,))
    alone, _, _ = sbc_gains.prior_draws(jax.random.key(1), one, eps1, 4000,
                                        GainPrior(**{**prior.__dict__, "method_locs": {"DR": -0.2}}))
    assert np.asarray(alone).mean() == pytest.approx(-0.2, abs=0.003)


def test_the_posterior_of_an_untried_candidate_follows_its_methods_mean():
    cands = [Candidate("dr", "adaptation", "data", method="DR"), Candidate("ft", "adaptation", "optimization",
                                                                          method="FT")]
    ev = [PairedEval("dr", 20, 48, 20, 48)]
    # one chain: 500 draws keep split R-hat under 1.01 on every CPU tried (400 did not on all)
    fit = {"num_warmup": 500, "num_samples": 500, "num_chains": 1, "seed": 3}
    plain = fit_gains(ev, cands, prior=GainPrior(), **fit)
    ft_first = fit_gains(ev, cands, prior=GainPrior(method_locs={"FT": 2.0}), **fit)
    assert ft_first.diagnostics["ok"] and plain.diagnostics["ok"]
    assert ft_first.column("ft").mean() > plain.column("ft").mean() + 0.1
    assert ft_first.column("dr").mean() == pytest.approx(plain.column("dr").mean(), abs=0.05)


@pytest.mark.parametrize("value", [{"FT": float("nan")}, {"": 1.0}, {1: 1.0}, [("FT", 1.0), ("FT", 2.0)], 3.0,
                                   [("FT",)]])
def test_method_locs_are_checked(value):
    with pytest.raises(InputError, match="prior.method_locs"):
        GainPrior(method_locs=value)


def test_method_locs_are_stored_as_sorted_pairs():
    a = GainPrior(method_locs={"FT": 1.0, "DR": -0.5})
    assert a.method_locs == (("DR", -0.5), ("FT", 1.0))
    assert a == GainPrior(method_locs=[["FT", 1], ["DR", -0.5]]) and hash(a) == hash(GainPrior(method_locs=a.method_locs))
