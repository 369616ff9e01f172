"""Benchmark of the gains fit: NUTS and SVI on 64 candidates, and how fit time grows with rows.

The problem: `--candidates` adaptation candidates in 4 methods × 2 lenses (8 groups) with
batches 1, 2, 4, 8; a few candidates have no evidence of their own. `--rows` paired trial
rows (one matched treated/control episode pair each, the usual shape of an evaluation log)
are spread over the others, drawn from true gains of about 0–0.2 over a 0.55 control.

Measured in one run:
- NUTS: the first fit (compile included) and a warm refit (another seed, same shapes), with
  min bulk ESS, ESS per second (warm) and max R-hat of the gains and the baseline;
- SVI: the first fit (compile included) and a warm refit, and max |mean_svi − mean_nuts|;
- the same problem with `--big-rows` rows: warm NUTS fit time and its ratio to `--rows`
  (evidence is reduced to sufficient statistics before the fit, so the sampler sees the same
  arrays; what grows is reading the records, timed on its own as `read_evidence_s`, and the
  posterior is sharper).

Every row has wall and process CPU seconds (`cpu_s`, all threads): on a shared machine the
wall time grows with the load average, which `machine.load_avg` records.

Prints one JSON object {"benchmark": "fit", "machine", "settings", "results"}; `--out`
writes it to a file too. Defaults are the issue's sizes and take about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

METHODS = ("SI", "DR", "DA", "FT")
LENSES = {"SI": ("model", "data"), "DR": ("data", "model"), "DA": ("data", "representation"),
          "FT": ("optimization", "data")}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--candidates", type=int, default=64)
    p.add_argument("--rows", type=int, default=5000)
    p.add_argument("--big-rows", type=int, default=500_000,
                   help="rows of the second problem (0: skip the scaling row)")
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--samples", type=int, default=500, help="draws per chain")
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--svi-steps", type=int, default=3000)
    p.add_argument("--devices", type=int, default=None,
                   help="host devices for parallel chains (default: --chains)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="also write the JSON to this file")
    return p.parse_args(argv)


def make_candidates(num: int):
    """`num` adaptation candidates over 4 methods × 2 lenses with batches 1, 2, 4, 8."""
    from bayes_s2r import Candidate

    out = []
    for i in range(num):
        method = METHODS[i % 4]
        lens = LENSES[method][(i // 4) % 2]
        batch = float(2 ** ((i // 8) % 4))
        out.append(Candidate(f"c{i:03d}", "adaptation", lens, method=method, batch=batch))
    return out


def true_gains(rng, candidates, control: float = 0.55):
    """Success probabilities of each candidate: a group effect, saturating in batch, plus noise."""
    import numpy as np

    groups = sorted({(c.method, c.lens) for c in candidates})
    effect = dict(zip(groups, rng.normal(0.35, 0.25, len(groups))))
    logit_c = np.log(control / (1 - control))
    p = []
    for c in candidates:
        b = c.batch / 3.0                      # batch over its method's median batch
        f = b * 2.0 / (b + 1.0)                # saturating, f(1) = 1
        delta = effect[(c.method, c.lens)] * f + rng.normal(0.0, 0.1)
        p.append(1.0 / (1.0 + np.exp(-(logit_c + delta))))
    return np.array(p)


def make_rows(rng, candidates, p_treated, rows: int, control: float = 0.55, unseen: int = 4):
    """`rows` PairedEval rows of one matched episode pair each; the last `unseen` candidates get none."""

    from bayes_s2r import PairedEval

    seen = len(candidates) - unseen
    who = rng.integers(0, seen, rows)
    st = rng.random(rows) < p_treated[who]
    sc = rng.random(rows) < control
    names = [c.name for c in candidates]
    return [PairedEval(names[w], int(a), 1, int(b), 1) for w, a, b in zip(who, st, sc)]


_CPU = {}


def _timed(fn):
    """(fn(), wall seconds); the process CPU seconds of the call are kept in _CPU["last"]."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    _CPU["last"] = time.process_time() - c0
    return out, time.perf_counter() - t0


