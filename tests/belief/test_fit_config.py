"""`fit_gains`'s settings: `NUTS` / `SVI` inside a `FitConfig`, each default and check once,
and the flat keywords read into the same objects."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import bayes_s2r as bs
from bayes_s2r.belief.fit import NUTS, SVI, FitConfig
from bayes_s2r.belief.inference import LEGACY_OPTIONS, fit_config
from bayes_s2r.errors import InputError

CANDS = [bs.Candidate("dr", "adaptation", "data", method="DR"),
         bs.Candidate("si", "adaptation", "model", method="SI")]
EVIDENCE = [bs.PairedEval("dr", 30, 50, 20, 50), bs.PairedEval("si", 25, 50, 22, 50)]


def test_flat_keywords_build_the_settings_objects():
    assert fit_config() == FitConfig(inference=NUTS())
    assert fit_config(method="svi") == FitConfig(inference=SVI())
    assert fit_config(method="nuts", num_warmup=10, num_samples=20, num_chains=1, target_accept_prob=0.8,
                      max_tree_depth=5, chain_method="sequential") == FitConfig(
        inference=NUTS(num_warmup=10, num_samples=20, num_chains=1, target_accept_prob=0.8, max_tree_depth=5,
                       chain_method="sequential"))
    # an SVI fit draws num_samples x num_chains, the missing one at NUTS's default
    assert fit_config(method="svi", svi_steps=300, svi_learning_rate=0.05, svi_guide="normal",
                      num_samples=100) == FitConfig(
        inference=SVI(steps=300, learning_rate=0.05, guide="normal", num_draws=100 * NUTS().num_chains))
    assert SVI().num_draws == NUTS().num_samples * NUTS().num_chains
    # settings of the method not chosen change nothing, as before
    assert fit_config(method="svi", num_warmup=3) == fit_config(method="svi")
    assert fit_config(svi_steps=30) == FitConfig()


def test_a_config_and_keywords_combine():
    base = FitConfig(inference=SVI(steps=300), use_sensitivity=False)
    assert fit_config(base, svi_steps=400) == dataclasses.replace(base, inference=SVI(steps=400))
    assert fit_config(base, method="svi") == base
    assert fit_config(base, method="nuts") == dataclasses.replace(base, inference=NUTS())
    assert fit_config(base, inference=NUTS(num_samples=50)).inference == NUTS(num_samples=50)
    with pytest.raises(InputError, match="method"):
        fit_config(method="svi", inference=NUTS())


@pytest.mark.parametrize("build, field", [
    (lambda: NUTS(num_samples=1), "num_samples"), (lambda: NUTS(num_warmup=-1), "num_warmup"),
    (lambda: NUTS(num_chains=0), "num_chains"), (lambda: NUTS(target_accept_prob=1.0), "target_accept_prob"),
    (lambda: NUTS(max_tree_depth=0), "max_tree_depth"), (lambda: NUTS(chain_method="pmap"), "chain_method"),
    (lambda: SVI(steps=19), "steps"), (lambda: SVI(steps=10**7 + 1), "steps"), (lambda: SVI(steps=2.5), "steps"),
    (lambda: SVI(learning_rate=0.0), "learning_rate"), (lambda: SVI(guide="full"), "guide"),
    (lambda: SVI(num_draws=1), "num_draws"), (lambda: FitConfig(inference="svi"), "inference"),
    (lambda: FitConfig(use_sensitivity=1), "use_sensitivity"), (lambda: FitConfig(prior={"nope": 1}), "prior.nope"),
])
def test_each_setting_is_checked_when_built(build, field):
    with pytest.raises(InputError) as err:
        build()
    assert err.value.field == field


@pytest.mark.parametrize("flat, value", [("svi_steps", 5), ("svi_steps", 10**400), ("svi_learning_rate", 2.0),
                                         ("svi_guide", "full"), ("num_samples", 1), ("num_chains", 0)])
def test_a_flat_keyword_is_named_as_given(flat, value):
    with pytest.raises(InputError) as err:
        fit_config(method="svi", **{flat: value})
    assert err.value.field == flat
    assert len(str(err.value)) < 300


def test_unknown_options_and_methods_are_refused():
    with pytest.raises(InputError, match="svi_step"):
        fit_config(svi_step=300)
    with pytest.raises(InputError, match="method"):
        fit_config(method="hmc")
    with pytest.raises(InputError, match="config"):
        fit_config(SVI())


def test_the_mapping_form_round_trips():
    prior = bs.GainPrior(candidate_scale=0.2)
    for cfg in (FitConfig(), FitConfig(inference=SVI(steps=300, guide="normal"), prior=prior, use_sensitivity=False),
                FitConfig(inference=NUTS(chain_method="sequential", target_accept_prob=0.85))):
        assert FitConfig.from_mapping(cfg.to_mapping()) == cfg
    assert FitConfig(prior=dataclasses.asdict(prior)).prior == prior
    with pytest.raises(InputError, match=r"fit\.inference\.method"):
        FitConfig.from_mapping({"inference": {"method": "hmc"}})
    with pytest.raises(InputError, match=r"fit\.inference\.steps"):
        FitConfig.from_mapping({"inference": {"method": "nuts", "steps": 5}})


def test_the_objects_fit_exactly_as_the_flat_keywords():
    flat = bs.fit_gains(EVIDENCE, CANDS, method="svi", seed=4, svi_steps=200, num_samples=100, num_chains=1)
    obj = bs.fit_gains(EVIDENCE, CANDS, seed=4, inference=SVI(steps=200, num_draws=100))
    cfg = bs.fit_gains(EVIDENCE, CANDS, seed=4, config=FitConfig(inference=SVI(steps=200, num_draws=100)))
    np.testing.assert_array_equal(obj.draws, flat.draws)
    np.testing.assert_array_equal(cfg.draws, flat.draws)
    assert obj.diagnostics["num_steps"] == 200 and obj.draws.shape == (100, 2)


def test_every_flat_keyword_names_a_setting():
    fields = {"nuts": {f.name for f in dataclasses.fields(NUTS)}, "svi": {f.name for f in dataclasses.fields(SVI)}}
    for flat, (method, name) in LEGACY_OPTIONS.items():
        assert name in fields[method], flat
