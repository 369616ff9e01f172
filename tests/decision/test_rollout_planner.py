"""The rollout continuation: its value against a closed form, jitted and not, one compile per
shape, and safety probes valued by the feasibility they open."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayes_s2r as bs
from bayes_s2r.decision import rollout
from bayes_s2r.decision.index import gaussian_reservation, reservation_shape, reservation_values
from bayes_s2r.decision.lookahead import lookahead_arrays
from bayes_s2r.decision.problem import build_problem
from bayes_s2r.decision.utility import positive_part

MU = np.array([0.05, 0.0, 0.1])
SD = np.array([0.1, 0.2, 0.01])
COST = np.array([0.02, 0.05, 0.01])


def _independent(num_draws=4000):
    names = ["a", "b", "c"]
    belief = bs.GainBelief.from_gaussian(names, MU, SD, num_draws=num_draws, seed=3)
    cands = [bs.Candidate(n, "adaptation", "data", cost=bs.Cost(eng=float(c))) for n, c in zip(names, COST)]
    return belief, cands


# One small rollout shared by the tests below that need a rollout but no particular size: its
# program (draws, outcomes, horizon and rule are static) compiles once per base index.
SMALL_DRAWS = 400
SMALL = {"utility": "adopt", "continuation": "rollout", "horizon": 2, "cvu_samples": 16, "current_J": 0.4,
         "transition": bs.AlternativesTransition()}


def test_base_policy_value_matches_the_closed_form():
    """One decision left, noiseless tries, gains that do not interact: the last try is worth
    what it keeps, so the base policy tries the candidate with the largest E[max(ΔJ, 0)] − C_λ
    and its value is that maximum (here not the candidate with the largest reservation value,
    which would be worth less)."""
    belief, cands = _independent()
    d = bs.decide(belief, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(real=0, compute=0, eng=1.0),
                  utility="adopt", continuation="rollout", horizon=1, cvu_samples=4096, seed=5,
                  transition=bs.NoTransition(), current_J=0.5, bucket=4)
    kept = np.asarray(positive_part(MU, SD)) - COST
    first = int(np.argmax(kept))
    assert first != int(np.argmax(np.asarray(gaussian_reservation(MU, SD, COST))))
    assert d.g0_null == pytest.approx(float(kept[first]), abs=4 * SD[first] / np.sqrt(4096) + 1e-3)
    # the stop scores −β·V(s^∅): a candidate is chosen only if it beats stopping for good
    assert d.best is not None


@pytest.mark.parametrize("base_index", ["gaussian", "draws"])
def test_a_choice_within_the_noise_of_the_base_policys_defers_to_it(base_index):
    """Fortified rollout: with a margin no estimate clears, the rule makes the base policy's own
    choice; with none, argmax Q (or the stop); the margin never changes the scores."""
    belief, cands = _independent(num_draws=SMALL_DRAWS)
    w = bs.ResourceWeights(real=0, compute=0, eng=1.0)
    kw = {**SMALL, "seed": 1, "base_index": base_index}
    plain = bs.decide(belief, cands, bs.Budget(1, 1, 1), w, rollout_margin=0.0, **kw)
    sure = bs.decide(belief, cands, bs.Budget(1, 1, 1), w, rollout_margin=1e9, **kw)
    q = plain.table["Q"]
    stop_q = -plain.g0_null
    assert plain.best == (q.idxmax() if q.max() > stop_q else None)
    # the index rule's first choice with three decisions left: the largest reservation value
    draws = np.asarray(belief.draws)
    z = (reservation_values(draws, COST) if base_index == "draws"
         else np.asarray(gaussian_reservation(draws.mean(0), draws.std(0), COST)))
    assert sure.table.attrs["base_choice"] == plain.table.attrs["base_choice"] == "abc"[int(np.argmax(z))]
    assert sure.best == sure.table.attrs["base_choice"]
    np.testing.assert_array_equal(sure.table["Q"], plain.table["Q"])


def _walk_from_draws(belief, cands, budget, weights, base_index, rule):
    """The base policy's walk through the decisions left (the rollout's scan, every step of
    it) in the world of one posterior draw, picked by a key; returns (f, arrays) with
    f(arrays, key) -> (its return, its first action)."""
    cfg = bs.DecideConfig.make(utility="adopt", continuation="rollout", horizon=SMALL["horizon"], cvu_samples=4,
                               base_index=base_index)
    cands = tuple(cands)
    prob = build_problem(belief, cands, budget, weights, risk=None, config=cfg, reference=None,
                         current_J=SMALL["current_J"], done=())
    arr = lookahead_arrays(prob, cfg.bucket)
    ro = rollout.rollout_arrays(prob, cands, budget, weights, None, None, cfg, arr.gains.shape[1])
    pilots = ro.has_pilots

    def walk(arrays, key):
        arr, ro = arrays
        shape = reservation_shape(arr.gains) if base_index == "draws" else None
        mean = arr.gains.mean(0)
        dev = arr.gains - mean
        theta = arr.gains[jax.random.randint(key, (), 0, arr.gains.shape[0])]
        start = rollout._Walk(j=jnp.float32(SMALL["current_J"]), theta=theta, mean=mean,
                              cov=dev.T @ dev / arr.gains.shape[0], budget=ro.budget, avail=ro.base_ok,
                              gated=ro.gated, alive=jnp.bool_(True), value=jnp.float32(0.0))
        noise = jax.random.normal(jax.random.fold_in(key, 1), (cfg.horizon,))
        return rollout.base_policy_value(rule, ro, arr, shape, start, noise, ro.opens[0], utility=cfg.functional,
                                         pilots=pilots)

    return walk, (arr, ro)


@pytest.mark.parametrize("base_index", ["gaussian", "draws"])
def test_rollout_is_the_same_jitted_and_not(base_index):
    """The base policy's walk, the rollout's own scan, gives the same return and first action
    jitted and eagerly. An eager `decide` would compile every operation of the walk and the
    scenario map on its own, one compile per operation and shape; the outcome simulation and importance
    weights it walks from are the one-step look-ahead's, compared without jit in test_lookahead."""
    belief, cands = _independent(num_draws=SMALL_DRAWS)
    walk, arrays = _walk_from_draws(belief, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(real=0, compute=0, eng=1.0),
                                    base_index, SMALL["transition"])
    keys = [jax.random.key(i) for i in range(3)]
    jitted_walk = jax.jit(walk)
    jitted = [jitted_walk(arrays, k) for k in keys]
    with jax.disable_jit():
        eager = [walk(arrays, k) for k in keys]
    for (v_jit, a_jit), (v_eager, a_eager) in zip(jitted, eager):
        assert float(v_eager) == pytest.approx(float(v_jit), abs=1e-5)
        assert int(a_eager) == int(a_jit)
    values = np.array([float(v) for v, _ in jitted])
    assert np.abs(values).max() > 1e-3 and np.ptp(values) > 1e-3  # the walks try and keep something


