"""Allocation quality: on the same budget, which strategy reaches the best real policy?

Every strategy of `bayes_s2r.campaign.strategies` runs full campaigns (the campaign loop,
its ledger, its adoption rule and its deployment check) on several hidden "real" worlds of
the Brax testbed, with the same candidates and the same budget vector, over several seeds.

The worlds' physics is shared through a memoized testbed (`allocation_world.TrueTable`):
a real Brax intervention costs seconds to tens of seconds, and the strategies differ only in
how they choose, so the policy reached by each lineage of interventions and its true J_real
are computed once per world with Brax, cached under `--cache`, and the campaigns observe
binomial paired evaluations around those true values. The oracle reads the same table. The
JSON says how the table was built (`settings.table`).

Per (world, strategy) row: final J_real of the deployed policy (true value from the table,
mean over seeds) with a 95% paired t-interval over seeds of final_J(strategy) −
final_J(q_cvu), the budget spent per resource (mean), execution-safety violations (unsafe
robot episodes while executing candidates, mean per campaign), the share of campaigns whose
deployment check passed, the toolkit's rules' own flip probability of their choices (1 − the
posterior probability that the chosen candidate is the best; the first choice and the later
ones), and the regret against the oracle (mean over seeds of
final_J(oracle) − final_J(strategy)) and against `oracle_safe`, the oracle held to the
toolkit's safety gate (on worlds where only robot-executed candidates reach J = 1 and the gate
refuses them, the plain oracle and the recipes get there with unsafe episodes that a rule
respecting the gate will not spend).

    python benchmarks/bench_allocation.py                       # small: 1 world, 3 seeds
    python benchmarks/bench_allocation.py --worlds all --seeds 30 --rounds 3 --out allocation.json
    python benchmarks/bench_allocation.py --worlds all --seeds 30 --budget-real 1.6   # two steps' robot time

With the default budget every belief-based rule has time to try, fail and try again, so
several of them end at the same J (success rates are capped at 1); the scarce budget leaves
robot time for two steps, where the order of the choices decides the final J.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import numpy as np
from allocation_world import (
    WORLDS,
    SyntheticTable,
    TableExecutor,
    TrueTable,
    bench_candidates,
    history_records,
)

from bayes_s2r.campaign import STRATEGY_IDS
from bayes_s2r.campaign.config import CAMPAIGN_DECIDE

ORACLES = ("oracle", "oracle_safe")
#: The strategies whose choice is `bayes_s2r.decide`'s, with its flip probability.
TOOLKIT_RULES = ("q_cvu", "q_beta0")
RESOURCES = ("real", "compute", "eng")

#: The team's prices λ0 (J points per unit): one robot-hour is worth 2 points of success rate,
#: one engineer-hour 0.5 points, one compute unit 5 points. A full campaign here spends about
#: 2.3 robot-hours, 10 engineer-hours and little compute, i.e. ~10 points of J: cheap next to
#: the 0 -> 1 swings a right intervention brings, so the prices only stop a rule whose belief
#: sees no large gain left. `net_utility_mean` (final J − λ0·spent, what the toolkit's rule
#: maximises) is reported next to final J, which ignores what a strategy left unspent.
PRICES = {"real": 0.02, "compute": 0.05, "eng": 0.005}

#: The team's prior on intervention effects, stated like its prices. A lab that has run
#: campaigns before brings their evidence: by default ("history") each world's prior is the
#: one `bayes_s2r.fit_gain_prior` chooses from one past campaign on each of the other worlds
#: (the world itself never informs its own prior), shared by every belief-based strategy.
#: On these worlds that is a Student-t candidate level (ν = 2) at the largest scale searched
#: (4): an intervention either fixes the failure or does not. `--gain-prior '{}'`
#: runs the library's default `GainPrior` instead (normal candidate level of scale 2); the
#: README reports each table under both. "history-fix" fits the prior as `bayes-s2r prior
#: --candidates --own-means --no-hierarchy` does: each method's own mean and the one-fix structure
#: with each method's own fix probability and a fix per method searched too.
TEAM_GAIN_PRIOR = "history"
#: The `--gain-prior` values fitted from past campaigns.
HISTORY_PRIORS = ("history", "history-fix")

#: Seed of the past campaigns that `--gain-prior history` fits the team prior from.
HISTORY_SEED = 7

#: The look-ahead's sample count as users get it (fewer samples make the rule's near-ties noisier).
_LIBRARY_CVU_SAMPLES = CAMPAIGN_DECIDE["cvu_samples"]


def _gain_prior_arg(text: str):
    if text in HISTORY_PRIORS:
        return text
    value = json.loads(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text!r}: a JSON object of GainPrior fields, or one of {HISTORY_PRIORS}")
    return value


def history_priors(table, worlds, args, one_fix: bool = False) -> dict[str, dict]:
    """Per world, the team prior fitted (`bayes_s2r.fit_gain_prior`) from one past campaign on
    each *other* world of the table: what a lab that worked on those robots before would
    bring to this one. The world itself never informs its own prior. With `one_fix`, as
    `bayes-s2r prior --candidates --own-means --no-hierarchy` fits it (each method's mean, the one-fix
    structure, each method's fix probability and a fix per method searched). Returns, per
    world, the fitted GainPrior fields and what the fit saw."""
    import bayes_s2r as bs
    from bayes_s2r.belief.team_prior import (
        DEFAULT_FIX_PROBS,
        DEFAULT_METHOD_FIX_CONCENTRATIONS,
        DEFAULT_METHOD_LOCS,
    )

    candidates = bench_candidates(args.eval_episodes)
    methods = {c.name: c.method for c in candidates if c.role == "adaptation"}
    search = ({"methods": methods, "method_locs": DEFAULT_METHOD_LOCS, "fix_probs": DEFAULT_FIX_PROBS,
               "method_fix_concentrations": DEFAULT_METHOD_FIX_CONCENTRATIONS,
               "fix_units": ("candidate", "method")} if one_fix else {})
    out = {}
    for world in worlds:
        past = [history_records(table, w, candidates, episodes=args.eval_episodes, seed=HISTORY_SEED)
                for w in table.worlds() if w != world]
        fit = bs.fit_gain_prior(past, **search)
        prior = {"candidate_scale": fit.prior.candidate_scale, "candidate_df": fit.prior.candidate_df,
                 "gain_loc": fit.prior.gain_loc}
        if one_fix:
            prior.update(method_locs=dict(fit.prior.method_locs), fix_prob=fit.prior.fix_prob,
                         fix_loc=fit.prior.fix_loc, fix_scale=fit.prior.fix_scale,
                         method_fix_probs=dict(fit.prior.method_fix_probs), fix_unit=fit.prior.fix_unit)
        out[world] = {"prior": prior, "effects": fit.effects,
                      "log_bayes_factor_vs_normal": round(fit.best_minus_normal, 3)}
    return out

#: Closed-form worlds of `--synthetic` (share of headroom each step recovers).
SYNTHETIC = {"syn_a": {"dr_dynamics": 0.1, "dr_latency": 0.6, "da_obs": -0.2, "si_retrain": 0.3, "ft_real": 0.2},
             "syn_b": {"dr_dynamics": 0.5, "dr_latency": -0.3, "da_obs": 0.1, "si_retrain": 0.4, "ft_real": 0.3}}


def _config(args, seed: int, prior: dict):
    import bayes_s2r as bs

    return bs.CampaignConfig(
        budget=bs.Budget(real=args.budget_real, compute=args.budget_compute, eng=args.budget_eng),
        weights=bs.ResourceWeights(**PRICES, scarcity=0.5),
        max_rounds=args.rounds, cvu_samples=args.cvu_samples, fit_method="svi",
        fit_options={"svi_steps": args.svi_steps, **({"prior": prior} if prior else {})},
        deploy_episodes=args.deploy_episodes, seed=seed, repeat_share=args.repeat_share,
        lookahead_depth=args.lookahead_depth, continuation=args.continuation,
        # a short SVI run may stop before its ELBO settles; decide on it rather than abort the campaign
        allow_bad_belief=True)


def run_campaign_once(table, world: str, strategy: str, seed: int, args) -> dict:
    """One campaign; returns its true final J, spending, violations and deployment check."""
    from bayes_s2r.campaign import executor_memory, make_chooser, run_campaign, start_campaign
    from bayes_s2r.evidence.ledger import Ledger
    from bayes_s2r.evidence.records import ExecutionOutcome

    candidates = bench_candidates(args.eval_episodes, args.pilot_episodes)
    executor = TableExecutor(table, world, eval_episodes=args.eval_episodes)
    fitted = args.world_priors.get(world)
    config = _config(args, seed, args.gain_prior if fitted is None else fitted["prior"])
    chooser = make_chooser(strategy, true_gains=executor.true_gains)
    unsafe = [0]
    chosen, flips = [], []

    def on_round(report):
        if report.execution is not None:
            kept = report.execution.policy is not None and not report.adopted  # a diagnosis deploys nothing
            chosen.append(report.decision.best + ("(kept)" if kept else ""))
            # the toolkit's rules choose what `decide` chose; the others' choices have no flip probability
            flips.append(float(report.decision.flip_probability) if strategy in TOOLKIT_RULES else float("nan"))
            unsafe[0] += sum(r.unsafe for r in report.execution.records if isinstance(r, ExecutionOutcome))

    with Ledger(":memory:") as ledger:
        start_campaign(ledger, candidates, config, executor, world={"card": world, "strategy": strategy})
        ledger.add_many(executor.shakedown_records(candidates))
        if args.baseline_episodes:
            ledger.add(executor.deployment_record(args.baseline_episodes, seed))
        state = run_campaign(ledger, executor, chooser=chooser, on_round=on_round)
        memory = executor_memory(ledger)
        deployment = ledger.get_meta("deployment")
    return {
        "final_J": table.J(world, TableExecutor.lineage(state.policy, memory)),
        "spent": {r: getattr(config.budget, r) - getattr(state.budget, r) for r in RESOURCES},
        "unsafe": unsafe[0], "passes": bool(deployment["passes"]), "stop": deployment["stop_reason"],
        "path": chosen, "flips": flips,
    }


def _mean_finite(groups) -> float | None:
    """Mean of the finite values of all groups (None when there are none)."""
    values = [v for g in groups for v in g if np.isfinite(v)]
    return round(float(np.mean(values)), 4) if values else None


def summarize(world: str, runs: dict[str, list[dict]]) -> list[dict]:
    """One row per strategy (see the module docstring)."""
    ref = np.array([r["final_J"] for r in runs["q_cvu"]])
    orc = np.array([r["final_J"] for r in runs["oracle"]]) if "oracle" in runs else None
    safe = np.array([r["final_J"] for r in runs["oracle_safe"]]) if "oracle_safe" in runs else None
    rows = []
    for s, rs in runs.items():
        J = np.array([r["final_J"] for r in rs])
        net = np.array([x["final_J"] - sum(PRICES[r] * x["spent"][r] for r in RESOURCES) for x in rs])
        lo, hi = common.t_interval(J - ref)
        rows.append({
            "world": world, "strategy": s, "seeds": len(rs),
            "final_J_mean": round(float(J.mean()), 4),
            "final_J_ci_low": round(lo, 4), "final_J_ci_high": round(hi, 4),
            "dJ_vs_q_cvu": round(float((J - ref).mean()), 4),
            "spent": {r: round(float(np.mean([x["spent"][r] for x in rs])), 4) for r in RESOURCES},
            "net_utility_mean": round(float(net.mean()), 4),
            "safety_violations": round(float(np.mean([x["unsafe"] for x in rs])), 3),
            "deploy_pass_rate": round(float(np.mean([x["passes"] for x in rs])), 3),
            "regret_vs_oracle": None if orc is None else round(float((orc - J).mean()), 4),
            "regret_vs_oracle_safe": None if safe is None else round(float((safe - J).mean()), 4),
            "flip_probability_first": _mean_finite(x["flips"][:1] for x in rs),
            "flip_probability_later": _mean_finite(x["flips"][1:] for x in rs),
            "paths": [" > ".join(x["path"]) or "(none)" for x in rs[:3]],
            "final_J_by_seed": [round(float(x), 4) for x in J],
            "net_utility_by_seed": [round(float(x), 4) for x in net],
        })
    return rows


#: Settings that may differ between a table and a run that reuses its rows (`--reuse`).
_REUSE_FREE = ("strategies", "wall_s", "table", "reuse")


def _as_run(settings: dict) -> dict:
    """The settings that decide a table's campaigns: a fitted team prior counts by the prior it
    chose, not by the evidence ratio it reports beside it (which a finer quadrature moves)."""
    out = {k: v for k, v in settings.items() if k not in _REUSE_FREE}
    prior = out.get("gain_prior")
    if isinstance(prior, dict) and "per_world" in prior:
        out["gain_prior"] = {**prior, "per_world": {w: {k: v for k, v in fit.items() if k != "log_bayes_factor_vs_normal"}
                                                    for w, fit in prior["per_world"].items()}}
    return out


def check_reuse(old: dict, settings: dict) -> None:
    """Refuse to reuse the rows of a table run with other settings."""
    same, theirs = _as_run(settings), _as_run(old["settings"])
    if same != theirs:
        raise SystemExit(f"--reuse: the table's settings differ in "
                         f"{sorted(k for k in set(same) | set(theirs) if same.get(k) != theirs.get(k))}")


def reuse_rows(old: dict, rows: list[dict]) -> list[dict]:
    """`rows` (this run's strategies) completed with the other strategies' rows of `old`, a
    table run with the same settings (`check_reuse`), re-paired against this run's q_cvu.

    A strategy's campaigns depend only on the world, the seed and its own code, so after a
    change to the toolkit's rule the other rows need not be run again; only their intervals
    against q_cvu change.
    """
    mine = {(r["world"], r["strategy"]): r for r in rows}
    ref = {r["world"]: np.array(r["final_J_by_seed"]) for r in rows if r["strategy"] == "q_cvu"}
    out = []
    for r in old["results"]:
        if (r["world"], r["strategy"]) in mine:
            continue
        diff = np.array(r["final_J_by_seed"]) - ref[r["world"]]
        lo, hi = common.t_interval(diff)
        out.append({**r, "final_J_ci_low": round(lo, 4), "final_J_ci_high": round(hi, 4),
                    "dJ_vs_q_cvu": round(float(diff.mean()), 4)})
    oracle_J = {(r["world"], r["strategy"]): np.array(r["final_J_by_seed"]) for r in old["results"]
                if r["strategy"] in ORACLES}
    for r in rows:  # this run's regrets against the oracles the table ran
        for name in ORACLES:
            if r[f"regret_vs_{name}"] is None and (r["world"], name) in oracle_J:
                J = np.array(r["final_J_by_seed"])
                r[f"regret_vs_{name}"] = round(float((oracle_J[r["world"], name] - J).mean()), 4)
    order = list(dict.fromkeys(r["strategy"] for r in old["results"]))
    merged = out + rows
    return sorted(merged, key=lambda r: (list(ref).index(r["world"]),
                                         order.index(r["strategy"]) if r["strategy"] in order else len(order)))


def targets(rows: list[dict]) -> dict:
    """The issue's targets, checked per world from the rows."""
    out = {}
    for world in dict.fromkeys(r["world"] for r in rows):
        w = {r["strategy"]: r for r in rows if r["world"] == world}
        q = w["q_cvu"]
        others = [r for s, r in w.items() if s != "q_cvu" and s not in ORACLES]
        recipes = [w[s] for s in ("dr_only", "si_then_dr", "dr_then_ft") if s in w]

        safe_recipes = [r for r in recipes if r["safety_violations"] <= q["safety_violations"]]
        out[world] = {
            "beats_every_non_oracle": all(q["final_J_mean"] > r["final_J_mean"] for r in others),
            "intervals_excluding_zero": sum(r["final_J_ci_high"] < 0 for r in others),
            "non_oracle_strategies": len(others),
            "no_more_safety_violations": all(q["safety_violations"] <= r["safety_violations"] for r in others),
            # the same comparison restricted to strategies no less safe than the toolkit's rule
            "beats_every_equally_safe": all(q["final_J_mean"] > r["final_J_mean"] for r in others
                                            if r["safety_violations"] <= q["safety_violations"]),
            # J is capped at 1: where several rules reach it, "strictly best" cannot hold
            "best_or_tied_among_equally_safe": all(q["final_J_mean"] >= r["final_J_mean"] for r in others
                                                   if r["safety_violations"] <= q["safety_violations"]),
            "net_utility_best_non_oracle": all(q["net_utility_mean"] >= r["net_utility_mean"] for r in others),
            "gap_closed_best_recipe_to_oracle": common.gap_closed(q, recipes, w.get("oracle")),
            # the same against the references that respect the toolkit's safety gate
            "gap_closed_best_safe_recipe_to_oracle_safe": common.gap_closed(q, safe_recipes, w.get("oracle_safe")),
        }
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worlds", default="real_latency",
                   help=f"comma-separated cards among {sorted(WORLDS)}, or 'all'")
    p.add_argument("--strategies", default=",".join(STRATEGY_IDS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--seed-start", type=int, default=0, help="first campaign seed (explore on others than 0..)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--budget-real", type=float, default=3.0)
    p.add_argument("--budget-compute", type=float, default=1.0)
    p.add_argument("--budget-eng", type=float, default=12.0)
    p.add_argument("--eval-episodes", type=int, default=48, help="episodes per arm of a paired evaluation")
    p.add_argument("--pilot-episodes", type=int, default=0,
                   help="add a pilot diagnosis of each sim-side adaptation with this many episodes per arm "
                        "(0: none)")
    p.add_argument("--baseline-episodes", type=int, default=0,
                   help="episodes of the starting policy's deployment record in every campaign's "
                        "ledger, free of the budget (0: none; the campaigns start not knowing J_real)")
    p.add_argument("--deploy-episodes", type=int, default=100)
    p.add_argument("--svi-steps", type=int, default=1500)
    p.add_argument("--gain-prior", type=_gain_prior_arg, default=TEAM_GAIN_PRIOR,
                   help="the belief-based strategies' prior: 'history' (default: per world, fitted "
                        "from past campaigns on the other worlds), 'history-fix' (the same as `bayes-s2r prior "
                        "--candidates --own-means --no-hierarchy` fits it: method means and the one-fix structure "
                        "searched too) or a JSON object of GainPrior fields ('{}': the library's defaults)")
    p.add_argument("--cvu-samples", type=int, default=_LIBRARY_CVU_SAMPLES,
                   help="outcomes per candidate in the look-ahead (default: CampaignConfig's)")
    p.add_argument("--repeat-share", type=float, default=0.0,
                   help="what the look-ahead expects a repeat of the adaptation just deployed to bring "
                        "(CampaignConfig.repeat_share, default 0: nothing; 1: as much again)")
    p.add_argument("--continuation", default=CAMPAIGN_DECIDE["continuation"], choices=("g0", "rollout"),
                   help="what stands for the rest of the campaign in the toolkit's look-ahead "
                        "(CampaignConfig.continuation; default: the campaign's)")
    p.add_argument("--lookahead-depth", type=int, default=1, choices=(1, 2),
                   help="decisions the toolkit's look-ahead sees after the one it scores, with "
                        "--continuation g0 (CampaignConfig.lookahead_depth; 2 values pilots before costly tries)")
    p.add_argument("--train-iterations", type=int, default=8, help="CEM iterations of sim retraining (table)")
    p.add_argument("--table-episodes", type=int, default=512, help="episodes of each true-J measurement")
    p.add_argument("--cache", default=os.environ.get("BAYES_S2R_CACHE", str(Path.home() / ".cache" / "bayes_s2r")))
    p.add_argument("--synthetic", action="store_true", help="closed-form worlds, no physics (smoke tests)")
    p.add_argument("--reuse", default=None, metavar="TABLE",
                   help="a table run with the same settings: take the rows of the strategies not run here from it "
                        "(after a change to the strategies run here alone)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if "q_cvu" not in strategies:
        strategies.insert(0, "q_cvu")  # every interval is paired against it
    if args.synthetic:
        table = SyntheticTable(SYNTHETIC)
        worlds = list(SYNTHETIC) if args.worlds in ("all", "real_latency") else args.worlds.split(",")
    else:
        table = TrueTable(args.cache, train_iterations=args.train_iterations, eval_episodes=args.table_episodes)
        worlds = list(WORLDS) if args.worlds == "all" else [w.strip() for w in args.worlds.split(",")]
    start = time.perf_counter()
    args.world_priors = {}
    fitted_as = args.gain_prior if args.gain_prior in HISTORY_PRIORS else None
    if fitted_as is not None:
        args.world_priors = history_priors(table, worlds, args, one_fix=fitted_as == "history-fix")
        args.gain_prior = {}
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "cache", "world_priors")}
    if args.world_priors:
        settings["gain_prior"] = {"fitted_from": "one past campaign on each other world (history_records)",
                                  **({"search": "bayes-s2r prior --candidates"} if fitted_as == "history-fix" else {}),
                                  "per_world": args.world_priors}
    settings.update(
        worlds={w: WORLDS.get(w, "synthetic") for w in worlds}, strategies=strategies,
        candidates=[{"name": c.name, "method": c.method, "cost": [c.cost.real, c.cost.compute, c.cost.eng],
                     "touches_robot": c.touches_robot, "repeatable": c.repeatable}
                    for c in bench_candidates(args.eval_episodes, args.pilot_episodes)],
        recipes="each recipe step runs the first candidate of its method: DR -> dr_dynamics",
        ci="95% paired t-interval over seeds of final_J(strategy) - final_J(q_cvu)",
        final_J="true J_real of the deployed policy, from the table")
    reused = None
    if args.reuse:
        with open(args.reuse) as f:
            reused = json.load(f)
        check_reuse(reused, settings)  # before the campaigns: a mismatch is said at once
    rows = []
    for world in worlds:
        seeds = range(args.seed_start, args.seed_start + args.seeds)
        runs = {s: [run_campaign_once(table, world, s, seed, args) for seed in seeds]
                for s in strategies}
        rows += summarize(world, runs)
        print(f"{world}: done ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    settings.update(table=table.describe(), wall_s=round(time.perf_counter() - start, 1))
    if reused is not None:
        rows = reuse_rows(reused, rows)
        settings["strategies"] = list(dict.fromkeys(r["strategy"] for r in rows))
    result = {"benchmark": "allocation", "machine": common.machine(), "settings": settings, "results": rows,
              "summary": targets(rows), "over_worlds": common.over_worlds(rows)}
    return common.emit(result, args.out)


if __name__ == "__main__":
    main()