def run(args) -> dict:
    import common
    import numpy as np

    from bayes_s2r import fit_gains

    rng = np.random.default_rng(args.seed)
    cands = make_candidates(args.candidates)
    p = true_gains(rng, cands)
    rows, t_rows = _timed(lambda: make_rows(rng, cands, p, args.rows))
    nuts = {"num_warmup": args.warmup, "num_samples": args.samples, "num_chains": args.chains}

    from bayes_s2r.belief.data import prepare_gains

    first, t_first = _timed(lambda: fit_gains(rows, cands, seed=args.seed, **nuts))
    cpu_first = _CPU["last"]
    warm, t_warm = _timed(lambda: fit_gains(rows, cands, seed=args.seed + 1, **nuts))
    cpu_warm = _CPU["last"]
    _, t_read = _timed(lambda: prepare_gains(rows, cands))
    results = []
    for label, b, t, cpu in (("nuts_first", first, t_first, cpu_first),
                             ("nuts_warm", warm, t_warm, cpu_warm)):
        d = b.diagnostics
        results.append({
            "name": label, "rows": args.rows, "candidates": args.candidates, "wall_s": t,
            "cpu_s": cpu, "read_evidence_s": t_read,
            "compile_included": label == "nuts_first", "ess_bulk_min": d["ess_bulk_min"],
            "ess_tail_min": d["ess_tail_min"], "ess_per_s": d["ess_bulk_min"] / t,
            "rhat_max": d["rhat_max"], "divergences": d["divergences"], "ok": bool(d["ok"]),
            "chain_method": d["chain_method"],
        })

    svi_kw = {"svi_steps": args.svi_steps, "num_samples": args.samples, "num_chains": args.chains}
    s_first, t_sfirst = _timed(lambda: fit_gains(rows, cands, method="svi", seed=args.seed, **svi_kw))
    cpu_sfirst = _CPU["last"]
    s_warm, t_swarm = _timed(lambda: fit_gains(rows, cands, method="svi", seed=args.seed + 1, **svi_kw))
    cpu_swarm = _CPU["last"]
    ref = (first.mean() + warm.mean()) / 2
    for label, b, t, cpu in (("svi_first", s_first, t_sfirst, cpu_sfirst),
                             ("svi_warm", s_warm, t_swarm, cpu_swarm)):
        diff = (b.mean() - ref).abs()
        results.append({
            "name": label, "rows": args.rows, "candidates": args.candidates, "wall_s": t,
            "cpu_s": cpu,
            "compile_included": label == "svi_first", "max_abs_mean_diff_vs_nuts": float(diff.max()),
            "worst_candidate": str(diff.idxmax()), "elbo_converged": bool(b.diagnostics["converged"]),
            "guide": b.diagnostics["guide"],
        })

    if args.big_rows:
        big, t_big_rows = _timed(lambda: make_rows(rng, cands, p, args.big_rows))
        b_big, t_big = _timed(lambda: fit_gains(big, cands, seed=args.seed + 1, **nuts))
        cpu_big = _CPU["last"]
        _, t_read_big = _timed(lambda: prepare_gains(big, cands))
        d = b_big.diagnostics
        results.append({
            "name": "nuts_warm_big", "rows": args.big_rows, "candidates": args.candidates,
            "wall_s": t_big, "cpu_s": cpu_big, "read_evidence_s": t_read_big,
            "compile_included": False, "ess_bulk_min": d["ess_bulk_min"],
            "ess_per_s": d["ess_bulk_min"] / t_big, "rhat_max": d["rhat_max"],
            "divergences": d["divergences"], "ok": bool(d["ok"]),
            "ratio_vs_rows": t_big / t_warm,
            "ratio_vs_rows_after_reading": (t_big - t_read_big) / max(t_warm - t_read, 1e-9),
            "make_rows_s": t_big_rows,
        })

    settings = {"candidates": args.candidates, "rows": args.rows, "big_rows": args.big_rows,
                "num_warmup": args.warmup, "num_samples": args.samples, "num_chains": args.chains,
                "svi_steps": args.svi_steps, "seed": args.seed, "make_rows_s": t_rows,
                "xla_flags": os.environ.get("XLA_FLAGS", "")}
    return {"benchmark": "fit", "machine": common.machine(), "settings": settings, "results": results}


def main(argv=None) -> dict:
    args = parse_args(argv)
    if "jax" not in sys.modules:   # parallel chains need host devices, set before jax loads
        n = args.devices or args.chains
        os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={n}")
    import common

    return common.emit(run(args), args.out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
