"""Does the rule get what it expects? Each try's believed worth against what it brought, on random worlds.

The rule runs its campaigns (`run_round` with the toolkit's own rule) on worlds of
`worlds.py`. At each decision that tries an adaptation, the decision table's belief about the
chosen try (its posterior mean gain `mu_dJ`, the decision functional `gain`, e.g.
E[ΔJ·P(adopt | ΔJ)], and its price `C_lambda`) is set against the world's truth: the try's
true gain from the deployed policy and the change of the deployed policy's true J once the
adoption rule has kept or dropped it. Under a calibrated belief the chosen tries' believed
gain and their realized gain agree on average; a belief too wide or a prior mean too high makes
the argmax choose the tries it over-rates (the optimizer's curse) and spend more than they
bring. Over every adaptation at every decision it also reports the standardized errors
(true − mu_dJ)/sd_dJ (mean 0 and sd 1 when calibrated).

    python benchmarks/bench_expectations.py                       # small: 1 family, 2 worlds
    python benchmarks/bench_expectations.py --families small,needle --worlds 80 --jobs 2 \\
        --out benchmarks/results/expectations.json
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import numpy as np
import worlds as W
from bench_worlds import TEAM_PRIORS


def run_world(task: tuple) -> list[dict]:
    """The rule's campaign on one world: one row per decision that tried an adaptation, and its
    standardized errors over every adaptation it weighed."""
    family, seed, max_rounds, prior = task
    import bayes_s2r as bs
    from bayes_s2r.campaign import executor_memory
    from bayes_s2r.campaign.loop import run_round
    from bayes_s2r.campaign.state import load_state

    world = W.draw_world(W.ALL_FAMILIES[family], seed)
    executor = W.WorldExecutor(world)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ledger = bs.Ledger(os.path.join(tmp, "campaign.sqlite"))
        overrides = {"fit_options": {"prior": prior}} if prior else {}
        bs.start_campaign(ledger, world.candidates, W.campaign_config(world, max_rounds=max_rounds, seed=seed,
                                                                      **overrides), executor)
        while (state := load_state(ledger)).status != "stopped":
            J, lineage = executor.truth_of(state.policy, executor_memory(ledger))
            report = run_round(ledger, executor)
            if report.decision is None or report.decision.best is None:
                break
            table, chosen = report.decision.table, report.decision.best
            adaptations = table[table["role"] == "adaptation"]
            truth = {name: world.true_gain(name, J, lineage) for name in adaptations.index}
            z = [(truth[n] - r["mu_dJ"]) / r["sd_dJ"] for n, r in adaptations.iterrows() if r["sd_dJ"] > 0]
            row = {"family": family, "world": seed, "round": state.round, "chosen": chosen, "z": z}
            if chosen in truth:
                after, _ = executor.truth_of(load_state(ledger).policy, executor_memory(ledger))
                row.update(mu=float(table.at[chosen, "mu_dJ"]), functional=float(table.at[chosen, "gain"]),
                           price=float(table.at[chosen, "C_lambda"]), true_gain=truth[chosen],
                           realized=after - J, adopted=bool(report.adopted))
            rows.append(row)
        ledger.close()
    return rows


def _mean_se(values) -> dict:
    x = np.asarray(values, dtype=float)
    se = float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else None
    return {"mean": float(x.mean()), "se": se}


def summarize(rows: list[dict]) -> dict:
    """Per family: the chosen tries' believed and realized gains (mean and standard error), what
    they brought net of their price, and the standardized errors over every weighed adaptation."""
    tries = [r for r in rows if "realized" in r]
    z = np.array([v for r in rows for v in r["z"]])
    out = {"decisions": len(rows), "tries": len(tries)}
    if tries:
        out.update({k: _mean_se([r[k] for r in tries]) for k in ("mu", "functional", "true_gain", "realized", "price")})
        out["realized_minus_price"] = _mean_se([r["realized"] - r["price"] for r in tries])
        out["believed_minus_realized"] = _mean_se([r["functional"] - r["realized"] for r in tries])
        out["adopted"] = float(np.mean([r["adopted"] for r in tries]))
    if z.size:
        out["z_mean"], out["z_sd"] = float(z.mean()), float(z.std())
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--families", default="small", help="comma-separated family ids (worlds.ALL_FAMILIES)")
    p.add_argument("--worlds", type=int, default=2, help="worlds per family (seeds 0..N-1)")
    p.add_argument("--rounds", type=int, default=4, help="round limit of every campaign")
    p.add_argument("--gain-prior", choices=(*TEAM_PRIORS, "library"), default="history-fix-per-method",
                   help="the team prior (bench_worlds.py's --gain-prior); default: what `bayes-s2r prior --candidates` fits")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    families = args.families.split(",")
    for f in families:
        if f not in W.ALL_FAMILIES:
            p.error(f"--families: {f!r} is not one of {sorted(W.ALL_FAMILIES)}")
    priors = {f: W.team_prior(W.ALL_FAMILIES[f], **TEAM_PRIORS[args.gain_prior]) if args.gain_prior != "library"
              else None for f in families}
    tasks = [(f, seed, args.rounds, priors[f]) for f in families for seed in range(args.worlds)]
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            parts = pool.map(run_world, tasks, chunksize=1)
    else:
        parts = list(map(run_world, tasks))
    rows = [r for part in parts for r in part]
    result = {"benchmark": "expectations", "machine": common.machine(),
              "settings": {"families": families, "worlds": args.worlds, "rounds": args.rounds,
                           "gain_prior": args.gain_prior, "team_priors": priors},
              "results": {f: summarize([r for r in rows if r["family"] == f]) for f in families}, "rows": rows}
    return common.emit(result, args.out)


if __name__ == "__main__":
    main()
