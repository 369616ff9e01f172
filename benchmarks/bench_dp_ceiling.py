"""The rule's value as a fraction of the exact Bayes-optimal value on small grid problems.

For each variant of `benchmarks.dp_ceiling` (`pandora`: exact evaluation, independent priors,
Weitzman's setting; `noisy`: a noisy paired evaluation decides adoption and two candidates
share a component; `noisy_budget`: the same with a hard budget admitting at most two of the
three tries; `noisy_stack`: the problems of `noisy` with gains that add up instead of being
alternatives), `--problems` random problems (seeds 0..N−1, see `make_problem`) are solved
exactly by dynamic programming, and each rule of `dp_ceiling.RULES` is evaluated exactly in
the same model (the library's `decide` at every node of the tree it reaches, the outcome
probabilities exact). In the `pandora` variant the DP value is checked to equal Weitzman's
index value on every problem (an AssertionError otherwise).

Stopping at once is worth 0 (the starting policy is kept), so a value is its own gain over
stopping. Per variant and rule: the mean value, the ratio of means (rule / DP), the mean of
per-problem ratios over the problems whose DP value is at least `--min-dp` (the others are
counted), the share of all problems within 5% of the DP value (value ≥ 0.95·DP − 1e-9), the
smallest ratio and the problems below 95%.

    .venv/bin/python benchmarks/bench_dp_ceiling.py --problems 60 --out benchmarks/results/dp_ceiling.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from benchmarks.common import emit, machine
from benchmarks.dp_ceiling import RULES, VARIANTS, evaluate, make_problem


def summarize(rows: list[dict], rules, min_dp: float) -> dict:
    dp = np.array([r["dp"] for r in rows])
    big = dp >= min_dp
    out = {"problems": len(rows), "dp_mean": float(dp.mean()), "problems_dp_below_min": int((~big).sum())}
    if "index" in rows[0]:
        idx = np.array([r["index"] for r in rows])
        out["index_mean"] = float(idx.mean())
        out["dp_equals_index_max_abs_diff"] = float(np.abs(idx - dp).max())
    per_rule = {}
    for rule in rules:
        v = np.array([r[rule] for r in rows])
        ratio = np.where(big, v / np.where(big, dp, 1.0), np.nan)
        within = v >= 0.95 * dp - 1e-9
        short = [(rows[i]["problem"], round(float(ratio[i]), 4)) for i in np.argsort(ratio)
                 if big[i] and ratio[i] < 0.95]
        per_rule[rule] = {
            "value_mean": float(v.mean()),
            "ratio_of_means": float(v.mean() / dp.mean()) if dp.mean() > 0 else None,
            "mean_ratio": float(np.nanmean(ratio)) if big.any() else None,
            "min_ratio": float(np.nanmin(ratio)) if big.any() else None,
            "share_within_5pct": float(within.mean()),
            "share_optimal": float((v >= dp - 1e-9).mean()),
            "below_95pct": short,
        }
        if "index" in rows[0]:
            idx = np.array([r["index"] for r in rows])
            per_rule[rule]["ratio_of_means_vs_index"] = float(v.mean() / idx.mean()) if idx.mean() > 0 else None
    out["rules"] = per_rule
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=60)
    ap.add_argument("--first", type=int, default=0, help="seed of the first problem")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--rules", nargs="+", default=list(RULES), choices=RULES)
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--cvu-samples", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-dp", type=float, default=0.002)
    ap.add_argument("--per-problem", action="store_true", help="include every problem's values")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")  # arviz's notices on draws built by hand
    t0 = time.time()
    variants, timing = {}, {}
    for variant in args.variants:
        t = time.time()
        rows = []
        for seed in range(args.first, args.first + args.problems):
            r = evaluate(make_problem(variant, seed), args.rules, num_draws=args.draws,
                         cvu_samples=args.cvu_samples, seed=args.seed)
            rows.append({k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in r.items()})
        variants[variant] = summarize(rows, args.rules, args.min_dp)
        variants[variant]["decide_calls"] = int(sum(r["decide_calls"] for r in rows))
        if args.per_problem:
            variants[variant]["per_problem"] = rows
        timing[variant] = round(time.time() - t, 1)
    cmd = "python benchmarks/bench_dp_ceiling.py " + " ".join(argv if argv is not None else sys.argv[1:])
    result = {
        "benchmark": "dp_ceiling", "command": cmd.strip(), "machine": machine(),
        "settings": {"problems": args.problems, "first_seed": args.first, "variants": args.variants,
                     "rules": args.rules, "draws": args.draws, "cvu_samples": args.cvu_samples,
                     "seed": args.seed, "min_dp": args.min_dp, "candidates": 3, "rounds": 3,
                     "levels": "0.05 x {-2..2}", "utility": "adopt",
                     "transition": "HeadroomTransition(repeat_share=0) (q_cvu+tr: AlternativesTransition, NoTransition when stacking)"},
        "seconds": {"total": round(time.time() - t0, 1), **timing},
        "results": variants,
    }
    return emit(result, args.out)


if __name__ == "__main__":
    main()
