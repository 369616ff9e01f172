"""Monte-Carlo CVU against closed forms and an independent NumPy reference; recompilation."""

import numpy as np
import pytest
from scipy import stats

import bayes_s2r as bs
from bayes_s2r.decision import lookahead as la
from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.problem import build_problem

MU = np.array([0.10, 0.05, -0.02])
SD = np.array([0.05, 0.08, 0.10])
NOISE = 0.04


def _kg(i: int) -> float:
    """Closed-form knowledge gradient with the null action's 0 as one more alternative."""
    c = max(0.0, *(np.delete(MU, i)))
    s_tilde = SD[i] ** 2 / np.sqrt(SD[i] ** 2 + NOISE**2)
    z = -abs(MU[i] - c) / s_tilde
    return s_tilde * (z * stats.norm.cdf(z) + stats.norm.pdf(z))


def _kg_problem(num_draws):
    names = ["a0", "a1", "a2"]
    belief = bs.GainBelief.from_gaussian(names, MU, SD, num_draws=num_draws, seed=1)
    cands = [bs.Candidate(n, "adaptation", "data") for n in names] + [
        bs.Candidate(f"d{i}", "diagnosis", "data", observes=n, outcome=bs.GaussianOutcome(NOISE))
        for i, n in enumerate(names)]
    return belief, cands


@pytest.mark.parametrize("collapse_ess", [0.0, 1e9], ids=["importance", "gaussian_update"])
def test_cvu_of_diagnosis_is_the_knowledge_gradient(collapse_ess):
    # jitted only: the eager path is compared with the reference in test_lookahead_matches_reference_without_jit
    belief, cands = _kg_problem(8000)
    d = bs.decide(belief, cands, bs.Budget(1, 1, 1), bs.ResourceWeights(), cvu_samples=1024, seed=2,
                  transition=bs.NoTransition(), collapse_ess=collapse_ess, chunk_bytes=2**28)
    for i in range(3):
        row = d.table.loc[f"d{i}"]
        # MC error over outcomes, plus the finite-draw noise of the other candidates' means
        tol = 4 * row["cvu_se"] + 4e-4
        assert row["CVU"] == pytest.approx(_kg(i), abs=tol), (i, row["CVU"], _kg(i), tol)
    assert _kg(1) > 2 * _kg(2) > 0.002  # the check is not vacuous
    assert d.table.loc["d1", "CVU"] > d.table.loc["d2", "CVU"]
    if collapse_ess > 1:
        assert (d.table.loc[["d0", "d1", "d2"], "collapsed"] == 1.0).all()


def _ref_case(bench_module, utility, collapse_ess, transition, num_draws=300, k=24, repeat_share=None):
    belief, cands, budget, weights = bench_module.make_problem_inputs(8, num_draws, seed=5)
    cfg = DecideConfig.make(cvu_samples=k, seed=7, utility=utility, collapse_ess=collapse_ess)
    prob = build_problem(belief, cands, budget, weights, risk=None, config=cfg, reference=budget,
                         current_J=0.6, done=())
    kw = {} if repeat_share is None else {"repeat_share": repeat_share}
    rule = bs.NoTransition(**kw) if transition == "none" else bs.HeadroomTransition(**kw)
    res = la.lookahead(prob, cfg, rule)
    arrays = la.lookahead_arrays(prob, cfg.bucket)
    _, y = la.draw_outcomes(la.jax.random.key(cfg.seed), arrays, k, la.binomial_cap(prob))
    ref = bench_module.reference_cvu(prob, np.asarray(y, np.float64)[:, : prob.size], collapse_ess=collapse_ess,
                                     utility_kappa=cfg.functional.kappa,
                                     transition=transition, adopt=utility == "adopt",
                                     repeat_share=1.0 if repeat_share is None else repeat_share)
    return res, ref


@pytest.mark.parametrize("utility,collapse_ess,transition", [
    ("mean", 50.0, "headroom"), ("mean", 0.0, "none"), ("mean", 1e9, "headroom"),
    ("lcb", 50.0, "headroom"), ("cvar", 120.0, "headroom"), ("adopt", 50.0, "headroom"),
    ("adopt", 1e9, "headroom"),
])
def test_lookahead_matches_numpy_reference(bench_module, utility, collapse_ess, transition):
    res, ref = _ref_case(bench_module, utility, collapse_ess, transition)
    np.testing.assert_allclose(res.cvu, ref["cvu"], atol=2e-5)
    np.testing.assert_allclose(res.cvu_se, ref["cvu_se"], atol=2e-5)
    np.testing.assert_allclose(res.ess, ref["ess"], rtol=1e-3)
    assert np.abs(res.cvu).max() > 1e-3  # a non-trivial case


@pytest.mark.parametrize("utility,transition,share", [("adopt", "headroom", 0.0), ("mean", "none", 0.0),
                                                      ("adopt", "headroom", 0.5)])
