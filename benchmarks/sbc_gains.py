"""Simulation-based calibration of the gains model (Talts et al. 2018).

Draw many synthetic datasets from the model's own prior (gains, then paired binomial
counts for a fixed design), fit each with the NUTS driver of `fit_gains`, and check that the
posterior is calibrated: central 90 % intervals should cover the true gains about 90 % of
the time, and the rank of each true gain among (thinned) posterior draws should be uniform.

The design (candidates, groups, batches, episodes per candidate) is the same for every
dataset, so every fit has the same shapes and reuses one compiled sampler.

Prints one JSON object {"benchmark": "sbc_gains", "machine", "settings", "results"};
`--out` writes it to a file too. The suite runs a reduced version
(tests/belief/test_sbc.py) through `run_sbc`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import NamedTuple


class SBCResult(NamedTuple):
    """What `run_sbc` returns.

    Attributes:
        covered: bool [datasets, candidates], true gain inside the central interval.
        ranks: int [datasets, candidates], rank of the true gain among `num_ranked` draws.
        num_ranked: draws each rank is taken among (ranks lie in 0..num_ranked).
        divergences: int [datasets].
        episodes: episodes per arm of each candidate (0: no evidence of its own).
        names: candidate names.
        traces: NUTS samplers built during the run (1 when the sampler compiled once).
        seconds: wall time of the fits (prior draws and compile included).
    """

    covered: object
    ranks: object
    num_ranked: int
    divergences: object
    episodes: tuple
    names: tuple
    traces: int
    seconds: float


def design(num_methods: int = 2, lenses: int = 2, per_group: int = 4,
           episodes: tuple = (0, 10, 40, 160)):
    """Candidates in `num_methods` × `lenses` groups, `per_group` each with batches 1, 2, …,
    and episodes per arm cycling through `episodes` (0: no evidence of its own)."""
    from bayes_s2r import Candidate

    methods = ("DR", "SI", "DA", "FT")[:num_methods]
    lens_names = ("data", "model", "representation", "optimization")[:lenses]
    cands, eps = [], []
    for h in methods:
        for lens in lens_names:
            for j in range(per_group):
                cands.append(Candidate(f"{h}-{lens}-{j}", "adaptation", lens, method=h,
                                       batch=float(1 + j % 3)))
                eps.append(int(episodes[len(eps) % len(episodes)]))
    return cands, tuple(eps)


def _records(cands, eps, treated, control_total: int):
    """PairedEval rows giving these sufficient statistics (control successes spread over rows)."""
    from bayes_s2r import PairedEval

    out, left = [], int(control_total)
    for c, n, s in zip(cands, eps, treated):
        if n == 0:
            continue
        sc = min(n, left)
        left -= sc
        out.append(PairedEval(c.name, int(s), n, sc, n))
    return out


def prior_draws(rng_key, cands, eps, num: int, prior=None):
    """`num` datasets from the model's prior: (true gains [num, C], treated successes [num, C],
    control successes [num])."""
    import jax
    import numpy as np
    from numpyro.infer import Predictive

    from bayes_s2r.belief.data import prepare_gains
    from bayes_s2r.models.gains import gains_model

    template = prepare_gains(_records(cands, eps, [0] * len(cands), 0), cands, prior=prior)
    data = template.data._replace(treated_successes=None, control_successes=None,
                                  cand_est=None, cand_info=None)
    pred = Predictive(lambda d: gains_model(d, template.spec), num_samples=num,
                      return_sites=["gain", "treated", "control"])
    out = jax.device_get(jax.jit(pred)(rng_key, data))
    cells = len(template.observed["cell_candidate"])
    cell_cand = np.asarray(template.data.cell_cand)[:cells]
    treated = np.zeros((num, len(cands)), np.int64)
    treated[:, cell_cand] = np.asarray(out["treated"])[:, :cells]
    control = np.asarray(out["control"])[:, 0].astype(np.int64)
    return np.asarray(out["gain"], np.float64), treated, control


def run_sbc(num_datasets: int, *, seed: int = 0, cands=None, eps=None, num_warmup: int = 300,
            num_samples: int = 300, num_chains: int = 1, thin: int = 2, interval: float = 0.9,
            prior=None) -> SBCResult:
    """Simulation-based calibration: prior draw → data → NUTS fit, `num_datasets` times."""
    import jax
    import numpy as np

    from bayes_s2r.belief import fit as fit_module
    from bayes_s2r.belief.data import prepare_gains

    if cands is None:
        cands, eps = design()
    t0 = time.perf_counter()
    before = fit_module._nuts_compiled.cache_info().misses
    truth, treated, control = prior_draws(jax.random.key(seed), cands, eps, num_datasets, prior)
    chain_method = "parallel" if num_chains > 1 and jax.local_device_count() >= num_chains else "sequential"
    lo, hi = (1 - interval) / 2, (1 + interval) / 2
    covered = np.zeros(truth.shape, bool)
    ranks = np.zeros(truth.shape, np.int64)
    div = np.zeros(num_datasets, np.int64)
    ranked = 0
    for k in range(num_datasets):
        prep = prepare_gains(_records(cands, eps, treated[k], control[k]), cands, prior=prior)
        run = fit_module.nuts_runner(prep, num_warmup=num_warmup, num_samples=num_samples,
                                     num_chains=num_chains, chain_method=chain_method,
                                     target_accept=0.9)
        sites, stats = jax.device_get(run(jax.random.split(jax.random.key(seed + 1 + k), num_chains)))
        g = np.asarray(sites["gain"], np.float64)               # [chains, draws, C]
        flat = g.reshape(-1, g.shape[-1])
        q = np.quantile(flat, [lo, hi], axis=0)
        covered[k] = (q[0] <= truth[k]) & (truth[k] <= q[1])
        thinned = g[:, ::thin].reshape(-1, g.shape[-1])
        ranked = thinned.shape[0]
        ranks[k] = np.sum(thinned < truth[k], axis=0)
        div[k] = int(np.sum(stats["diverging"]))
    return SBCResult(covered, ranks, ranked, div, tuple(eps), tuple(c.name for c in cands),
                     fit_module._nuts_compiled.cache_info().misses - before, time.perf_counter() - t0)


def coverage_band(n: int, level: float = 0.9, alpha: float = 1e-3, design_effect: float = 2.0):
    """Two-sided acceptance band for the coverage of `n` intervals of nominal `level`.

    Binomial quantiles at alpha/2 and 1 − alpha/2 for n / design_effect effective intervals
    (intervals of one dataset share its hyperparameters, so they are not independent).
    """
    from scipy import stats

    n_eff = max(1, int(n / design_effect))
    return (stats.binom.ppf(alpha / 2, n_eff, level) / n_eff,
            stats.binom.ppf(1 - alpha / 2, n_eff, level) / n_eff)


def rank_uniformity(ranks, num_ranked: int, bins: int = 10) -> dict:
    """Chi-square test of uniform ranks over `bins` equal bins of 0..num_ranked."""
    import numpy as np
    from scipy import stats

    u = (np.asarray(ranks).reshape(-1) + 0.5) / (num_ranked + 1)
    counts = np.histogram(u, bins=bins, range=(0, 1))[0]
    chi2, p = stats.chisquare(counts)
    return {"bins": bins, "counts": counts.tolist(), "chi2": float(chi2), "p_value": float(p),
            "mean_normalised_rank": float(u.mean())}


def summarise(res: SBCResult, interval: float = 0.9) -> list[dict]:
    import numpy as np

    n = res.covered.size
    band = coverage_band(n, interval)
    rows = [{"name": "all", "intervals": n, "coverage": float(res.covered.mean()),
             "band": list(band), "rank_test": rank_uniformity(res.ranks, res.num_ranked),
             "divergences": int(np.sum(res.divergences)),
             "datasets_with_divergences": int(np.sum(res.divergences > 0))}]
    for e in sorted(set(res.episodes)):
        cols = [j for j, x in enumerate(res.episodes) if x == e]
        cov = res.covered[:, cols]
        rows.append({"name": f"episodes={e}", "intervals": cov.size, "coverage": float(cov.mean()),
                     "coverage_se": math.sqrt(interval * (1 - interval) / cov.size),
                     "rank_test": rank_uniformity(res.ranks[:, cols], res.num_ranked, bins=5)})
    return rows


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", type=int, default=100)
    p.add_argument("--methods", type=int, default=2)
    p.add_argument("--lenses", type=int, default=2)
    p.add_argument("--per-group", type=int, default=4)
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--samples", type=int, default=500, help="draws per chain")
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--thin", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--prior", type=json.loads, default={},
                   help='JSON object of GainPrior fields, e.g. \'{"candidate_df": 2}\' (default: the library\'s)')
    p.add_argument("--out", default=None, help="also write the JSON to this file")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if "jax" not in sys.modules:   # parallel chains need host devices, set before jax loads
        os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={args.chains}")
    import common

    from bayes_s2r import GainPrior

    cands, eps = design(args.methods, args.lenses, args.per_group)
    res = run_sbc(args.datasets, seed=args.seed, cands=cands, eps=eps, num_warmup=args.warmup,
                  num_samples=args.samples, num_chains=args.chains, thin=args.thin,
                  prior=GainPrior(**args.prior) if args.prior else None)
    settings = {"datasets": args.datasets, "candidates": len(cands), "methods": args.methods,
                "lenses": args.lenses, "episodes_per_arm": list(eps), "num_warmup": args.warmup,
                "num_samples": args.samples, "num_chains": args.chains, "thin": args.thin,
                "interval": 0.9, "seed": args.seed, "wall_s": res.seconds, "traces": res.traces,
                "num_ranked": res.num_ranked, "prior": args.prior}
    return common.emit({"benchmark": "sbc_gains", "machine": common.machine(), "settings": settings,
                        "results": summarise(res)}, args.out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
