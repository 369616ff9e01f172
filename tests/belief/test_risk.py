"""Execution and deployment risk bounds, against exact references and by simulation."""

import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from bayes_s2r.belief.risk import (
    RiskPrior,
    _group_grid,
    beta_mixture_quantile,
    clopper_pearson_ucb,
    fit_deploy_risk,
    fit_exec_risk,
)
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import DeploymentEval
from bayes_s2r.evidence.records import ExecutionOutcome as E
from bayes_s2r.vocab import Candidate


def _cand(name, method, robot=True):
    return Candidate(name, "adaptation", "data", method=method, touches_robot=robot)


def _reference_ucb(x, n, delta):
    """Independent: solve P(Binomial(n, p) <= x) = δ for p."""
    if x == n:
        return 1.0
    return optimize.brentq(lambda p: stats.binom.cdf(x, n, p) - delta, 0.0, 1.0, xtol=1e-14)


@pytest.mark.parametrize("delta", [0.01, 0.05, 0.2])
def test_clopper_pearson_matches_root_of_binomial_cdf(delta):
    for n in (0, 1, 2, 5, 17, 60, 250):
        for x in sorted({0, 1, n // 3, n // 2, n - 1, n} & set(range(n + 1))):
            assert clopper_pearson_ucb(x, n, delta) == pytest.approx(
                _reference_ucb(x, n, delta), abs=1e-9), (x, n, delta)


def test_clopper_pearson_accepts_numpy_integers():
    assert clopper_pearson_ucb(np.int64(2), np.int32(40), 0.05) == pytest.approx(
        _reference_ucb(2, 40, 0.05), abs=1e-9)


@pytest.mark.parametrize("p,n,delta", [(0.01, 60, 0.05), (0.05, 20, 0.05), (0.2, 40, 0.1),
                                       (0.5, 9, 0.05)])
def test_clopper_pearson_coverage_by_simulation(p, n, delta):
    ucb = np.array([clopper_pearson_ucb(x, n, delta) for x in range(n + 1)])
    x = np.random.default_rng(0).binomial(n, p, size=20000)
    covered = float(np.mean(ucb[x] >= p))
    se = math.sqrt(delta * (1 - delta) / x.size)
    assert covered >= 1 - delta - 3 * se
    exact = float(stats.binom.pmf(np.arange(n + 1), n, p) @ (ucb >= p))
    assert exact >= 1 - delta


@pytest.mark.parametrize("n,delta", [(10, 0.05), (40, 0.1)])
def test_clopper_pearson_coverage_is_exact_not_trivial(n, delta):
    """Over all p the coverage never drops below 1 − δ, and comes close to it."""
    ucb = np.array([clopper_pearson_ucb(x, n, delta) for x in range(n + 1)])
    ps = np.linspace(0.001, 0.999, 1999)
    cover = np.array([stats.binom.pmf(np.arange(n + 1), n, p) @ (ucb >= p) for p in ps])
    assert cover.min() >= 1 - delta - 1e-12
    assert cover.min() < 1 - delta + 0.01


def test_clopper_pearson_bad_input():
    for args, field in [((3, 2, 0.05), "unsafe"), ((-1, 2, 0.05), "unsafe"),
                        ((1.5, 2, 0.05), "unsafe"), ((1, "2", 0.05), "executions"),
                        ((1, 2, 0.0), "delta"), ((1, 2, 1.0), "delta"), ((1, 2, True), "delta")]:
        with pytest.raises(InputError, match=field):
            clopper_pearson_ucb(*args)


def test_beta_mixture_quantile_single_component():
    q = beta_mixture_quantile(np.ones(1), np.array([2.5]), np.array([40.0]), 0.95)
    assert q == pytest.approx(stats.beta.ppf(0.95, 2.5, 40.0), abs=1e-12)


@pytest.mark.parametrize("bound", ["clopper-pearson", "posterior"])
def test_zero_executions_anywhere_is_not_safe(bound):
    cands = [_cand("ft", "FT"), _cand("si", None), _cand("dr", "DR", robot=False)]
    rb = fit_exec_risk([], cands, bound)
    assert rb.ucb("ft", 0.05) > 0.05 and rb.ucb("si", 0.05) > 0.05
    assert rb.ucb("dr", 0.05) == 0.0
    table = rb.table(0.05)
    assert table.loc["ft", "bound"] == "pooled-prior" and table.loc["dr", "bound"] == "not-robot"


def test_unrun_candidate_bounded_by_its_pooled_prior():
    cands = [_cand(f"ft{i}", "FT") for i in range(4)] + [_cand("ft_new", "FT")]
    ev = [E(f"ft{i}", 150, 0) for i in range(4)]
    rb = fit_exec_risk(ev, cands)
    new = rb.ucb("ft_new", 0.05)
    assert rb.ucb("ft0", 0.05) == pytest.approx(_reference_ucb(0, 150, 0.05), abs=1e-9)
    assert rb.ucb("ft0", 0.05) < new < 0.5          # informed by siblings, yet not their bound
    w, a, b = rb.mixtures["ft_new"]
    assert new == pytest.approx(beta_mixture_quantile(w, a, b, 0.95))


def test_pooling_shrinks_a_data_poor_candidate_toward_its_group():
    group = [E(f"ft{i}", 200, k) for i, k in enumerate((1, 2, 0, 3))]
    cands = [_cand(f"ft{i}", "FT") for i in range(4)] + [_cand("poor", "FT"), _cand("alone", "X")]
    rb = fit_exec_risk(group + [E("poor", 4, 2), E("alone", 4, 2)], cands, "posterior")
    group_rate, raw = 6 / 800, 0.5
    # between the group and its own rate, well toward the group; alone it stays at its rate
    assert group_rate < rb.pooled_mean("poor") < 0.6 * raw
    assert rb.pooled_mean("alone") == pytest.approx(raw, abs=0.02)
    assert rb.ucb("poor", 0.05) < rb.ucb("alone", 0.05)
    assert rb.pooled_mean("ft1") == pytest.approx(2 / 200, abs=0.004)   # data-rich: little change


def test_quadrature_matches_importance_sampling_reference():
    prior = RiskPrior()
    n, y = np.array([20.0, 15.0, 10.0, 0.0]), np.array([1.0, 0.0, 2.0, 0.0])
    cands = [_cand(f"m{i}", "FT") for i in range(4)]
    rb = fit_exec_risk([E(f"m{i}", int(n[i]), int(y[i])) for i in range(3)], cands, "posterior")
    rng = np.random.default_rng(1)
    mu = rng.beta(prior.mu_a, prior.mu_b, 100_000)
    kappa = np.exp(rng.normal(prior.log_kappa_loc, prior.log_kappa_sd, mu.size))
    a, b = mu * kappa, (1 - mu) * kappa
    logw = (special.betaln(a[:, None] + y, b[:, None] + n - y) - special.betaln(a, b)[:, None]).sum(1)
    w = np.exp(logw - logw.max())
    for i in range(4):
        ai, bi = a + y[i], b + n[i] - y[i]
        ref_mean = float(w @ (ai / (ai + bi)) / w.sum())
        assert rb.pooled_mean(f"m{i}") == pytest.approx(ref_mean, rel=0.02)
        ref_q = beta_mixture_quantile(w, ai, bi, 0.9)
        assert rb.ucb(f"m{i}", 0.1) == pytest.approx(ref_q, rel=0.03)


def test_risk_model_log_density_is_the_quadrature_target():
    from numpyro.infer.util import log_density

    from bayes_s2r.models.risk import exec_risk_model

    n, y = np.array([30, 12]), np.array([2, 0])
    prior = RiskPrior()
    points = [(0.05, 1.0), (0.3, 3.0), (0.01, 5.0)]
    ld = [float(log_density(exec_risk_model, (np.zeros(2, np.int32), n, y, 1, prior), {},
                            {"risk_mu": np.array([m]), "risk_log_kappa": np.array([k])})[0])
          for m, k in points]
    ref = []
    for m, k in points:
        a, b = m * math.exp(k), (1 - m) * math.exp(k)
        ref.append(stats.beta.logpdf(m, prior.mu_a, prior.mu_b)
                   + stats.norm.logpdf(k, prior.log_kappa_loc, prior.log_kappa_sd)
                   + stats.betabinom.logpmf(y, n, a, b).sum())
    assert np.allclose(np.diff(ld), np.diff(ref), atol=1e-4)
    w, _, _ = _group_grid(n.astype(float), y.astype(float), prior)
    assert w.sum() == pytest.approx(1.0) and w.size > 100


def test_exec_risk_ignores_deployment_and_unknown_records():
    cands = [_cand("ft", "FT"), _cand("sim", "DR", robot=False)]
    ev = [E("ft", 50, 0), E("gone", 10, 10), DeploymentEval("ft", 100, 90, 100),
          E("sim", 10, 5)]
    rb = fit_exec_risk(ev, cands)
    assert rb.executions["ft"] == 50 and rb.unsafe["ft"] == 0 and rb.ignored == ("gone",)
    assert rb.ucb("sim", 0.05) == 0.0 and rb.pooled_mean("sim") == 0.0
    cols = list(rb.table(0.05).columns)
    for c in ("executions", "unsafe", "rate", "ucb", "touches_robot", "bound"):
        assert c in cols


def test_deployment_risk_is_kept_apart_from_execution_risk():
    ev = [E("pi_1", 500, 0), DeploymentEval("pi_1", 100, 90, 3), DeploymentEval("pi_1", 100, 95, 1),
          DeploymentEval("pi_0", 100, 50, 40)]
    r = fit_deploy_risk(ev, "pi_1")
    assert (r.episodes, r.unsafe) == (200, 4)
    assert r.ucb(0.05) == pytest.approx(_reference_ucb(4, 200, 0.05), abs=1e-9)
    assert r.passes(0.05, 0.05) and not r.passes(0.03, 0.05)
    post = fit_deploy_risk(ev, "pi_1", "posterior", prior=(0.5, 0.5))
    assert post.ucb(0.05) == pytest.approx(stats.beta.ppf(0.95, 4.5, 196.5))
    none = fit_deploy_risk([E("pi_2", 1000, 0)], "pi_2")
    assert none.episodes == 0 and none.ucb(0.05) == 1.0 and not none.passes(0.05, 0.05)
    assert not fit_deploy_risk([], "pi_2", "posterior").passes(0.05, 0.05)


def test_bad_input_names_the_field():
    cands = [_cand("ft", "FT")]
    cases = [
        (lambda: fit_exec_risk([], cands, "hoeffding"), "bound"),
        (lambda: fit_exec_risk([], cands, method="mle"), "method"),
        (lambda: fit_exec_risk([], []), "candidates"),
        (lambda: fit_exec_risk(None, cands), "evidence"),
        (lambda: fit_exec_risk([42], cands), r"evidence\[0\]"),
        (lambda: fit_exec_risk([], cands, prior=RiskPrior(mu_a=0.0)), "prior.mu_a"),
        (lambda: fit_exec_risk([], cands).ucb("nope", 0.05), "candidate"),
        (lambda: fit_exec_risk([], cands).ucb("ft", 1.5), "delta"),
        (lambda: fit_deploy_risk([], ""), "policy"),
        (lambda: fit_deploy_risk([], "pi", "exact"), "bound"),
        (lambda: fit_deploy_risk([], "pi", prior=(1.0, -1.0)), "prior"),
        (lambda: fit_deploy_risk([], "pi").passes(1.5, 0.05), "alpha_deploy"),
    ]
    for call, field in cases:
        with pytest.raises(InputError, match=field):
            call()


def test_reads_a_ledger(tmp_path):
    from bayes_s2r.evidence.ledger import Ledger

    cands = [_cand("ft", "FT")]
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.add_many([E("ft", 40, 1), E("ft", 20, 0, round=1), DeploymentEval("pi", 50, 45, 0)])
        rb = fit_exec_risk(ledger, cands)
        dr = fit_deploy_risk(ledger, "pi")
    assert (rb.executions["ft"], rb.unsafe["ft"]) == (60, 1)
    assert rb.ucb("ft", 0.05) == pytest.approx(_reference_ucb(1, 60, 0.05), abs=1e-9)
    assert (dr.episodes, dr.unsafe) == (50, 0)
