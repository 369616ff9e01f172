"""Benchmark of the decision engine's Monte-Carlo look-ahead and of a whole `decide()`.

Measured in one run, on the same problem:
- the compiled look-ahead (all candidates × outcomes × draws, one jitted computation),
- a straightforward reference: a Python loop over candidates and outcomes with NumPy and
  SciPy inside (`reference_cvu`, also used by the tests as an independent check),
- the floor: the bare matrix product any reweighting must do, einsum of weights
  [M, K, S] with draws [S, M] (jitted, same shapes),
- a whole warm `decide()` and its first (compiling) call,
- how time and compiled temporary memory grow with candidates, draws and outcomes.

Prints one JSON object {"benchmark": "decide", "machine", "settings", "results"}.
Defaults are small (a smoke run); `--full` runs 32 candidates, 4,000 draws, 256 outcomes
and the scaling rows.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sys
import time

import numpy as np
from scipy import stats


def reference_cvu(problem, y: np.ndarray, *, collapse_ess: float, utility_kappa: float = 0.0,
                  transition: str = "headroom", max_ratio: float = 2.0, adopt: bool = False,
                  repeat_share: float = 1.0) -> dict:
    """CVU by a Python loop over candidates and outcomes, NumPy/SciPy inside (float64).

    Args:
        problem: a `bayes_s2r.decision.problem.Problem`.
        y: simulated outcomes [K, M] (e.g. from `draw_outcomes`, so both see the same Y).
        collapse_ess: ESS below which the moment-matched Gaussian update is used.
        utility_kappa: decision functional mean + κ·sd (0: the mean).
        adopt: decision functional E[gain · P(adopt | gain)] (overrides `utility_kappa`), the
            chance that each candidate's own evaluation comes out above 0: over the
            (weighted) draws, or of a Gaussian with the moments where the weights collapsed;
            after a move, the Gaussian form of the moved moments times exact/Gaussian before it.
        transition: "headroom" (the default rule) or "none".
        repeat_share: share of m's own transformed gain a repeat of m brings (the rules'
            `repeat_share`, default 1).

    Returns:
        dict with cvu, cvu_se, ess [M] and g0_null.
    """
    d = problem.draws
    m_count, k = problem.size, y.shape[0]
    gains = np.zeros((d.shape[0], m_count))
    adapt = problem.gain_col >= 0
    gains[:, adapt] = d[:, problem.gain_col[adapt]]

    # the evaluation of each column's candidate: P(its evaluation keeps it | gain) and its sd near 0
    kinds, eps_n, base = problem.kind, np.maximum(problem.a, 1.0), problem.b

    def keep_prob(g):
        p1 = np.clip(base + g, 0.0, 1.0)
        sd_b = np.sqrt((p1 * (1 - p1) + base * (1 - base)) / eps_n)
        binom = np.where(sd_b > 0, stats.norm.cdf((g - 0.5 / eps_n) / np.where(sd_b > 0, sd_b, 1.0)), g > 0.5 / eps_n)
        gauss = stats.norm.cdf(g / np.where(kinds == 1, problem.a, 1.0))
        return np.where(kinds == 2, binom, np.where(kinds == 1, gauss, g > 0))

    noise = np.where(kinds == 2, np.sqrt(2 * base * (1 - base) / eps_n), np.where(kinds == 1, problem.a, 0.0))

    def moment_form(mean, var):
        sd = np.sqrt(np.maximum(var, 0.0))
        if adopt:  # E[X·Φ(X/σ_e)] for X ~ N(mean, var)
            s = np.sqrt(var + noise**2)
            z = mean / np.where(s > 0, s, 1.0)
            return np.where(s > 0, mean * stats.norm.cdf(z) + var / np.where(s > 0, s, 1.0) * stats.norm.pdf(z),
                            np.maximum(mean, 0.0))
        return mean + utility_kappa * sd

    def g0(util, cost, feas):
        return max([0.0] + [util[c] - cost[c] for c in range(m_count) if feas[c]])

    mu0, var0 = gains.mean(0), gains.var(0)
    kept = gains * keep_prob(gains)
    g_null = g0(kept.mean(0) if adopt else moment_form(mu0, var0), problem.c_lambda,
                problem.feasible)
    cvu, se, ess_out = np.zeros(m_count), np.zeros(m_count), np.zeros(m_count)
    for m in range(m_count):
        kind, a, b = problem.kind[m], problem.a[m], problem.b[m]
        theta = d[:, problem.obs_col[m]] * problem.obs_sign[m] if problem.obs_col[m] >= 0 else None
        vals, esses = [], []
        for j in range(k):
            yj = y[j, m]
            if kind == 1 and theta is not None:
                ll = stats.norm.logpdf(yj, theta, a)
            elif kind == 2 and theta is not None:
                ll = stats.binom.logpmf(yj, a, np.clip(b + theta, 1e-6, 1 - 1e-6))
            else:
                ll = np.zeros(d.shape[0])
            w = np.exp(ll - ll.max())
            w /= w.sum()
            ess = 1.0 / np.sum(w**2)
            mean = w @ gains
            var = w @ (gains - mean) ** 2
            exact = w @ kept
            if ess < collapse_ess and kind in (1, 2) and theta is not None:
                if kind == 1:
                    t_hat, r = yj, a**2
                else:
                    p_hat = np.clip((yj + 0.5) / (a + 1.0), 1e-3, 1 - 1e-3)
                    t_hat, r = p_hat - b, p_hat * (1 - p_hat) / a
                cov = np.array([np.cov(theta, gains[:, c], bias=True)[0, 1] for c in range(m_count)])
                denom = theta.var() + r
                mean = mu0 + cov * (t_hat - theta.mean()) / denom
                var = var0 - cov**2 / denom
                exact = moment_form(mean, var)
            util = exact if adopt else moment_form(mean, var)
            # with "adopt", the policy changes only when the evaluation shows an improvement
            improved = (yj > 0) if kind == 1 else (yj > b * a + 1e-3) if kind == 2 else False
            if problem.is_adapt[m] and (improved or not adopt):
                before = moment_form(mean, var)
                if transition == "headroom":
                    j_now = problem.j_now
                    ratio = np.clip((1 - (j_now + mean[m])) / max(1 - j_now, 1e-6), 0.0, max_ratio)
                    mean, var = mean * ratio, var * ratio**2
                mean[m] *= repeat_share
                var[m] *= repeat_share**2
                util = moment_form(mean, var)
                if adopt:
                    util = util * np.where(before > 1e-12, exact / np.maximum(before, 1e-12), 1.0)
            vals.append(g0(util, problem.cost_next[m], problem.feas_next[m]))
            esses.append(ess)
        vals = np.array(vals)
        cvu[m] = vals.mean() - g_null
        se[m] = vals.std(ddof=1) / math.sqrt(k)
        ess_out[m] = np.mean(esses)
    return {"cvu": cvu, "cvu_se": se, "ess": ess_out, "g0_null": g_null}


def make_problem_inputs(num_candidates: int, num_draws: int, seed: int = 0):
    """A mixed candidate set: adaptations (Gaussian/binomial outcomes), diagnoses, model updates.

    Gains are correlated through a few sensitivity directions, whose draws are extra
    "sensitivity:<k>" columns that some diagnoses observe.
    """
    import bayes_s2r as bs

    rng = np.random.default_rng(seed)
    n_adapt = max(1, num_candidates // 2)
    n_dir = 3
    sens = 0.15 + 0.05 * rng.standard_normal((num_draws, n_dir))
    load = rng.uniform(0.0, 0.5, (n_dir, n_adapt))
    gains = sens @ load - 0.05 + 0.04 * rng.standard_normal((num_draws, n_adapt))
    names = [f"a{i}" for i in range(n_adapt)]
    dirs = [f"d{k}" for k in range(n_dir)]
    draws = np.concatenate([gains, sens], axis=1)
    # independent draws by construction: no MCMC diagnostics to run
    iid = {"ok": True, "reason": None, "rhat_max": 1.0, "ess_min": float(num_draws), "divergences": 0}
    belief = bs.GainBelief(names + [f"sensitivity:{k}" for k in dirs], draws, diagnostics=iid)
    cands = []
    for i, n in enumerate(names):
        out = bs.GaussianOutcome(0.05) if i % 2 else bs.BinomialPairedOutcome(episodes=40)
        cands.append(bs.Candidate(n, "adaptation", "data", cost=bs.Cost(compute=rng.uniform(0, 0.3),
                                  eng=rng.uniform(0, 0.02)), outcome=out, targets=dirs[i % n_dir]))
    i = 0
    while len(cands) < num_candidates:
        if i % 4 == 3:
            cands.append(bs.Candidate(f"mu{i}", "model_update", "model", cost=bs.Cost(eng=0.01)))
        else:
            obs = f"sensitivity:{dirs[i % n_dir]}" if i % 2 else names[i % n_adapt]
            cands.append(bs.Candidate(f"dx{i}", "diagnosis", "data", observes=obs,
                                      cost=bs.Cost(compute=rng.uniform(0, 0.1)),
                                      outcome=bs.GaussianOutcome(0.03 + 0.02 * (i % 3))))
        i += 1
    return belief, cands, bs.Budget(real=10, compute=20, eng=10), bs.ResourceWeights(scarcity=0.5)


def _time(fn, reps: int) -> tuple[float, float]:
    """Best wall-clock and best process CPU seconds over `reps` calls.

    On a shared machine the wall clock includes waiting for other processes; the CPU time
    (all threads of this process) does not, so ratios are reported on both.
    """
    wall, cpu = math.inf, math.inf
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall, cpu


def _machine() -> dict:
    import jax
    import numpy

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    return {"cores": cores, "cpu_count": os.cpu_count(), "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.devices()], "python": platform.python_version(),
            "versions": {"jax": jax.__version__, "numpy": numpy.__version__},
            "platform": platform.platform(), "load_avg": list(os.getloadavg())}


def run_case(m: int, s: int, k: int, *, reps: int, reference: bool, floor: bool, seed: int = 0) -> dict:
    import jax
    import jax.numpy as jnp

    import bayes_s2r as bs
    from bayes_s2r.decision import lookahead as la
    from bayes_s2r.decision.config import DecideConfig
    from bayes_s2r.decision.problem import build_problem
    from bayes_s2r.decision.transition import HeadroomTransition

    belief, cands, budget, weights = make_problem_inputs(m, s, seed)
    cfg = DecideConfig.make(cvu_samples=k, seed=seed)
    prob = build_problem(belief, cands, budget, weights, risk=None, config=cfg, reference=budget,
                         current_J=0.6, done=())
    arrays = la.lookahead_arrays(prob, cfg.bucket)
    rule = HeadroomTransition()
    mb = arrays.gains.shape[1]
    batch = la.chunk_outcomes(k, mb, s, cfg.chunk_bytes)
    args = (jax.random.key(seed), arrays, jnp.float32(prob.j_now), jnp.float32(cfg.collapse_ess))
    kw = {"num_outcomes": k, "batch": batch, "block": la.block_outcomes(k, batch), "utility": cfg.functional,
          "rule": rule, "n_cap": la.binomial_cap(prob)}
    t = time.perf_counter()
    compiled = la._lookahead_jit.lower(*args, **kw).compile()
    compile_s = time.perf_counter() - t
    mem = compiled.memory_analysis()
    temp = int(getattr(mem, "temp_size_in_bytes", -1)) if mem is not None else -1
    run = lambda: jax.block_until_ready(compiled(*args))
    run()
    row = {"candidates": m, "padded": mb, "draws": s, "outcomes": k, "chunk": batch,
           "compile_s": compile_s, "temp_bytes": temp}
    row["cvu_s"], row["cvu_cpu_s"] = _time(run, reps)
    row["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cvu = np.asarray(run()[0])[:m]
    if floor:
        w = jax.random.uniform(jax.random.key(1), (m, k, s), jnp.float32)
        dd = jax.random.normal(jax.random.key(2), (s, m), jnp.float32)
        mat = jax.jit(lambda w, d: jnp.einsum("mks,sp->mkp", w, d))
        jax.block_until_ready(mat(w, dd))
        row["floor_matmul_s"], row["floor_matmul_cpu_s"] = _time(lambda: jax.block_until_ready(mat(w, dd)), reps)
        row["cvu_over_floor"] = row["cvu_s"] / row["floor_matmul_s"]
        row["cvu_over_floor_cpu"] = row["cvu_cpu_s"] / row["floor_matmul_cpu_s"]
        del w
    if reference:
        _, y = la.draw_outcomes(jax.random.key(seed), arrays, k, la.binomial_cap(prob))
        t, c = time.perf_counter(), time.process_time()
        ref = reference_cvu(prob, np.asarray(y, np.float64)[:, :m], collapse_ess=cfg.collapse_ess)
        row["reference_s"], row["reference_cpu_s"] = time.perf_counter() - t, time.process_time() - c
        row["speedup_vs_reference"] = row["reference_s"] / row["cvu_s"]
        row["speedup_vs_reference_cpu"] = row["reference_cpu_s"] / row["cvu_cpu_s"]
        row["max_abs_diff_vs_reference"] = float(np.max(np.abs(ref["cvu"] - cvu)))
        row["max_cvu_se"] = float(np.max(ref["cvu_se"]))
    if reference or floor:
        t = time.perf_counter()
        d = bs.decide(belief, cands, budget, weights, cvu_samples=k, seed=seed + 1, reference=budget,
                      current_J=0.6)
        row["decide_first_call_s"] = time.perf_counter() - t
        row["decide_warm_s"], row["decide_warm_cpu_s"] = _time(
            lambda: bs.decide(belief, cands, budget, weights, cvu_samples=k, seed=seed + 1,
                              reference=budget, current_J=0.6), reps)
        row["ess_mean_frac"] = float(np.mean(d.table["ess"]) / s)
        row["ess_min_frac"] = float(np.min(d.table["ess_min"]) / s)
        row["best"] = d.best
    return row


def two_step_case(m: int, s: int, k: int, inner: int, inner_draws: int, *, reps: int, seed: int = 0) -> dict:
    """Warm `decide()` with `lookahead_depth=2` next to the one-step call on the same problem."""
    import bayes_s2r as bs

    belief, cands, budget, weights = make_problem_inputs(m, s, seed)
    kw = {"cvu_samples": k, "seed": seed + 1, "reference": budget, "current_J": 0.6}
    two = {"lookahead_depth": 2, "inner_samples": inner, "inner_draws": inner_draws}
    t = time.perf_counter()
    d = bs.decide(belief, cands, budget, weights, **kw, **two)
    row = {"candidates": m, "draws": s, "outcomes": k, "inner_samples": inner, "inner_draws": inner_draws,
           "decide_first_call_s": time.perf_counter() - t, "best": d.best,
           "best_one_step": bs.decide(belief, cands, budget, weights, **kw).best}
    row["decide_warm_s"], row["decide_warm_cpu_s"] = _time(
        lambda: bs.decide(belief, cands, budget, weights, **kw, **two), reps)
    row["one_step_warm_s"], _ = _time(lambda: bs.decide(belief, cands, budget, weights, **kw), reps)
    return row


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--candidates", type=int, default=8)
    p.add_argument("--draws", type=int, default=400)
    p.add_argument("--outcomes", type=int, default=32)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--full", action="store_true", help="32 × 4,000 × 256 and the scaling rows")
    p.add_argument("--out", type=str, default=None)
    a = p.parse_args(argv)
    if a.full:
        a.candidates, a.draws, a.outcomes, a.reps = 32, 4000, 256, max(a.reps, 5)
    results = [dict(case="main", **run_case(a.candidates, a.draws, a.outcomes, reps=a.reps,
                                             reference=True, floor=True))]
    if a.full:
        grid = [(8, 4000, 256), (16, 4000, 256), (64, 4000, 256), (32, 1000, 256), (32, 16000, 256),
                (32, 4000, 64), (32, 4000, 1024), (32, 16000, 1024)]
    else:
        grid = [(a.candidates * 2, a.draws, a.outcomes)]
    for m, s, k in grid:
        results.append(dict(case="scaling", **run_case(m, s, k, reps=max(1, a.reps // 2),
                                                       reference=False, floor=False)))
    # the two-step look-ahead at the allocation benchmark's scale (8 candidates, 64 outcomes)
    shape = (8, 4000, 64, 32, 512) if a.full else (a.candidates, a.draws, 4, 4, 64)
    results.append(dict(case="two_step", **two_step_case(*shape, reps=max(1, a.reps // 2))))
    out = {"benchmark": "decide", "machine": _machine(),
           "settings": {"candidates": a.candidates, "draws": a.draws, "outcomes": a.outcomes,
                        "reps": a.reps, "full": a.full, "timing": "best of reps, warm"},
           "results": results}
    text = json.dumps(out, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return out


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