def test_repeat_share_matches_numpy_reference(bench_module, utility, transition, share):
    res, ref = _ref_case(bench_module, utility, 50.0, transition, repeat_share=share)
    np.testing.assert_allclose(res.cvu, ref["cvu"], atol=2e-5)
    if share == 0.0:  # at 0.5 no repeat is the best next step of this problem; at 0 none is
        default, _ = _ref_case(bench_module, utility, 50.0, transition)
        assert np.abs(res.cvu - default.cvu).max() > 1e-3


def test_repeat_share_sets_what_a_repeat_of_the_deployed_adaptation_is_worth():
    # One repeatable adaptation and budget for two runs: after a good outcome the policy has
    # its gain; with repeat_share 0 running it again is worth nothing more, with 1 (the
    # default) the repeat takes the same share of the remaining headroom again.
    belief = bs.GainBelief.from_gaussian(["dr"], [0.2], [0.15], num_draws=4000)
    cands = [bs.Candidate("dr", "adaptation", "data", cost=bs.Cost(real=1.0),
                          outcome=bs.BinomialPairedOutcome(episodes=48))]
    kw = {"budget": bs.Budget(real=2.5, compute=1, eng=1), "weights": bs.ResourceWeights(real=0.01),
          "cvu_samples": 256, "current_J": 0.3, "utility": "adopt"}
    fixed = bs.decide(belief, cands, transition=bs.HeadroomTransition(repeat_share=0.0), **kw)
    again = bs.decide(belief, cands, **kw)
    assert again.table.loc["dr", "CVU"] > fixed.table.loc["dr", "CVU"] + 0.02
    # with 0, only the outcomes that did not move the policy leave a repeat worth running
    assert fixed.table.loc["dr", "CVU"] < -0.5 * fixed.g0_null
    with pytest.raises(bs.InputError, match="repeat_share"):
        bs.HeadroomTransition(repeat_share=-1.0)


def test_lookahead_matches_reference_without_jit(bench_module, jit_mode):
    res, ref = _ref_case(bench_module, "mean", 50.0, "headroom")
    np.testing.assert_allclose(res.cvu, ref["cvu"], atol=2e-5)


def test_binomial_outcomes_follow_the_binomial_distribution():
    """The inverse-CDF sampler against scipy: mean and variance of counts at several p."""
    n, k = 40, 20000
    theta = np.array([-0.3, 0.0, 0.25, 0.45], np.float32)
    arr = la.LookaheadArrays(
        gains=la.jnp.zeros((4, 4)), observed=la.jnp.asarray(np.tile(theta[:, None], (1, 4))),
        kind=la.jnp.full(4, 2, np.int32), a=la.jnp.full(4, float(n)), b=la.jnp.full(4, 0.5),
        is_adapt=la.jnp.zeros(4, bool), feas_now=la.jnp.zeros(4, bool), cost_now=la.jnp.zeros(4),
        feas_next=la.jnp.zeros((4, 4), bool), cost_next=la.jnp.zeros((4, 4)), valid=la.jnp.ones(4, bool))
    _, y = la.draw_outcomes(la.jax.random.key(0), arr, k, 64)
    y = np.asarray(y)
    p = 0.5 + theta
    assert np.all(np.abs(y.mean(0) - stats.binom.mean(n, p)) <= 4 * np.sqrt(stats.binom.var(n, p) / k))
    np.testing.assert_allclose(y.var(0), stats.binom.var(n, p), rtol=0.05)
    assert np.all(y == np.round(y)) and y.min() >= 0 and y.max() <= n


def test_shrinking_candidate_set_reuses_the_compiled_lookahead(toy):
    belief, cands, budget, weights = toy
    cands = [*cands, bs.Candidate("probe", "diagnosis", "data", observes="dr_wide",
                                  outcome=bs.GaussianOutcome(0.02), repeatable=False)]
    bs.decide(belief, cands, budget, weights, cvu_samples=32)
    before = la._lookahead_jit._cache_size()
    d1 = bs.decide(belief, cands, budget, weights, cvu_samples=32, done=["probe"], seed=1)
    d2 = bs.decide(belief, cands[1:], budget, weights, cvu_samples=32, seed=2)  # fewer candidates, same bucket
    assert la._lookahead_jit._cache_size() == before
    assert not d1.table.loc["probe", "feasible"] and "si_refit" not in d2.table.index


def test_outcomes_are_chunked_and_agree_across_chunk_sizes(toy):
    belief, cands, budget, weights = toy
    cands = [*cands, bs.Candidate("probe", "diagnosis", "data", observes="dr_wide",
                                  outcome=bs.GaussianOutcome(0.02))]
    small = bs.decide(belief, cands, budget, weights, cvu_samples=32, chunk_bytes=2**16)
    big = bs.decide(belief, cands, budget, weights, cvu_samples=32)  # default: 16 outcomes per chunk
    np.testing.assert_allclose(small.table["CVU"], big.table["CVU"], atol=1e-6)
    assert la.chunk_outcomes(32, 8, 2000, 2**16) == 1 and la.chunk_outcomes(32, 8, 2000, 2**24) == 32
    assert la.chunk_outcomes(30, 8, 2000, 2**20) == 15  # a divisor: no remainder body to compile