def test_rollout_compiles_once_per_shape():
    belief, cands = _independent(num_draws=SMALL_DRAWS)
    w = bs.ResourceWeights(real=0, compute=0, eng=1.0)
    bs.decide(belief, cands, bs.Budget(1, 1, 1), w, seed=0, **SMALL)
    size = rollout._rollout_jit._cache_size()
    for seed, budget in [(1, bs.Budget(1, 1, 0.9)), (2, bs.Budget(1, 0.5, 0.5))]:
        bs.decide(belief, cands, budget, w, seed=seed, **{**SMALL, "current_J": 0.3})
    # the decisions left are a loop bound, not a shape: a campaign's rounds share one program
    for horizon in (1, 3, 4):
        bs.decide(belief, cands, bs.Budget(1, 1, 1), w, seed=0, **{**SMALL, "horizon": horizon})
    assert rollout._rollout_jit._cache_size() == size


def _probe_problem(sim_prior):
    names = ["ft", "dr"]
    belief = bs.GainBelief.from_gaussian(names, [0.3, 0.0], [0.1, 0.02], num_draws=4000, seed=0)
    cands = [
        bs.Candidate("ft", "adaptation", "optimization", method="FT", touches_robot=True,
                     cost=bs.Cost(real=0.5), outcome=bs.BinomialPairedOutcome(48)),
        bs.Candidate("dr", "adaptation", "data", method="DR", cost=bs.Cost(compute=1.0),
                     outcome=bs.BinomialPairedOutcome(48)),
        bs.Candidate("probe_ft", "diagnosis", "optimization", method="probe", observes="safety:ft",
                     touches_robot=True, repeatable=False, cost=bs.Cost(real=0.1, eng=0.5),
                     outcome=bs.SafetyProbe(executions=60, risk_bound=0.01)),
    ]
    risk = bs.fit_exec_risk([], cands, sim_prior=sim_prior)
    return belief, cands, risk


