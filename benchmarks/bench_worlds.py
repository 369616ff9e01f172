"""Allocation quality on random worlds: does the rule beat the alternatives on worlds nobody tuned it to?

Every strategy of `bayes_s2r.campaign.strategies` runs full campaigns through the library's
own loop (`run_campaign` with `make_chooser`: its ledger, fits, adoption rule and deployment
check) on worlds drawn from the families of `worlds.py`, with the same candidates, budget,
prices and seeds. The executor is synthetic (binomial evaluations around the true gains,
no physics), so a table takes minutes. Campaigns start with no execution evidence.

A strategy id may name a continuation: `q_cvu@g0` is the rule with the article's one-step G0
in place of the campaign's default continuation, `q_cvu@g0_depth2` the same two decisions ahead.

Per family and strategy: mean net utility (final J − λ0·spent), final J, spending per
resource, unsafe episodes per campaign while executing candidates (and, apart, unsafe
events a safety probe's supervised runs caught), rounds, and the 95% paired t-interval
over worlds of each strategy's net utility minus the rule's (`q_cvu`). `stop_at_once` is the
row of keeping the starting policy and spending nothing (net utility the start's J; no
campaign runs for it). `gap_closed` is the share of the gap, on net utility, from the best
non-oracle strategy (stopping at once included) with no more unsafe episodes than the rule to
`oracle_safe` that the rule closes.

    python benchmarks/bench_worlds.py                                   # small: 2 families, 4 worlds
    python benchmarks/bench_worlds.py --families easy,needle,small,robot,pandora --worlds 200 --jobs 2 \
        --out benchmarks/results/worlds.json

A long run can keep each finished world in a JSON-lines file (`--rows`): rerun the same
command to resume it, and parts run on different machines combine with `--merge`:

    python benchmarks/bench_worlds.py --families all --worlds 80 --first-world 120 --rows part.jsonl --out part.json
    python benchmarks/bench_worlds.py --merge benchmarks/results/worlds.json part.json --out benchmarks/results/worlds.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import numpy as np
import worlds as W

ORACLES = ("oracle", "oracle_safe")
#: The summary's row for keeping the starting policy and spending nothing: net utility is the start's J.
#: It needs no campaign, and every strategy that tries something must beat it to be worth running.
STOP = "stop_at_once"
#: `--gain-prior` choices fitted from past campaigns: the `worlds.team_prior` options of each.
TEAM_PRIORS = {
    "history": {"method_means": True},
    "history-pooled": {},
    "history-loc": {"fit_location": True},
    "history-hierarchy": {"fit_location": True, "scale_hierarchy": True},
    "history-skew": {"skew": True},
    "history-method-contrasts": {"method_contrasts": True},
    "history-shrunk": {"method_shrinkage": True},
    "history-shrunk-shared": {"method_shrinkage": True, "shared_levels": True},
    "history-shared": {"method_means": True, "shared_levels": True},
    "history-baseline": {"method_means": True, "baseline_level": True},
    "history-fix": {"method_means": True, "one_fix": True},
    "history-fix-method": {"method_means": True, "method_fix": True},
    "history-fix-method-hierarchy": {"method_means": True, "method_fix": True, "scale_hierarchy": True},
    "history-fix-per-method": {"method_means": True, "method_fix": True, "fix_per_method": True},
    "history-fix-per-method-shrunk": {"method_shrinkage": True, "spread_integrated": True, "fit_location": True,
                                      "method_fix": True, "fix_per_method": True},
    "history-fix-per-method-shrunk-hierarchy": {"method_shrinkage": True, "spread_integrated": True,
                                                "fit_location": True, "method_fix": True, "fix_per_method": True,
                                                "scale_hierarchy": True},
}

DEFAULT_STRATEGIES = ("q_cvu", "q_cvu@g0", "q_beta0", "mv_greedy", "thompson", "pandora", "round_robin", "dr_only",
                      "si_then_dr", "dr_then_ft", "oracle_safe")


def strategy_settings(strategy: str) -> tuple[str, dict]:
    """(the chooser's id, the campaign settings it names): "q_cvu@g0_depth2" is the rule with
    the G0 continuation two decisions ahead."""
    rule, _, continuation = strategy.partition("@")
    continuation, _, depth = continuation.partition("_depth")
    named: dict = {"continuation": continuation} if continuation else {}
    if depth:
        named["lookahead_depth"] = int(depth)
    return rule, named


def run_world(task: tuple) -> list[dict]:
    """Every strategy's campaign on one world; one row per strategy."""
    family, seed, strategies, max_rounds, overrides = task
    import bayes_s2r as bs
    from bayes_s2r.campaign.strategies import make_chooser
    from bayes_s2r.evidence.records import DecisionRecord, ExecutionOutcome

    world = W.draw_world(W.ALL_FAMILIES[family], seed)
    rows = []
    for strategy in strategies:
        executor = W.WorldExecutor(world)
        rule, named = strategy_settings(strategy)
        with tempfile.TemporaryDirectory() as tmp:
            ledger = bs.Ledger(os.path.join(tmp, "campaign.sqlite"))
            config = W.campaign_config(world, max_rounds=max_rounds, seed=seed, **{**overrides, **named})
            bs.start_campaign(ledger, world.candidates, config, executor)
            chooser = make_chooser(rule, true_gains=executor.true_gains)
            t0 = time.perf_counter()
            state = bs.run_campaign(ledger, executor, chooser=chooser)
            seconds = time.perf_counter() - t0
            chosen = {r.round: r.chosen for r in ledger.records(DecisionRecord)}
            probes = {c.name for c in world.candidates if c.observed_safety is not None}
            unsafe = probe_unsafe = 0
            for r in ledger.records(ExecutionOutcome):
                if chosen.get(r.round) in probes:
                    probe_unsafe += r.unsafe
                else:
                    unsafe += r.unsafe
            memory = bs.executor_memory(ledger)
            final_J = float(memory.get("policies", {}).get(state.policy, {}).get("J", world.start_J))
            spent = world.budget.as_array() - state.budget.as_array()
            ledger.close()
        rows.append({
            "family": family, "world": seed, "strategy": strategy, "final_J": final_J,
            "net_utility": W.net_utility(final_J, bs.Cost(*np.maximum(spent, 0.0))),
            "spent": dict(zip(("real", "compute", "eng"), map(float, spent), strict=True)),
            "unsafe": unsafe, "probe_unsafe": probe_unsafe, "rounds": len(state.history),
            "path": [h.chosen for h in state.history], "seconds": seconds, "start_J": world.start_J,
        })
    return rows


def summarize(rows: list[dict], strategies: tuple[str, ...]) -> dict:
    """Per strategy over the worlds: means, paired intervals against q_cvu, and the gap closed."""
    worlds = sorted({r["world"] for r in rows})
    by = {(r["world"], r["strategy"]): r for r in rows}
    ref = np.array([by[w, "q_cvu"]["net_utility"] for w in worlds]) if "q_cvu" in strategies else None
    out = {}
    for s in strategies:
        net = np.array([by[w, s]["net_utility"] for w in worlds])
        row = {
            "net_utility_mean": float(net.mean()),
            "final_J_mean": float(np.mean([by[w, s]["final_J"] for w in worlds])),
            "unsafe_mean": float(np.mean([by[w, s]["unsafe"] for w in worlds])),
            "probe_unsafe_mean": float(np.mean([by[w, s]["probe_unsafe"] for w in worlds])),
            "rounds_mean": float(np.mean([by[w, s]["rounds"] for w in worlds])),
            "spent_mean": {k: float(np.mean([by[w, s]["spent"][k] for w in worlds])) for k in ("real", "compute", "eng")},
            "seconds_mean": float(np.mean([by[w, s]["seconds"] for w in worlds])),
        }
        if ref is not None and s != "q_cvu":
            lo, hi = common.t_interval(net - ref)
            row["minus_q_cvu"] = {"mean": float((net - ref).mean()), "ci95": [lo, hi]}
        out[s] = row
    if all("start_J" in r for r in rows):
        out[STOP] = _stopping_at_once(rows, worlds, ref)
    if "q_cvu" in out and "oracle_safe" in out:
        q = out["q_cvu"]
        # rivals: not an oracle, not the rule itself nor the rule with another look-ahead ("q_cvu@...")
        pool = {s: r for s, r in out.items() if s not in ORACLES and s.partition("@")[0] != "q_cvu"
                and r["unsafe_mean"] <= q["unsafe_mean"]}
        if pool:
            best = max(pool, key=lambda s: pool[s]["net_utility_mean"])
            denom = out["oracle_safe"]["net_utility_mean"] - pool[best]["net_utility_mean"]
            out["_gap"] = {"best_rival": best, "gap_closed": (q["net_utility_mean"] - pool[best]["net_utility_mean"])
                           / denom if denom > 1e-9 else None}
    return out


def _stopping_at_once(rows: list[dict], worlds: list[int], ref: np.ndarray | None) -> dict:
    """The summary row of stopping at once, from the worlds' starting J."""
    start = {r["world"]: r["start_J"] for r in rows}
    net = np.array([start[w] for w in worlds])
    row = {"net_utility_mean": float(net.mean()), "final_J_mean": float(net.mean()), "unsafe_mean": 0.0,
           "probe_unsafe_mean": 0.0, "rounds_mean": 0.0, "spent_mean": {"real": 0.0, "compute": 0.0, "eng": 0.0},
           "seconds_mean": 0.0}
    if ref is not None:
        lo, hi = common.t_interval(net - ref)
        row["minus_q_cvu"] = {"mean": float((net - ref).mean()), "ci95": [lo, hi]}
    return row


# Settings that may differ between parts of one table: which worlds and families, how run.
_PART_SETTINGS = ("worlds", "first_world", "command", "wall_seconds", "parts", "families", "team_priors", "note")


def merge(results: list[dict]) -> dict:
    """One table from parts run with the same settings.

    Each world's campaigns depend only on its family, seed and strategy, so parts run apart
    (on other machines, or resumed) make the same table as one run. The parts' settings must
    agree on everything but their worlds and families. A part adds worlds no earlier part
    has, or re-runs a family on exactly the worlds an earlier part ran it on and replaces it
    there (recorded in `parts`); any other overlap is an error. A part that runs only some of
    the strategies (after a change to those alone) replaces their rows on exactly the worlds
    of each of its families.
    """
    first = results[0]["settings"]
    same = {k: v for k, v in first.items() if k not in _PART_SETTINGS}
    by_family: dict[str, list[dict]] = {}
    priors, parts = {}, []
    for result in results:
        settings = result["settings"]
        some = settings["strategies"] != same["strategies"]
        if some and not set(settings["strategies"]) < set(same["strategies"]):
            raise SystemExit(f"--merge: a part's strategies {settings['strategies']} are not some of "
                             f"the table's {same['strategies']}")
        other = {k: v for k, v in settings.items() if k not in _PART_SETTINGS}
        if some:
            other["strategies"] = same["strategies"]
        if other != same:
            diff = sorted(k for k in set(same) | set(other) if same.get(k) != other.get(k))
            raise SystemExit(f"--merge: the parts' settings differ in {diff}")
        replaced = []
        for family in settings["families"]:
            rows = [r for r in result["rows"] if r["family"] == family]
            new, old = {r["world"] for r in rows}, {r["world"] for r in by_family.get(family, [])}
            if some:
                if new != old:
                    raise SystemExit(f"--merge: a part re-running {settings['strategies']} must have exactly "
                                     f"the worlds of {family} the table has")
                replaced.append(family)
                by_family[family] = [r for r in by_family[family] if r["strategy"] not in settings["strategies"]] + rows
            elif new == old:
                replaced.append(family)
                by_family[family] = rows
            elif new & old:
                raise SystemExit(f"--merge: worlds of {family} in more than one part: {sorted(new & old)[:5]}")
            else:
                by_family[family] = by_family.get(family, []) + rows
            priors[family] = settings.get("team_priors", {}).get(family)
        for part in settings.get("parts") or [{
                "worlds": settings["worlds"], "first_world": settings["first_world"], "command": settings["command"],
                "wall_seconds": settings["wall_seconds"], "machine": result["machine"],
                **({"note": settings["note"]} if "note" in settings else {})}]:
            parts.append({**part, "families": part.get("families", settings["families"]),
                          **({"replaces": replaced} if replaced else {}),
                          **({"strategies": settings["strategies"]} if some else {})})
    strategies = tuple(same["strategies"])
    rows = [r for family_rows in by_family.values() for r in family_rows]
    worlds = sorted({r["world"] for r in rows})
    return {"benchmark": "worlds", "machine": results[-1]["machine"],
            "settings": {**same, "families": list(by_family), "team_priors": priors, "worlds": len(worlds),
                         "first_world": worlds[0], "parts": parts,
                         "command": "python benchmarks/bench_worlds.py --merge ...",
                         "wall_seconds": None if any(p["wall_seconds"] is None for p in parts)
                         else sum(p["wall_seconds"] for p in parts)},
            "summary": {f: summarize(by_family[f], strategies) for f in by_family},
            "rows": rows}


def _run_tasks(tasks: list[tuple], jobs: int, rows_path: str | None) -> list[dict]:
    """Run the worlds, appending each finished world's rows to `rows_path` (resumable: a world
    runs only the strategies its kept rows lack, so a strategy added later runs alone)."""
    done = []
    if rows_path and os.path.exists(rows_path):
        with open(rows_path) as f:
            done = [json.loads(line) for line in f if line.strip()]
    wanted = {(t[0], t[1], s) for t in tasks for s in t[2]}
    done = [r for r in done if (r["family"], r["world"], r["strategy"]) in wanted]
    finished = {(r["family"], r["world"], r["strategy"]) for r in done}
    todo = [(f, seed, left, *rest) for f, seed, strategies, *rest in tasks
            if (left := tuple(s for s in strategies if (f, seed, s) not in finished))]
    with open(rows_path, "a") if rows_path else contextlib.nullcontext() as sink:
        if jobs > 1:
            pool = multiprocessing.get_context("spawn").Pool(jobs)
            parts = pool.imap_unordered(run_world, todo, chunksize=1)
        else:
            pool, parts = None, map(run_world, todo)
        try:
            for part in parts:
                done += part
                if sink:  # kept as each world finishes: a stopped run resumes from here
                    sink.write("".join(json.dumps(r) + "\n" for r in part))
                    sink.flush()
        finally:
            if pool:
                pool.terminate()
    order = {(t[0], t[1], name): (i, j) for i, t in enumerate(tasks) for j, name in enumerate(t[2])}
    return sorted(done, key=lambda r: order[r["family"], r["world"], r["strategy"]])


#: Worlds of one family run one after another before the next family's (`world_order`).
_WORLD_BLOCK = 20


def world_order(families: list[str], seeds: range) -> list[tuple[str, int]]:
    """(family, seed) in blocks of `_WORLD_BLOCK` worlds, family by family within a block: a
    run stopped early (see --rows) has about as many worlds of each family, and the workers
    stay on one family's compiled samplers (a fit keeps the last few,
    `bayes_s2r.belief.compiled.CACHE_SIZE`; interleaving ten families recompiled nearly every fit)."""
    return [(f, seed) for block in range(0, len(seeds), _WORLD_BLOCK) for f in families
            for seed in seeds[block:block + _WORLD_BLOCK]]

#: Options that do not change a table's numbers, left out of the command it records (where a
#: table is written is said by the results page's command for it, `benchmarks/summarize.py`).
_UNRECORDED = ("--rows", "--note", "--out")


def _command(argv: list[str]) -> str:
    """The command that reproduces a table: its arguments without the `_UNRECORDED` options."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _UNRECORDED:
            skip = True
        elif not arg.startswith(tuple(f"{o}=" for o in _UNRECORDED)):
            kept.append(arg)
    return " ".join(["python benchmarks/bench_worlds.py", *kept])


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--families", default="easy,needle", help="comma-separated family ids, or 'all'")
    p.add_argument("--worlds", type=int, default=4, help="worlds per family (seeds 0..N-1)")
    p.add_argument("--first-world", type=int, default=0)
    p.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES))
    p.add_argument("--rounds", type=int, default=4, help="round limit of every campaign")
    p.add_argument("--continuation", default=None, help="override the campaign's continuation (g0|rollout)")
    p.add_argument("--decide", default=None, type=json.loads, metavar="JSON",
                   help='other decide options for every campaign, e.g. \'{"rollout_margin": 1}\'')
    p.add_argument("--start-deployment-episodes", type=int, default=0,
                   help="every campaign starts with a deployment evaluation of the starting policy of this many "
                        "episodes (CampaignConfig.start_deployment_episodes; default 0: J of the start unknown)")
    p.add_argument("--gain-prior", choices=(*TEAM_PRIORS, "library"), default="history",
                   help="history: each family's team prior fitted by bs.fit_gain_prior from past campaigns on "
                        "other worlds of it (worlds.team_prior), each method's mean fitted (DEFAULT_METHOD_LOCS); "
                        "history-pooled: the same with one mean for all methods (gain_loc 0.3); history-loc: "
                        "history-pooled with that mean fitted too; history-hierarchy: history-loc with the whole "
                        "effect hierarchy sized (scale_hierarchy=True); history-skew: history-pooled with the "
                        "candidate level's skew searched too (DEFAULT_SKEWS); history-method-contrasts: "
                        "history-pooled with only the methods' differences fitted (method_contrasts=True); "
                        "history-shrunk: each method's mean shrunk toward 0.3 by the evidence (method_spreads="
                        "DEFAULT_METHOD_SPREADS); "
                        "history-baseline: history with the starting policies' level fitted to the past starts "
                        "(baseline_level=True); history-fix: history with the one-fix structure searched (fix_probs="
                        "DEFAULT_FIX_PROBS); history-fix-method: history-fix with each method's own fix probability "
                        "shrunk toward one (method_fix_concentrations=DEFAULT_METHOD_FIX_CONCENTRATIONS); "
                        "history-fix-method-hierarchy: history-fix-method with "
                        "the whole effect hierarchy sized (scale_hierarchy=True); history-fix-per-method-shrunk: history-fix-per-method "
                        "with each method's mean shrunk toward a fitted common mean (DEFAULT_LOCS), averaged over the "
                        "spread's posterior (integrate_method_spread=True); history-fix-per-method-shrunk-hierarchy: the same with the "
                        "whole effect hierarchy sized (scale_hierarchy=True), what `bayes-s2r prior --candidates` fits "
                        "by default (history-fix-per-method: with --own-means --no-hierarchy); library: the library's "
                        "default GainPrior. "
                        "The default, history, keeps the stored tables' prior (`bayes-s2r prior --candidates --no-one-fix`)")
    p.add_argument("--history-campaigns", type=int, default=12,
                   help="past campaigns the team prior is fitted from (worlds.history; ignored with --gain-prior library)")
    p.add_argument("--teams", type=int, default=1,
                   help="teams whose histories the team priors are fitted from: world w takes team w mod TEAMS's "
                        "prior (worlds.history(..., team=k)); default 1, the one history of the stored tables")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--rows", default=None, help="JSON-lines file that keeps each finished world (resumable)")
    p.add_argument("--merge", nargs="+", default=None, metavar="RESULT",
                   help="combine result files run with the same settings on disjoint worlds")
    p.add_argument("--note", default=None,
                   help="how this table was run where its command does not say it, kept in its settings and shown "
                        "on the results page")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.merge:
        parts = []
        for path in args.merge:
            with open(path) as f:
                parts.append(json.load(f))
        return common.emit(merge(parts), args.out)
    families = list(W.FAMILIES) if args.families == "all" else args.families.split(",")
    for f in families:
        if f not in W.ALL_FAMILIES:
            p.error(f"--families: {f!r} is not one of {sorted(W.ALL_FAMILIES)}")
    strategies = tuple(args.strategies.split(","))
    overrides = {**(args.decide or {}), **({} if args.continuation is None else {"continuation": args.continuation})}
    if args.start_deployment_episodes:
        overrides["start_deployment_episodes"] = args.start_deployment_episodes
    if not 1 <= args.teams <= args.worlds:
        p.error(f"--teams: {args.teams} is not between 1 and --worlds ({args.worlds})")
    teams = {f: [W.team_prior(W.ALL_FAMILIES[f], **TEAM_PRIORS[args.gain_prior], campaigns=args.history_campaigns,
                              team=k) if args.gain_prior != "library" else None for k in range(args.teams)]
             for f in families}
    tasks = [(f, seed, strategies, args.rounds,
             {**overrides, **({"fit_options": {"prior": prior}} if (prior := teams[f][seed % args.teams]) else {})})
             for f, seed in world_order(families, range(args.first_world, args.first_world + args.worlds))]
    # one team: its prior per family, as the stored tables hold it; several: the list, team k first
    priors = {f: teams[f][0] if args.teams == 1 else teams[f] for f in families}
    t0 = time.perf_counter()
    rows = _run_tasks(tasks, args.jobs, args.rows)
    summary = {f: summarize([r for r in rows if r["family"] == f], strategies) for f in families}
    result = {
        "benchmark": "worlds", "machine": common.machine(),
        "settings": {"families": families, "worlds": args.worlds, "first_world": args.first_world,
                     "strategies": list(strategies), "rounds": args.rounds, "prices": W.PRICES,
                     "overrides": overrides, "gain_prior": args.gain_prior, "team_priors": priors,
                     **({"history_campaigns": args.history_campaigns} if args.history_campaigns != 12 else {}),
                     **({"teams": args.teams} if args.teams != 1 else {}),
                     "command": _command(argv if argv is not None else sys.argv[1:]),
                     "wall_seconds": time.perf_counter() - t0, **({"note": args.note} if args.note else {})},
        "summary": summary, "rows": rows,
    }
    return common.emit(result, args.out)


if __name__ == "__main__":
    main()
