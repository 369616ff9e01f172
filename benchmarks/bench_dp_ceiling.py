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

The ceiling on "gap closed" (`ceiling` of each variant, from `dp_ceiling.ceiling`): the exact
value of the `oracle_safe` strategy when it knows the true gains (`oracle`: greedy on true gain
− cost among the feasible tries, pays for what it runs, the noisy evaluation still decides
adoption), of the best policy that knows them (`clairvoyant`), and of the non-oracle baselines
(Weitzman's index on the prior's marginals, the index on the node posterior, one-step
look-ahead, and the library's `pandora` and `q_beta0` rules where they were evaluated). The
share of the gap from the best baseline to the oracle that the Bayes-optimal policy closes,
(DP − best)/(oracle − best), bounds what any policy that does not see the gains can close.

`--ceiling-only` recomputes only these exact values for the problems of an existing results
file (its settings), checks that the DP values (and the index values where stored) match the
stored ones to 1e-9, and merges the new fields in without rerunning the rules:

    .venv/bin/python benchmarks/bench_dp_ceiling.py --problems 60 --out benchmarks/results/dp_ceiling.json
    .venv/bin/python benchmarks/bench_dp_ceiling.py --ceiling-only --out benchmarks/results/dp_ceiling.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from benchmarks.common import emit, machine
from benchmarks.dp_ceiling import BASELINES, RULES, VARIANTS, ceiling, evaluate, make_problem

#: The library's rules that are rivals of `q_cvu` (non-oracle baselines) when they were evaluated.
RIVAL_RULES = ("pandora", "q_beta0")
CEILING_FIELDS = (*BASELINES, "oracle", "clairvoyant")


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


def summarize_ceiling(rows: list[dict], share: float = 0.6) -> dict:
    """Means of the exact values and the share of the gap to the oracle the DP closes."""
    dp = np.array([r["dp"] for r in rows])
    base = {b: np.array([r[b] for r in rows]) for b in (*BASELINES, *RIVAL_RULES) if b in rows[0]}
    oracle = np.array([r["oracle"] for r in rows])
    clair = np.array([r["clairvoyant"] for r in rows])
    means = {b: float(v.mean()) for b, v in base.items()}
    best = max(means, key=means.get)

    def closed(top: float, low: float) -> float | None:
        return float((dp.mean() - low) / (top - low)) if top - low > 1e-12 else None

    per_gap = oracle - base[best]
    some = per_gap > 1e-9
    per = (dp - base[best])[some] / per_gap[some]
    return {
        "oracle_mean": float(oracle.mean()), "clairvoyant_mean": float(clair.mean()), "dp_mean": float(dp.mean()),
        "baseline_means": means, "best_baseline": best,
        "dp_gap_closed": closed(oracle.mean(), means[best]),
        "dp_gap_closed_to_clairvoyant": closed(clair.mean(), means[best]),
        "dp_gap_closed_by_baseline": {b: closed(oracle.mean(), m) for b, m in means.items()},
        "dp_share_of_oracle": float(dp.mean() / oracle.mean()) if oracle.mean() > 0 else None,
        f"problems_dp_closes_{round(share * 100)}pct": int((per >= share - 1e-9).sum()),
        "problems_with_a_gap": int(some.sum()),
        "problems_oracle_below_dp": int((oracle < dp - 1e-12).sum()),
        "problems_oracle_below_clairvoyant": int((oracle < clair - 1e-12).sum()),
    }


def ceiling_only(path: str, argv) -> dict:
    """Recompute the exact values for the problems of the results file `path`, check the stored
    DP (and index) values, and merge the ceiling in (the rules are not rerun)."""
    with open(path) as fh:
        data = json.load(fh)
    settings = data["settings"]
    first, n = settings["first_seed"], settings["problems"]
    t0 = time.time()
    for variant in settings["variants"]:
        result = data["results"][variant]
        stored = result.get("per_problem")
        rows = []
        for i, seed in enumerate(range(first, first + n)):
            p = make_problem(variant, seed)
            row = {"problem": p.name, **{k: float(v) for k, v in ceiling(p).items()}}
            if stored is not None:
                old = stored[i]
                assert old["problem"] == p.name, (old["problem"], p.name)
                assert abs(old["dp"] - row["dp"]) <= 1e-9, (p.name, old["dp"], row["dp"])
                if "index" in old:
                    assert abs(old["index"] - row["index_prior"]) <= 1e-9, (p.name, old["index"], row["index_prior"])
                for r in RIVAL_RULES:
                    if r in old:
                        row[r] = old[r]
                old.update({k: row[k] for k in CEILING_FIELDS})
            rows.append(row)
        dp_mean = float(np.mean([r["dp"] for r in rows]))
        assert abs(dp_mean - result["dp_mean"]) <= 1e-9, (variant, dp_mean, result["dp_mean"])
        if "index_mean" in result:
            idx_mean = float(np.mean([r["index_prior"] for r in rows]))
            assert abs(idx_mean - result["index_mean"]) <= 1e-9, (variant, idx_mean, result["index_mean"])
        result["ceiling"] = summarize_ceiling(rows)
    data["ceiling_command"] = ("python benchmarks/bench_dp_ceiling.py " + " ".join(argv)).strip()
    data["seconds"]["ceiling"] = round(time.time() - t0, 1)
    return data


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=60)
    ap.add_argument("--first", type=int, default=0, help="seed of the first problem")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--rules", nargs="+", default=list(RULES), choices=RULES)
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--cvu-samples", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--decide", default=None, type=json.loads, metavar="JSON",
                    help='other decide options of the look-ahead rules, e.g. \'{"rollout_margin": 1}\'')
    ap.add_argument("--min-dp", type=float, default=0.002)
    ap.add_argument("--per-problem", action="store_true", help="include every problem's values")
    ap.add_argument("--out", default=None)
    ap.add_argument("--ceiling-only", action="store_true",
                    help="recompute only the exact DP, baseline and oracle values for the problems of --out "
                         "(its stored settings) and merge them in")
    args = ap.parse_args(argv)
    argv = argv if argv is not None else sys.argv[1:]
    if args.ceiling_only:
        if not args.out:
            ap.error("--ceiling-only needs --out (the results file to complete)")
        return emit(ceiling_only(args.out, argv), args.out)
    warnings.filterwarnings("ignore")  # arviz's notices on draws built by hand
    t0 = time.time()
    variants, timing = {}, {}
    for variant in args.variants:
        t = time.time()
        rows = []
        for seed in range(args.first, args.first + args.problems):
            r = evaluate(make_problem(variant, seed), args.rules, num_draws=args.draws,
                         cvu_samples=args.cvu_samples, seed=args.seed, options=args.decide)
            rows.append({k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in r.items()})
        variants[variant] = summarize(rows, args.rules, args.min_dp)
        variants[variant]["ceiling"] = summarize_ceiling(rows)
        variants[variant]["decide_calls"] = int(sum(r["decide_calls"] for r in rows))
        if args.per_problem:
            variants[variant]["per_problem"] = rows
        timing[variant] = round(time.time() - t, 1)
    cmd = "python benchmarks/bench_dp_ceiling.py " + " ".join(argv)
    result = {
        "benchmark": "dp_ceiling", "command": cmd.strip(), "machine": machine(),
        "settings": {"problems": args.problems, "first_seed": args.first, "variants": args.variants,
                     "rules": args.rules, "draws": args.draws, "cvu_samples": args.cvu_samples,
                     "seed": args.seed, "decide": args.decide or {}, "min_dp": args.min_dp, "candidates": 3, "rounds": 3,
                     "levels": "0.05 x {-2..2}", "utility": "adopt",
                     "transition": "HeadroomTransition(repeat_share=0) (q_cvu+tr: AlternativesTransition, NoTransition when stacking)"},
        "seconds": {"total": round(time.time() - t0, 1), **timing},
        "results": variants,
    }
    return emit(result, args.out)


if __name__ == "__main__":
    main()
