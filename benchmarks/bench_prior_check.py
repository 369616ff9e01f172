"""Do the gain priors of the random-world tables predict the past campaigns they come from?

For each family of `worlds.py`, the team's past campaigns (`worlds.history`) are checked
against each prior a table ran under (`bs.check_gain_prior`: the share of past effects inside
their central 90% prior predictive intervals, the mean PIT, and the gain per try the prior
expects). Next to it, what a first try truly brings in the family: the mean of max(ΔJ, 0)
over the adaptations of its benchmark worlds, from their starting policies. A prior that
expects much more than that makes every posterior-driven strategy explore where there is
little to find.

    python benchmarks/bench_prior_check.py                       # every family, three priors
    python benchmarks/bench_prior_check.py --families late,needle --priors history --out check.json

Prints one JSON object {"benchmark": "prior_check", "machine", "settings", "results"}.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import numpy as np
import worlds as W
from bench_worlds import TEAM_PRIORS

import bayes_s2r as bs

DEFAULT_PRIORS = ("library", "history", "history-shared")


def true_first_gain(family: W.Family, worlds: int) -> float:
    """Mean over the benchmark worlds' adaptations of max(true ΔJ from the start policy, 0)."""
    gains = []
    for seed in range(worlds):
        world = W.draw_world(family, seed)
        gains += [max(world.true_gain(c.name, world.start_J, ()), 0.0) for c in world.candidates
                  if c.role == "adaptation"]
    return float(np.mean(gains))


def check_family(name: str, priors, worlds: int, draws: int, seed: int) -> dict:
    family = W.ALL_FAMILIES[name]
    methods = W.history_methods(family)
    past = W.history(family)
    out = {"family": name, "true_gain": round(true_first_gain(family, worlds), 4), "priors": {}}
    for prior_name in priors:
        fields = {} if prior_name == "library" else W.team_prior(family, **TEAM_PRIORS[prior_name])
        check = bs.check_gain_prior(past, bs.GainPrior(**fields), methods=methods, draws=draws, seed=seed)
        out["priors"][prior_name] = {k: round(v, 4) if isinstance(v, float) else v for k, v in check.to_dict().items()}
        out["priors"][prior_name]["fitted"] = fields  # the team prior's fields, as the tables ran it
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--families", default="all", help="comma-separated family names, or all")
    p.add_argument("--priors", nargs="+", default=list(DEFAULT_PRIORS), choices=("library", *TEAM_PRIORS),
                   help="the gain priors to check (the --gain-prior choices of bench_worlds.py)")
    p.add_argument("--worlds", type=int, default=200, help="benchmark worlds per family for the true gain")
    p.add_argument("--draws", type=int, default=4000, help="predictive draws per past effect")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    families = list(W.ALL_FAMILIES) if args.families == "all" else args.families.split(",")
    unknown = sorted(set(families) - set(W.ALL_FAMILIES))
    if unknown:
        p.error(f"unknown families {unknown}; choose among {sorted(W.ALL_FAMILIES)}")
    t0 = time.perf_counter()
    results = [check_family(f, args.priors, args.worlds, args.draws, args.seed) for f in families]
    return common.emit({"benchmark": "prior_check", "machine": common.machine(),
                        "settings": {"families": families, "priors": args.priors, "worlds": args.worlds,
                                     "draws": args.draws, "seed": args.seed,
                                     "seconds": round(time.perf_counter() - t0, 1)},
                        "results": results}, args.out)


if __name__ == "__main__":
    main()