@pytest.mark.parametrize("continuation", ["rollout", "g0"])
def test_a_probe_is_bought_when_the_feasibility_it_opens_is_worth_its_cost(continuation):
    belief, cands, risk = _probe_problem({"ft": (0.0, 50.0)})  # simulation says: probably safe
    w = bs.ResourceWeights(real=0.05, compute=0.01, eng=0.01)
    d = bs.decide(belief, cands, bs.Budget(2, 5, 10), w, risk=risk, utility="adopt", current_J=0.4,
                  continuation=continuation, horizon=2, cvu_samples=512)
    t = d.table
    assert not t.loc["ft", "safe"] and t.loc["probe_ft", "safe"]  # shut, and the probe's own bound opens it
    assert t.loc["probe_ft", "ucb_exec"] == pytest.approx(0.01)
    if continuation == "rollout":
        assert d.best == "probe_ft"
        # what ft is worth once open, in the scenarios where the probe opens it, is in the rule's
        # value of acting: U0 + E[V] of the probe is far above its price
        assert t.loc["probe_ft", "Q"] + d.g0_null > 0.1
    else:  # the one-step G0 cannot see what a probe opens
        assert t.loc["probe_ft", "CVU"] == pytest.approx(0.0, abs=1e-6)
        assert d.best != "probe_ft"


def test_no_probe_when_the_candidate_is_likely_unsafe():
    belief, cands, risk = _probe_problem({"ft": (8.0, 50.0)})  # 16% unsafe in simulation
    w = bs.ResourceWeights(real=0.05, compute=0.01, eng=0.01)
    d = bs.decide(belief, cands, bs.Budget(2, 5, 10), w, risk=risk, utility="adopt", current_J=0.4,
                  continuation="rollout", horizon=2, cvu_samples=512)
    assert d.best != "probe_ft"
    assert d.table.loc["probe_ft", "CVU"] < 0.01


def test_probe_openings_follow_the_exact_bound():
    _, cands, risk = _probe_problem({"ft": (0.0, 50.0)})
    cfg = bs.DecideConfig.make(cvu_samples=4000)
    target, opens = rollout.probe_openings(tuple(cands), risk, cfg, 4000, seed=0)
    assert list(target) == [-1, -1, 0]
    # 60 clean runs give a Clopper–Pearson bound of 0.0487 ≤ 0.05; one unsafe run does not pass
    _, a, b = risk.mixtures["ft"]
    p_clean = float(np.mean((1 - np.random.default_rng(1).beta(a[0], b[0], 200_000)) ** 60))
    assert opens[:, 2].mean() == pytest.approx(p_clean, abs=0.03)
    assert not opens[:, :2].any()


