"""How long a warm `decide` takes with each continuation (the article's G0, and the rollout
planner over the rounds left), on a mixed candidate set.

    python benchmarks/bench_planner.py                   # small: 8 candidates, 1000 draws
    python benchmarks/bench_planner.py --draws 4000 --out benchmarks/results/planner.json
    python benchmarks/bench_planner.py --draws 4000 --base-index draws   # the draws' shape
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import numpy as np


def candidates_and_belief(num_adapt: int, num_draws: int, seed: int = 0):
    """`num_adapt` adaptations (one on the robot, with its safety probe) and one pilot."""
    import bayes_s2r as bs

    rng = np.random.default_rng(seed)
    out = bs.BinomialPairedOutcome(episodes=48)
    names = [f"a{i}" for i in range(num_adapt)]
    cands = [bs.Candidate(n, "adaptation", "data", method="DR", cost=bs.Cost(compute=float(rng.uniform(0.5, 2)),
                                                                             eng=float(rng.uniform(1, 3))),
                          outcome=out) for n in names[:-1]]
    cands.append(bs.Candidate(names[-1], "adaptation", "optimization", method="FT", touches_robot=True,
                              cost=bs.Cost(real=0.5, eng=1.0), outcome=out))
    cands.append(bs.Candidate("pilot", "diagnosis", "data", observes=names[0], cost=bs.Cost(compute=0.3),
                              outcome=bs.BinomialPairedOutcome(episodes=24)))
    cands.append(bs.Candidate("probe", "diagnosis", "optimization", observes=f"safety:{names[-1]}",
                              touches_robot=True, cost=bs.Cost(real=0.1, eng=0.5),
                              outcome=bs.SafetyProbe(executions=60, risk_bound=0.01)))
    belief = bs.GainBelief.from_gaussian(names, rng.normal(0.02, 0.05, num_adapt), rng.uniform(0.05, 0.2, num_adapt),
                                         num_draws=num_draws, seed=seed)
    risk = bs.fit_exec_risk([], cands, sim_prior={names[-1]: (0.0, 50.0)})
    return cands, belief, risk


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--candidates", type=int, default=8, help="candidates in all (adaptations + a pilot + a probe)")
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--samples", type=int, default=256, help="look-ahead outcomes (scenarios)")
    p.add_argument("--horizon", type=int, default=3, help="decisions left after this one")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--base-index", default="gaussian", help="the rollout base policy's index (DecideConfig.base_index)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    import bayes_s2r as bs

    cands, belief, risk = candidates_and_belief(args.candidates - 2, args.draws)
    weights = bs.ResourceWeights(real=0.05, compute=0.01, eng=0.01)
    results = []
    for continuation in ("g0", "rollout"):
        kw = {"risk": risk, "utility": "adopt", "current_J": 0.4, "cvu_samples": args.samples,
              "continuation": continuation, "horizon": args.horizon, "base_index": args.base_index}
        t0 = time.perf_counter()
        bs.decide(belief, cands, bs.Budget(2, 10, 20), weights, seed=0, **kw)
        first = time.perf_counter() - t0
        warm = []
        for seed in range(1, args.repeats + 1):
            t0 = time.perf_counter()
            d = bs.decide(belief, cands, bs.Budget(2, 10, 20), weights, seed=seed, **kw)
            warm.append(time.perf_counter() - t0)
        results.append({"continuation": continuation, "first_s": first, "warm_median_s": float(np.median(warm)),
                        "best": d.best})
    return common.emit({"benchmark": "planner", "machine": common.machine(),
                        "settings": {"candidates": args.candidates, "draws": args.draws, "samples": args.samples,
                                     "horizon": args.horizon, "repeats": args.repeats, "base_index": args.base_index},
                        "results": results}, args.out)


if __name__ == "__main__":
    main()
