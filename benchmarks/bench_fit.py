"""Benchmark of the gains fit: NUTS and SVI on 64 candidates, and how fit time grows with rows.

The problem: `--candidates` adaptation candidates in 4 methods × 2 lenses (8 groups) with
batches 1, 2, 4, 8; a few candidates have no evidence of their own. `--rows` paired trial
rows (one matched treated/control episode pair each, the usual shape of an evaluation log)
are spread over the others, drawn from true gains of about 0–0.2 over a 0.55 control.

Measured in one run:
- NUTS: the first fit (compile included) and warm refits (`--repeats` other seeds, same
  shapes; median time, worst diagnostics), with min bulk ESS, ESS per second and max R-hat
  of the gains and the baseline;
- SVI: the first fit (compile included) and warm refits, and max |mean_svi − mean_nuts|
  against the mean of the NUTS fits;
- the same problem with `--big-rows` rows: warm NUTS fits on the same seeds and the ratio
  of their median time to `--rows`'s. Evidence is reduced to sufficient statistics before
  the fit, so the sampler sees the same arrays; what grows is reading the records (a Python
  pass over them, timed on its own as `read_evidence_s`), and the posterior is sharper.
  `ratio_vs_rows` includes the reading, `ratio_vs_rows_after_reading` does not.

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
    p.add_argument("--samples", type=int, default=1000, help="draws per chain")
    p.add_argument("--repeats", type=int, default=3,
                   help="warm fits timed per setting (median reported; different seeds)")
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--svi-steps", type=int, default=6000)
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

    warm_seeds = [args.seed + 1 + i for i in range(max(1, args.repeats))]

    def repeated(fn):
        """(beliefs, median wall s, median cpu s) of fn(seed) over the warm seeds."""
        outs, walls, cpus = [], [], []
        for sd in warm_seeds:
            b, t = _timed(lambda sd=sd: fn(sd))
            outs.append(b)
            walls.append(t)
            cpus.append(_CPU["last"])
        return outs, float(np.median(walls)), float(np.median(cpus))

    def nuts_row(name, bs, t, cpu, n_rows, t_read, first):
        d = [b.diagnostics for b in bs]
        ess = min(x["ess_bulk_min"] for x in d)
        return {
            "name": name, "rows": n_rows, "candidates": args.candidates, "wall_s": t,
            "cpu_s": cpu, "read_evidence_s": t_read, "compile_included": first,
            "fits": len(bs), "ess_bulk_min": ess, "ess_tail_min": min(x["ess_tail_min"] for x in d),
            "ess_per_s": ess / t, "rhat_max": max(x["rhat_max"] for x in d),
            "divergences": sum(x["divergences"] for x in d), "ok": all(bool(x["ok"]) for x in d),
            "chain_method": d[0]["chain_method"],
        }

    first, t_first = _timed(lambda: fit_gains(rows, cands, seed=args.seed, **nuts))
    cpu_first = _CPU["last"]
    warm, t_warm, cpu_warm = repeated(lambda sd: fit_gains(rows, cands, seed=sd, **nuts))
    t_read = float(np.median([_timed(lambda: prepare_gains(rows, cands))[1] for _ in warm_seeds]))
    results = [nuts_row("nuts_first", [first], t_first, cpu_first, args.rows, t_read, True),
               nuts_row("nuts_warm", warm, t_warm, cpu_warm, args.rows, t_read, False)]

    svi_kw = {"svi_steps": args.svi_steps, "num_samples": args.samples, "num_chains": args.chains}
    s_first, t_sfirst = _timed(lambda: fit_gains(rows, cands, method="svi", seed=args.seed, **svi_kw))
    cpu_sfirst = _CPU["last"]
    s_warm, t_swarm, cpu_swarm = repeated(
        lambda sd: fit_gains(rows, cands, method="svi", seed=sd, **svi_kw))
    ref = sum(b.mean() for b in [first, *warm]) / (1 + len(warm))
    for label, bs, t, cpu in (("svi_first", [s_first], t_sfirst, cpu_sfirst),
                              ("svi_warm", s_warm, t_swarm, cpu_swarm)):
        diffs = [(b.mean() - ref).abs() for b in bs]
        worst = max(diffs, key=lambda d: d.max())
        results.append({
            "name": label, "rows": args.rows, "candidates": args.candidates, "wall_s": t,
            "cpu_s": cpu, "compile_included": label == "svi_first", "fits": len(bs),
            "max_abs_mean_diff_vs_nuts": float(worst.max()), "worst_candidate": str(worst.idxmax()),
            "elbo_converged": all(bool(b.diagnostics["converged"]) for b in bs),
            "guide": bs[0].diagnostics["guide"],
        })

    if args.big_rows:
        big, t_big_rows = _timed(lambda: make_rows(rng, cands, p, args.big_rows))
        b_big, t_big, cpu_big = repeated(lambda sd: fit_gains(big, cands, seed=sd, **nuts))
        t_read_big = float(np.median([_timed(lambda: prepare_gains(big, cands))[1] for _ in warm_seeds]))
        row = nuts_row("nuts_warm_big", b_big, t_big, cpu_big, args.big_rows, t_read_big, False)
        row.update({
            "ratio_vs_rows": t_big / t_warm,
            "ratio_vs_rows_after_reading": (t_big - t_read_big) / max(t_warm - t_read, 1e-9),
            "make_rows_s": t_big_rows,
        })
        results.append(row)

    settings = {"candidates": args.candidates, "rows": args.rows, "big_rows": args.big_rows,
                "num_warmup": args.warmup, "num_samples": args.samples, "num_chains": args.chains,
                "svi_steps": args.svi_steps, "repeats": len(warm_seeds), "seed": args.seed, "make_rows_s": t_rows,
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