def _pilot_problem(with_pilot=True):
    """Two adaptations of N(0, 0.2²), budget for one try only, and a cheap, precise pilot of `a`."""
    belief = bs.GainBelief.from_gaussian(["a", "b"], [0.0, 0.0], [0.2, 0.2], num_draws=8_000, seed=2)
    cands = [bs.Candidate(n, "adaptation", "data", cost=bs.Cost(real=1.0)) for n in ("a", "b")]
    if with_pilot:
        cands.append(bs.Candidate("pilot_a", "diagnosis", "data", observes="a", cost=bs.Cost(eng=0.1),
                                  outcome=bs.GaussianOutcome(noise_sd=0.05)))
    return belief, cands


def _pilot_then_one_try_value(sd=0.2, noise=0.05, price=0.02, pilot_price=0.005):
    """E[V] of "pilot a, then the one affordable try", by quadrature: after the pilot a's belief
    is N(m, s²) with m ~ N(0, u²); the last try goes to the candidate keeping more, and a
    noiseless try keeps max(X, 0)."""
    from scipy import stats

    u2 = sd**4 / (sd**2 + noise**2)
    s = np.sqrt(sd**2 - u2)
    nodes, weights = np.polynomial.hermite_e.hermegauss(200)
    m = np.sqrt(u2) * nodes
    pos_a = m * stats.norm.cdf(m / s) + s * stats.norm.pdf(m / s)
    pos_b = sd * stats.norm.pdf(0.0)
    return float(weights @ np.maximum(pos_a, pos_b) / weights.sum()) - price - pilot_price


@pytest.mark.parametrize("base_index", ["gaussian", "draws"])
def test_the_base_policy_pilots_when_only_one_try_is_affordable(base_index):
    """Budget for one try, a pilot that reads one candidate's gain: the base policy pilots, then
    tries the better-looking candidate, worth the quadrature value above; the rule runs the pilot
    first, where trying blind is worth only E[max(X, 0)] − price. The draws here are normal, so
    the base policy valuing them by their own shape walks the same way."""
    w = bs.ResourceWeights(real=0.02, compute=0.0, eng=0.05)
    # a candidate axis padded to 4, not 8: the same answer, half the work in each scenario
    kw = {"utility": "adopt", "continuation": "rollout", "horizon": 2, "cvu_samples": 4096, "seed": 3,
          "transition": bs.NoTransition(), "current_J": 0.5, "base_index": base_index, "bucket": 4}
    belief, cands = _pilot_problem()
    d = bs.decide(belief, cands, bs.Budget(1.2, 1, 1), w, **kw)
    blind = 0.2 / np.sqrt(2 * np.pi) - 0.02  # E[max(X, 0)] − price
    assert d.g0_null == pytest.approx(_pilot_then_one_try_value(), abs=0.008)
    assert d.g0_null > blind + 0.02
    assert d.best == "pilot_a"
    if base_index == "draws":
        return  # without a pilot the two indexes see the same two normal candidates
    # without the pilot in the set the same walk tries blind
    belief, cands = _pilot_problem(with_pilot=False)
    assert bs.decide(belief, cands, bs.Budget(1.2, 1, 1), w, **kw).g0_null == pytest.approx(blind, abs=0.01)


def test_the_base_policy_probes_only_when_a_decision_is_left_to_try():
    """A probe opens a gate for a later try: with one decision left the base policy does not buy
    it (its value is the best open try's, here not below 0), with two it probes, then tries."""
    belief, cands, risk = _probe_problem({"ft": (0.0, 50.0)})
    w = bs.ResourceWeights(real=0.05, compute=0.01, eng=0.01)
    # the settings of the probe tests above: the two-decision program is theirs
    kw = {"risk": risk, "utility": "adopt", "current_J": 0.4, "continuation": "rollout", "cvu_samples": 512}
    one = bs.decide(belief, cands, bs.Budget(2, 5, 10), w, horizon=1, **kw)
    assert one.g0_null >= 0.0
    two = bs.decide(belief, cands, bs.Budget(2, 5, 10), w, horizon=2, **kw)
    assert two.g0_null > 0.1
    # a budget that affords the probe but not the try after it: no probe either
    assert bs.decide(belief, cands, bs.Budget(0.4, 5, 10), w, horizon=2, **kw).g0_null >= 0.0


