"""The sensitivity data contract and `sensitivity_block` inside another NumPyro model."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC, NUTS, Predictive

from bayes_s2r.belief.sensitivity import SensitivityData, prepare_sensitivity
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import ExecutionOutcome
from bayes_s2r.evidence.records import SensitivityTrial as T
from bayes_s2r.models.sensitivity import SensitivityPrior, sensitivity_block, sensitivity_model


def _records():
    return [
        T("latency", 0.0, 45, 50, tier="direct"),
        T("latency", 0.0, 40, 50, tier="direct"),          # same cell as the one above
        T("mass", 0.0, 30, 50, tier="direct"),             # nominal again: same cell
        T("latency", 1.0, 10, 50, tier="direct"),
        T("mass", 1.0, 44, 50, tier="proxy"),
        T("latency", 1.0, 3, 50, tier="direct", pair_direction="mass", pair_level=0.5),
        T("mass", 0.5, 2, 50, tier="direct", pair_direction="latency", pair_level=1.0),
        ExecutionOutcome("x", 3, 0),                       # other kinds are ignored
    ]


def test_prepare_sums_cells_and_orders_pairs():
    d = prepare_sensitivity(_records())
    assert isinstance(d, SensitivityData)
    assert d.directions == ("latency", "mass")
    assert d.pairs == (("latency", "mass"),)
    assert np.asarray(d.pair_index).tolist() == [[0, 1]]
    assert d.levels.shape == (4, 2) and d.products.shape == (4, 1)
    lv = np.asarray(d.levels)
    nominal = np.flatnonzero((lv == 0).all(1))
    assert len(nominal) == 1
    assert int(d.successes[nominal[0]]) == 115 and int(d.episodes[nominal[0]]) == 150
    pair = np.flatnonzero(np.asarray(d.products)[:, 0] != 0)
    assert len(pair) == 1 and int(d.successes[pair[0]]) == 5 and int(d.episodes[pair[0]]) == 100
    assert float(d.products[pair[0], 0]) == pytest.approx(0.5)
    assert np.asarray(d.tier).tolist().count(1) == 1


def test_prepare_policy_filter_and_reference():
    recs = [T("lat", 0.0, 40, 50, policy="p0", round=0), T("lat", 1.0, 10, 50, policy="p0"),
            T("lat", 0.0, 45, 50, policy="p1", round=3), T("lat", 1.0, 20, 50, policy="p1", round=3)]
    both = prepare_sensitivity(recs)
    assert both.policies == ("p0", "p1") and both.ref_policy == 1
    only = prepare_sensitivity(recs, policy="p0")
    assert only.policies == ("p0",) and int(only.episodes.sum()) == 100
    with pytest.raises(InputError, match="policy"):
        prepare_sensitivity(recs, policy="p9")


def test_prepare_bad_input():
    with pytest.raises(InputError, match="records"):
        prepare_sensitivity([])
    with pytest.raises(InputError, match=r"evidence\[0\]"):
        prepare_sensitivity([{"direction": "x"}])
    with pytest.raises(InputError, match="evidence"):
        prepare_sensitivity(None)
    with pytest.raises(InputError, match="directions"):
        prepare_sensitivity(_records(), directions="latency")


def test_data_crosses_jit_with_static_labels():
    d = prepare_sensitivity(_records(), directions=["friction"])
    out = jax.jit(lambda x: (x.levels.sum(), x.directions))(d)
    assert out[1] == ("friction", "latency", "mass")


def test_directions_without_trials_give_prior_draws():
    d = prepare_sensitivity([], directions=["friction"])
    s = np.asarray(Predictive(sensitivity_model, num_samples=4000)(jax.random.PRNGKey(0), d)["sens_S"])
    assert s.shape == (4000, 1)
    # the prior of Ŝ = σ(a) − σ(a + b), a ~ N(loc_a, scale_a), b ~ N(0, scale_b), drawn independently
    prior = SensitivityPrior()
    rng = np.random.default_rng(0)
    a = rng.normal(prior.loc_a, prior.scale_a, 200_000)
    b = rng.normal(0.0, prior.scale_b, 200_000)
    ref = 1 / (1 + np.exp(-a)) - 1 / (1 + np.exp(-(a + b)))
    assert float(s.mean()) == pytest.approx(ref.mean(), abs=0.03)
    assert float(s.std()) == pytest.approx(ref.std(), rel=0.05)


def _outer(data, y=None):
    s = sensitivity_block(data)
    efficacy = numpyro.sample("efficacy", dist.Beta(2.0, 2.0))
    gain = numpyro.deterministic("gain", efficacy * s[data.directions.index("latency")])
    numpyro.sample("y", dist.Normal(gain, 0.05), obs=y)


def test_block_inside_outer_model_samples():
    d = prepare_sensitivity(_records())
    mcmc = MCMC(NUTS(_outer), num_warmup=120, num_samples=120, num_chains=1, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(1), d, y=0.3)
    s = mcmc.get_samples()
    assert all(k.startswith("sens_") for k in s if k not in ("efficacy", "gain"))
    assert s["sens_S"].shape == (120, 2) and s["sens_synergy"].shape == (120, 1)
    assert np.all(np.isfinite(np.asarray(s["gain"])))
    # latency's drop (0.85 -> 0.2) dominates mass's (proxy only, small)
    assert float(s["sens_S"][:, 0].mean()) > 0.4
    assert float(jnp.mean(s["gain"])) == pytest.approx(0.3, abs=0.1)
