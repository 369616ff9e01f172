"""The prior predictive check of a gain prior against past campaigns (`check_gain_prior`)."""

import numpy as np
import pytest
from scipy import integrate, special, stats

import bayes_s2r as bs
from bayes_s2r.belief.prior_check import SIGNIFICANCE

EPISODES = 48
METHODS = {f"{m}-{lens}-{j}": m for m in ("DR", "SI", "DA") for lens in ("data", "model") for j in range(2)}


def _campaigns_from_the_model(prior, num, seed):
    """Past campaigns drawn from the gains model's own prior (NumPyro's prior predictive): each
    campaign one draw of the whole hierarchy, each candidate's arms of EPISODES episodes."""
    import jax
    from numpyro.infer import Predictive

    from bayes_s2r.belief.data import prepare_gains
    from bayes_s2r.models.gains import gains_model

    cands = [bs.Candidate(n, "adaptation", n.split("-")[1], method=m) for n, m in METHODS.items()]
    template = prepare_gains([bs.PairedEval(c.name, 1, 2, 1, 2) for c in cands], cands, prior=prior)
    data = template.data._replace(treated_successes=None, control_successes=None, cand_est=None, cand_info=None)
    pred = Predictive(lambda d: gains_model(d, template.spec), num_samples=num, return_sites=["gain", "alpha"])
    out = jax.device_get(pred(jax.random.PRNGKey(seed), data))
    rng = np.random.default_rng(seed)
    j0 = special.expit(np.asarray(out["alpha"])[:, 0])
    names = template.names
    campaigns = []
    for k in range(num):
        p_t = np.clip(j0[k] + np.asarray(out["gain"])[k], 0.0, 1.0)
        campaigns.append([bs.PairedEval(n, int(rng.binomial(EPISODES, p)), EPISODES,
                                        int(rng.binomial(EPISODES, j0[k])), EPISODES)
                          for n, p in zip(names, p_t, strict=True)])
    return campaigns


def _campaigns(effect_sd, num, seed, base=0.5):
    """Past campaigns whose effects are normal on the logit scale with sd `effect_sd`."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(num):
        a = special.logit(base) + rng.normal(0, 0.5)
        out.append([bs.PairedEval(n, int(rng.binomial(EPISODES, special.expit(a + rng.normal(0, effect_sd)))),
                                  EPISODES, int(rng.binomial(EPISODES, special.expit(a))), EPISODES)
                    for n in METHODS])
    return out


def test_a_prior_that_made_the_history_passes_its_check():
    prior = bs.GainPrior(candidate_scale=0.5, candidate_df=3.0, method_locs={"DR": 1.0})
    check = bs.check_gain_prior(_campaigns_from_the_model(prior, 120, seed=3), prior, methods=METHODS)
    assert check.effects == 120 * len(METHODS)
    assert abs(check.coverage - 0.9) < 0.03
    assert stats.kstest(check.pit, "uniform").statistic < 0.05
    assert check.gain_predicted == pytest.approx(check.gain_observed, rel=0.1)
    assert check.verdict == "consistent with the history"
    # the same history against a prior that leaves out DR's own mean of 1 logit
    shifted = bs.check_gain_prior(_campaigns_from_the_model(prior, 120, seed=3),
                                  bs.GainPrior(candidate_scale=0.5, candidate_df=3.0), methods=METHODS)
    assert shifted.mean_pit > 0.5 and "expects smaller gains than seen" in shifted.verdict


def test_a_prior_wider_than_the_history_is_called_wider():
    check = bs.check_gain_prior(_campaigns(0.1, 12, seed=0), bs.GainPrior())
    assert check.coverage > 0.97 and check.p_value < SIGNIFICANCE
    assert check.verdict.startswith("wider than the history")
    assert check.gain_predicted > 2 * check.gain_observed
    assert "wider than the history" in check.text()


def test_a_prior_narrower_than_the_history_is_called_narrower():
    narrow = bs.GainPrior(gain_scale=0.0, method_scale=0.0, group_scale=0.0, candidate_scale=0.05, fixed_scales=True)
    check = bs.check_gain_prior(_campaigns(2.0, 12, seed=1), narrow)
    assert check.coverage < 0.7 and check.verdict.startswith("narrower than the history")
    assert check.gain_predicted < check.gain_observed


def test_the_pit_of_one_effect_is_the_predictive_integral():
    # one effect with a control arm so large that its level is known; δ ~ N(0.3, 0.4²) exactly
    prior = bs.GainPrior(gain_scale=0.0, method_scale=0.0, group_scale=0.0, candidate_scale=0.4,
                         fixed_scales=True)
    past = [[bs.PairedEval("a", 30, 40, 6000, 10000)]]
    check = bs.check_gain_prior(past, prior, draws=200_000)
    a = special.logit(0.6)

    def at(z, k):
        return stats.binom.pmf(k, 40, special.expit(a + 0.3 + 0.4 * z)) * stats.norm.pdf(z)

    below = sum(integrate.quad(at, -8, 8, args=(k,))[0] for k in range(30))
    equal = integrate.quad(at, -8, 8, args=(30,))[0]
    assert below - 0.005 <= check.pit[0] <= below + equal + 0.005
    kept = integrate.quad(lambda z: max(special.expit(a + 0.3 + 0.4 * z) - 0.6, 0.0) * stats.norm.pdf(z), -8, 8)[0]
    assert check.gain_expected == pytest.approx(kept, rel=0.02)


def test_same_seed_same_check_and_the_seed_moves_only_the_noise():
    past = _campaigns(0.5, 6, seed=2)
    one, two = (bs.check_gain_prior(past, bs.GainPrior(candidate_scale=0.5), seed=5) for _ in range(2))
    np.testing.assert_array_equal(one.pit, two.pit)
    other = bs.check_gain_prior(past, bs.GainPrior(candidate_scale=0.5), seed=6)
    assert abs(other.coverage - one.coverage) <= 0.1
    assert set(one.to_dict()) == {"effects", "level", "coverage", "p_value", "mean_pit", "location_p_value",
                                  "gain_predicted", "gain_observed", "gain_expected", "verdict"}


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"prior": "wide"}, "prior"),
    ({"prior": bs.GainPrior(link="identity")}, "prior.link"),
    ({"level": 1.0}, "level"),
    ({"draws": 10}, "draws"),
    ({"seed": -1}, "seed"),
    ({"methods": {"a": 1}}, "methods"),
    ({"prior": bs.GainPrior(method_locs={"DR": 1.0})}, "methods"),
])
def test_bad_input_names_the_field(kwargs, field):
    args = {"prior": bs.GainPrior(), **kwargs}
    with pytest.raises(bs.InputError) as err:
        bs.check_gain_prior([[bs.PairedEval("a", 30, 40, 20, 40)]], **args)
    assert err.value.field == field


def test_histories_without_paired_evaluations_are_refused():
    with pytest.raises(bs.InputError) as err:
        bs.check_gain_prior([[bs.DeploymentEval("pi0", 10, 8, 0)]], bs.GainPrior())
    assert err.value.field == "histories"