def test_a_diagnosis_within_its_noise_of_the_stop_gives_way_to_it():
    """Candidates 0 and 1 are tries, 2 and 3 diagnoses; where no try beats the stop, a diagnosis
    is made only when its Q beats the stop's by more than margin × β × its standard error."""
    from bayes_s2r.decision.decide import _sure_diagnosis

    q, feasible = np.array([0.10, 0.12, 0.15, 0.125]), np.ones(4, bool)
    is_adapt, se = np.array([True, True, False, False]), np.array([0.01, 0.02, 0.04, np.nan])
    cfg = bs.DecideConfig.make(diagnosis_margin=1.0, beta=0.5)
    # no try beats a stop at 0.125: lead 0.025 > 0.5·0.04, and a stop at 0.135 leaves 0.015 ≤ 0.02
    assert _sure_diagnosis(2, q, 0.125, feasible, is_adapt, se, cfg) == 2
    assert _sure_diagnosis(2, q, 0.135, feasible, is_adapt, se, cfg) is None
    assert _sure_diagnosis(2, q, 0.135, np.array([False, False, True, True]), is_adapt, se, cfg) is None
    # a try beats the stop: the diagnosis stands however close (what it tells picks the try)
    assert _sure_diagnosis(2, q, 0.0, feasible, is_adapt, np.array([0.01, 0.02, 1.0, 0.0]), cfg) == 2
    # an unknown (NaN) error counts as 0; a try, the stop and a margin of 0 are left as they are
    assert _sure_diagnosis(3, q, 0.124, feasible, is_adapt, se, cfg) == 3
    assert _sure_diagnosis(1, q, 0.0, feasible, is_adapt, se, cfg) == 1
    assert _sure_diagnosis(None, q, 0.0, feasible, is_adapt, se, cfg) is None
    assert _sure_diagnosis(2, q, 0.149, feasible, is_adapt, se, cfg._replace(diagnosis_margin=0.0)) == 2
    with pytest.raises(bs.InputError, match="diagnosis_margin"):
        bs.DecideConfig.make(diagnosis_margin=-1.0)


def test_the_fortified_choice_weighs_tries_and_the_stop_and_lets_a_diagnosis_stand():
    """Candidates 0 and 1 are tries, 2 a diagnosis; the base policy's choice is kept unless the
    argmax beats it by more than margin × β × the paired standard error."""
    from bayes_s2r.decision.decide import _fortified
    from bayes_s2r.decision.lookahead import BaseAction

    q, feasible, is_adapt = np.array([0.10, 0.12, 0.20]), np.ones(3, bool), np.array([True, True, False])
    cfg = bs.DecideConfig.make(rollout_margin=1.0, beta=0.5)
    base = BaseAction(0, se_versus=np.array([0.0, 0.05, 0.5]), se_alone=np.array([0.01, 0.01, 0.5]))
    assert _fortified(1, q, -1.0, feasible, is_adapt, base, cfg) == 0  # lead 0.02 ≤ 0.5·0.05
    assert _fortified(1, q, -1.0, feasible, is_adapt, base._replace(se_versus=np.array([0, 0.03, 0.5])), cfg) == 1
    assert _fortified(2, q, -1.0, feasible, is_adapt, base, cfg) == 2  # the rollout's diagnosis stands
    assert _fortified(1, q, -1.0, feasible, is_adapt, base._replace(index=2), cfg) == 1  # and the base policy's
    # the stop against a try: Q(stop) − Q(0) = 0.02 against 0.5·se_alone[0] = 0.005
    assert _fortified(None, q, 0.12, feasible, is_adapt, base, cfg) is None
    assert _fortified(None, q, 0.104, feasible, is_adapt, base, cfg) == 0
    assert _fortified(1, q, -1.0, feasible, is_adapt, base, cfg._replace(rollout_margin=0.0)) == 1
    assert _fortified(1, q, -1.0, np.array([False, True, True]), is_adapt, base, cfg) == 1  # base infeasible
