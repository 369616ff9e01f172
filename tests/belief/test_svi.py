"""fit_gains(method="svi"): agreement with NUTS, determinism, convergence flag, bad input."""

import numpy as np
import pytest

from bayes_s2r import InputError, fit_gains
from bayes_s2r.belief import svi as svi_module

SVI = {"svi_steps": 2000, "num_samples": 500, "num_chains": 2}


@pytest.fixture(scope="module")
def svi_fit(gains_kit):
    return fit_gains(gains_kit.evidence(400), gains_kit.candidates(), method="svi", seed=0, **SVI)


def test_svi_means_agree_with_nuts(svi_fit, pooled_fits):
    nuts = pooled_fits[400]
    diff = (svi_fit.mean() - nuts.mean()).abs()
    assert diff.max() < 0.02, diff
    assert svi_fit.diagnostics["converged"] and svi_fit.diagnostics["ok"]
    assert svi_fit.method == "svi" and svi_fit.draws.shape == (1000, len(nuts.names))
    # the unseen candidate is uncertain in both: variational sd within a factor of 2
    assert 0.5 < svi_fit.sd()["e"] / nuts.sd()["e"] < 2.0


def test_svi_same_seed_same_draws_without_retrace(svi_fit, gains_kit):
    before = svi_module._svi_compiled.cache_info().misses
    again = fit_gains(gains_kit.evidence(400), gains_kit.candidates(), method="svi", seed=0, **SVI)
    other = fit_gains(gains_kit.evidence(400), gains_kit.candidates(), method="svi", seed=1, **SVI)
    assert svi_module._svi_compiled.cache_info().misses == before
    np.testing.assert_array_equal(again.draws, svi_fit.draws)
    assert not np.array_equal(other.draws, svi_fit.draws)


def test_svi_that_stopped_early_is_not_ok(gains_kit):
    b = fit_gains(gains_kit.evidence(400), gains_kit.candidates(), method="svi", seed=0,
                  svi_steps=40, num_samples=50, num_chains=1)
    assert not b.diagnostics["ok"]
    assert "not converged" in b.diagnostics["reason"]
    assert b.diagnostics["grad_z"] > 4 and b.diagnostics["mean_offset_sd"] > 0.25


@pytest.mark.parametrize("kw, field", [
    ({"svi_guide": "full"}, "svi_guide"),
    ({"svi_steps": 5}, "svi_steps"),
    ({"svi_learning_rate": 2.0}, "svi_learning_rate"),
])
def test_svi_bad_settings_are_named(gains_kit, kw, field):
    with pytest.raises(InputError) as err:
        fit_gains(gains_kit.evidence(20), gains_kit.candidates(), method="svi", **kw)
    assert err.value.field == field
