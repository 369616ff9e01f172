"""The identifiable-dynamics regime: a few SI rollouts close most of the transfer gap, wide DR
whose range contains the truth does not, and the allocation rule picks SI there.

The regime (after arXiv 2606.22062) on the project's cart-pole testbed. Each world is a hidden
"real" cart-pole whose pole is heavier and whose actuator is weaker than the sim's: two
hidden dynamics parameters, `mass_scale` log-uniform in `--mass` and `gear_scale` uniform in
`--gear` (every other parameter at the sim's value; the real sensors add `--noise` rad of
noise, which is not hidden dynamics). The nominal policy does not balance such a pole.

Arms, each a linear policy; the real J of each is measured on the hidden world over
`--eval-episodes` episodes (matched seeds across arms; these measurements are the table's
ground truth and are not charged to any arm):

- nominal: the shipped nominal policy (trained in the nominal sim).
- si: system identification from `--si-episodes` excited real episodes of `--si-horizon`
  control steps each (the safe data-collection protocol: short episodes end before the
  failing nominal policy lets the pole fall; their unsafe count is recorded), by
  `bayes_s2r.sim.sysid.identify`, then CEM retraining at the identified ξ.
- dr_wide: CEM retraining under uniform DR over mass_scale 1 ± `--dr-mass-width` and
  gear_scale 1 ± `--dr-gear-width`, a range that contains every world's truth; it gets more
  simulated episodes per generation than the fixed-ξ arms (`--dr-episodes`). Uses no robot.
- oracle: CEM retraining at the true ξ (same key as the SI arm's retraining): the reference.

The arms call `RealRobot.collect`, `identify` and `train_cem` directly, with the table's own
training settings; `run_intervention("si_retrain", {"collect_horizon": h})` collects its data
under the same kind of short protocol.

Transfer gap of a world = J(oracle) − J(nominal); an arm's gap-closed share is
(J(arm) − J(nominal)) / gap, per world and pooled over worlds (ratio of the world means).

Allocation: per world, the decision rule (`bayes_s2r.decide`) chooses among
{si, dr_wide, ft_real} priced as a team would price them before running anything (as in
`benchmarks/allocation_world.py`: engineering hours, robot-hours of data logging or fine-tuning
plus a 48-episode paired evaluation on the robot, compute), with the same resource prices and
budget as `benchmarks/bench_allocation.py`. Its beliefs come from the testbed route's kinds of
evidence, measured on the world's robot:

- gains: `fit_gains` (SVI, the campaign's default) on short pilot paired evaluations
  (`--pilot-episodes` per arm, matched seeds) of the si and dr_wide policies against the
  nominal policy, under the library's gain prior. A pilot of an intervention builds its
  policy as the intervention would (for si: with the safe data-collection protocol above) and
  evaluates it without deploying it. ft_real has no pilot (building it means 64 real
  fine-tuning episodes): its gain is the prior's.
- execution risk: `fit_exec_risk` on a safety shakedown per robot-touching candidate, as the
  testbed's `TestbedExecutor.shakedown` does: `--shakedown` episodes of the candidate's own
  exploration on the robot (si: its short excited data-collection episodes, plus the pilot's;
  ft_real: full-length episodes of the nominal policy with fine-tuning-size perturbations).

The rule is shown the pilots and the shakedown only, never the table's 512-episode truths.
It reports per world the choice, Q = U0 + β·CVU, U0, CVU, the posterior mean gain, the
execution-risk UCB and feasibility per candidate, and the stop's Q (−G0(s^∅)). Reading Q: SI
is not repeatable and, once run, leaves no gap, so its CVU is about −U0 (the null state
keeps SI available, G0(s^∅) ≈ U0(si); after SI nothing is left to gain) and its Q is near 0;
every other candidate's Q is lower (running it first leaves SI's value for later but pays
for itself now), and the stop scores −G0(s^∅).

    python benchmarks/bench_regime.py                    # 2 worlds, a few minutes on 2 cores
    python benchmarks/bench_regime.py --worlds 10 --out benchmarks/results/regime.json
    python benchmarks/bench_regime.py --worlds 10 --si-episodes 2 --out benchmarks/results/regime_si2.json
    python benchmarks/bench_regime.py --worlds 10 --dr-iterations 32 --dr-episodes 32 \
        --out benchmarks/results/regime_dr_x4.json
"""

from __future__ import annotations

import argparse
import sys
import time

import common
import jax
import numpy as np

#: Resource prices (J per robot-hour, compute-hour, engineering hour) and budget of
#: benchmarks/bench_allocation.py.
PRICES = {"real": 0.02, "compute": 0.05, "eng": 0.005}
BUDGET = {"real": 3.0, "compute": 1.0, "eng": 12.0}
ARMS = ("nominal", "si", "dr_wide", "oracle")


def _clopper_pearson(hits: int, n: int, conf: float = 0.95) -> list[float]:
    """Two-sided exact interval: each end is the library's one-sided bound at (1 − conf)/2
    (the lower one on the failures)."""
    from bayes_s2r.belief.risk import clopper_pearson_ucb

    a = (1 - conf) / 2
    return [round(1.0 - clopper_pearson_ucb(n - hits, n, a), 4), round(clopper_pearson_ucb(hits, n, a), 4)]


def _eval_hours(episodes: int) -> float:
    return 2 * episodes * (200 * 0.04 + 20.0) / 3600  # both arms; horizon 8 s + reset 20 s


def candidates(si_episodes: int, si_horizon: int, eval_episodes: int = 48):
    """{si, dr_wide, ft_real}, priced before anything runs (see the module docstring)."""
    import bayes_s2r as bs

    out = bs.BinomialPairedOutcome(episodes=eval_episodes)
    ev = _eval_hours(eval_episodes)
    si_real = si_episodes * (si_horizon * 0.04 + 20.0) / 3600
    return (
        bs.Candidate("si", "adaptation", "model", method="SI", batch=si_episodes,
                     cost=bs.Cost(real=round(si_real + ev, 3), compute=0.02, eng=6.0),
                     touches_robot=True, repeatable=False, targets="mass", outcome=out),
        bs.Candidate("dr_wide", "adaptation", "data", method="DR", batch=1.0,
                     cost=bs.Cost(real=round(ev, 3), compute=0.02, eng=2.0), targets="gear", outcome=out),
        bs.Candidate("ft_real", "adaptation", "optimization", method="FT", batch=64,
                     cost=bs.Cost(real=round(64 * 28 / 3600 + ev, 3), compute=0.0, eng=4.0),
                     touches_robot=True, targets="gear", outcome=out),
    )


def run_world(i: int, key, args, shared: dict) -> dict:
    from bayes_s2r import sim
    from bayes_s2r.sim.params import DRSpec
    from bayes_s2r.sim.sysid import SIConfig, identify
    from bayes_s2r.sim.train import CEMConfig, train_cem

    world, pi0 = shared["world"], shared["pi0"]
    k_truth, k_col, k_id, k_train, k_dr, k_eval, k_pilot, k_shake, k_fit = jax.random.split(key, 9)
    km, kg = jax.random.split(k_truth)
    lo, hi = np.log(args.mass)
    mass = float(np.exp(jax.random.uniform(km, (), minval=lo, maxval=hi)))
    gear = float(jax.random.uniform(kg, (), minval=args.gear[0], maxval=args.gear[1]))
    truth = world.params._replace(mass_scale=mass, gear_scale=gear, obs_noise=args.noise)
    hidden = sim.World(name=f"hidden_{i}", env=world.env, params=truth, protocol=world.protocol, kind="real")
    short = sim.Protocol(horizon=args.si_horizon)
    robot = sim.RealRobot(hidden)                        # the campaign's robot (pilots, shakedown)
    robot_short = sim.RealRobot(hidden, protocol=short)  # the same robot under the SI protocol
    meter = sim.RealRobot(hidden)                        # the table's ground-truth measurements
    timings = {}

    # --- arms
    t = time.perf_counter()
    data = robot_short.collect(k_col, pi0, args.si_episodes, excitation=args.excitation)
    sim_short = sim.World(name="sim_short", env=world.env, params=world.params, protocol=short, kind="sim")
    si = identify(k_id, sim_short, data, pi0, SIConfig(iterations=args.si_iterations,
                                                       latencies=tuple(range(args.si_latencies))))
    timings["si_identify_s"] = time.perf_counter() - t
    cem = CEMConfig(iterations=args.train_iterations)
    t = time.perf_counter()
    policies = {"nominal": pi0, "si": train_cem(k_train, world.with_params(si.params), pi0, config=cem).policy}
    timings["si_retrain_s"] = time.perf_counter() - t
    t = time.perf_counter()
    policies["oracle"] = train_cem(k_train, world.with_params(truth), pi0, config=cem).policy
    timings["oracle_retrain_s"] = time.perf_counter() - t
    spec = DRSpec.create(center=world.params, width={"mass_scale": args.dr_mass_width,
                                                     "gear_scale": args.dr_gear_width})
    t = time.perf_counter()
    dr_cfg = CEMConfig(population=64, episodes=args.dr_episodes, elite=8, iterations=args.dr_iterations)
    policies["dr_wide"] = train_cem(k_dr, world, pi0, spec=spec, config=dr_cfg).policy
    timings["dr_retrain_s"] = time.perf_counter() - t

    arms = {}
    for name in ARMS:
        run = meter.run(k_eval, policies[name], args.eval_episodes)  # matched seeds across arms
        s = int(np.asarray(run.stats.success).sum())
        arms[name] = {"J": round(s / args.eval_episodes, 4), "J_ci95": _clopper_pearson(s, args.eval_episodes),
                      "score": round(float(np.asarray(run.stats.score).mean()), 4),
                      "unsafe_rate": round(int(run.unsafe) / args.eval_episodes, 4),
                      "real_episodes": args.si_episodes if name == "si" else 0}
    arms["si"]["collection_unsafe"] = int(data.run.unsafe)
    # the DR policy over its own training range, in sim: it is trained, it just cannot serve the corner
    on_range, _ = sim.rollout_dr(k_eval, world, policies["dr_wide"], spec, args.eval_episodes)
    arms["dr_wide"]["J_sim_on_dr_range"] = round(float(np.asarray(on_range.success).mean()), 4)
    gap = arms["oracle"]["J"] - arms["nominal"]["J"]
    for name in ARMS:
        arms[name]["gap_closed"] = (round((arms[name]["J"] - arms["nominal"]["J"]) / gap, 4)
                                    if gap >= 0.05 else None)
    row = {"world": i, "truth": {"mass_scale": round(mass, 4), "gear_scale": round(gear, 4)},
           "si_fit": {f: [round(si.mean[f], 4), round(si.sd[f], 4)] for f in ("mass_scale", "gear_scale",
                                                                             "damping_scale")},
           "dr_range": {"mass_scale": [round(max(1 - args.dr_mass_width, 0.05), 3), 1 + args.dr_mass_width],
                        "gear_scale": [round(max(1 - args.dr_gear_width, 0.05), 3), 1 + args.dr_gear_width]},
           "gap": round(gap, 4), "arms": arms}
    if not args.no_decide:
        t = time.perf_counter()
        row["decision"] = decide_world(args, robot, robot_short, policies, pi0, k_pilot, k_shake, k_fit, data)
        timings["decide_s"] = time.perf_counter() - t
    row["timings_s"] = {k: round(v, 2) for k, v in timings.items()}
    return row


def decide_world(args, robot, robot_short, policies, pi0, k_pilot, k_shake, k_fit, si_data) -> dict:
    """The rule's choice in one world, from pilots and a shakedown measured on its robot."""
    import bayes_s2r as bs
    from bayes_s2r import sim
    from bayes_s2r.belief.inference import SVI

    cands = candidates(args.si_episodes, args.si_horizon)
    records = []
    # safety shakedown: each robot-touching candidate's own exploration, supervised
    k_si, k_ft_eps, k_ft = jax.random.split(k_shake, 3)
    shake = robot_short.collect(k_si, pi0, args.shakedown, excitation=args.excitation)
    records.append(bs.ExecutionOutcome("si", args.shakedown + args.si_episodes,
                                       int(shake.run.unsafe) + int(si_data.run.unsafe), round=0))
    base = pi0.flat()
    thetas = base + 0.05 * jax.random.normal(k_ft_eps, (args.shakedown, base.shape[0]))
    ft = robot.run(k_ft, sim.LinearPolicy.from_flat(thetas), args.shakedown)
    records.append(bs.ExecutionOutcome("ft_real", args.shakedown, int(ft.unsafe), round=0))
    # pilot paired evaluations of the policies si and dr_wide would deploy
    pilots = {}
    for j, name in enumerate(("si", "dr_wide")):
        p = sim.paired_eval(jax.random.fold_in(k_pilot, j), robot, pi0, policies[name], args.pilot_episodes,
                            candidate_name=name, round=0, policy_name="pi0")
        records.append(p.record)
        pilots[name] = {"successes": p.successes_candidate, "control_successes": p.successes_current,
                        "episodes": p.episodes}
    seed = int(jax.random.randint(k_fit, (), 0, 2**30))
    belief = bs.fit_gains(records, cands, seed=seed, current_policy="pi0", inference=SVI(steps=args.svi_steps))
    if not belief.diagnostics.get("ok", False):  # as the campaign does: one longer run
        belief = bs.fit_gains(records, cands, seed=seed + 1, current_policy="pi0",
                              inference=SVI(steps=2 * args.svi_steps))
    risk = bs.fit_exec_risk(records, cands)
    budget = bs.Budget(**BUDGET)
    d = bs.decide(belief, cands, budget, bs.ResourceWeights(**PRICES, scarcity=0.5), risk=risk,
                  reference=budget, cvu_samples=args.cvu_samples, seed=args.seed,
                  allow_bad_belief=True)  # recorded in belief_ok
    def num(x) -> float | None:
        return round(float(x), 4) if np.isfinite(float(x)) else None

    table = {}
    for name in d.table.index:
        r = d.table.loc[name]
        table[name] = {**{f: num(r[f]) for f in ("Q", "U0", "CVU", "mu_dJ", "sd_dJ", "ucb_exec")},
                       "feasible": bool(r["feasible"]),
                       "excluded_reason": None if not r["excluded_reason"] else str(r["excluded_reason"])}
    return {"best": d.best, "stop_reason": d.stop_reason, "flip_probability": round(float(d.flip_probability), 4),
            "j_now": round(float(d.j_now), 4), "stop_Q": round(float(d.stop_Q), 4), "pilots": pilots,
            "shakedown": {r.candidate: [r.unsafe, r.executions] for r in records
                          if isinstance(r, bs.ExecutionOutcome)},
            "belief_ok": bool(belief.diagnostics.get("ok", False)), "table": table}


def summarize(rows: list[dict]) -> dict:
    """Per arm over the worlds: mean J with its 95% t-interval, pooled gap-closed share,
    per-world shares, real episodes; and the rule's choices."""
    nominal = np.array([r["arms"]["nominal"]["J"] for r in rows])
    oracle = np.array([r["arms"]["oracle"]["J"] for r in rows])
    out = {"worlds": len(rows), "arms": {}}
    for name in ARMS:
        J = np.array([r["arms"][name]["J"] for r in rows])
        lo, hi = common.t_interval(J)
        denom = float(oracle.mean() - nominal.mean())
        out["arms"][name] = {
            "J_mean": round(float(J.mean()), 4), "J_ci95": [round(lo, 4), round(hi, 4)],
            "score_mean": round(float(np.mean([r["arms"][name]["score"] for r in rows])), 4),
            "gap_closed_pooled": round(float((J.mean() - nominal.mean()) / denom), 4) if denom >= 0.05 else None,
            "gap_closed_by_world": [r["arms"][name]["gap_closed"] for r in rows],
            "real_episodes_per_world": rows[0]["arms"][name]["real_episodes"]}
    lo, hi = common.t_interval(np.array([r["arms"]["si"]["J"] - r["arms"]["dr_wide"]["J"] for r in rows]))
    out["si_minus_dr_wide"] = {"mean": round(float(np.mean([r["arms"]["si"]["J"] - r["arms"]["dr_wide"]["J"]
                                                             for r in rows])), 4), "ci95": [round(lo, 4), round(hi, 4)]}
    decisions = [(r, r["decision"]) for r in rows if "decision" in r]
    if decisions:
        picks = [d["best"] or f"(stop: {d['stop_reason']})" for _, d in decisions]
        out["choices"] = {p: picks.count(p) for p in dict.fromkeys(picks)}
        out["si_chosen_share"] = round(picks.count("si") / len(picks), 4)
        # what the choice is worth on the table's truth (a stop keeps the nominal policy; ft_real
        # has no arm in the table) against the better of si and dr_wide in that world
        chosen = [r["arms"][d["best"] if d["best"] in r["arms"] else "nominal"]["J"] for r, d in decisions]
        best = [max(r["arms"]["si"]["J"], r["arms"]["dr_wide"]["J"]) for r, _ in decisions]
        out["chosen_J_mean"] = round(float(np.mean(chosen)), 4)
        out["best_of_si_dr_J_mean"] = round(float(np.mean(best)), 4)
        unsafe, runs = (sum(d["shakedown"]["si"][k] for _, d in decisions) for k in (0, 1))
        out["si_protocol_unsafe"] = [int(unsafe), int(runs)]
    si_share, dr_share = out["arms"]["si"]["gap_closed_pooled"], out["arms"]["dr_wide"]["gap_closed_pooled"]
    out["regime_reproduced"] = bool(
        si_share is not None and dr_share is not None and si_share >= 0.5 and out["si_minus_dr_wide"]["ci95"][0] > 0
        and (not decisions or out["si_chosen_share"] >= 0.5))
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=2, help="hidden worlds (true-parameter draws)")
    parser.add_argument("--mass", type=float, nargs=2, default=[2.5, 3.5], help="true mass_scale range (log-uniform)")
    parser.add_argument("--gear", type=float, nargs=2, default=[0.22, 0.30], help="true gear_scale range (uniform)")
    parser.add_argument("--noise", type=float, default=0.005, help="sensor noise sd of the real worlds")
    parser.add_argument("--si-episodes", type=int, default=6)
    parser.add_argument("--si-horizon", type=int, default=20, help="control steps per SI episode (safe protocol)")
    parser.add_argument("--excitation", type=float, default=0.3)
    parser.add_argument("--si-iterations", type=int, default=20)
    parser.add_argument("--si-latencies", type=int, default=2, help="latencies 0..n-1 profiled by SI")
    parser.add_argument("--train-iterations", type=int, default=16, help="CEM generations at a fixed ξ")
    parser.add_argument("--dr-iterations", type=int, default=16, help="CEM generations under DR")
    parser.add_argument("--dr-episodes", type=int, default=16, help="DR episodes per CEM candidate")
    parser.add_argument("--dr-mass-width", type=float, default=2.5)
    parser.add_argument("--dr-gear-width", type=float, default=0.8)
    parser.add_argument("--eval-episodes", type=int, default=512, help="real episodes per arm for the table")
    parser.add_argument("--pilot-episodes", type=int, default=24, help="episodes per arm of each pilot")
    parser.add_argument("--shakedown", type=int, default=60, help="shakedown episodes per robot candidate")
    parser.add_argument("--svi-steps", type=int, default=3000)
    parser.add_argument("--cvu-samples", type=int, default=256)
    parser.add_argument("--no-decide", action="store_true", help="skip the allocation rule")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if not (args.mass[0] > 0 and args.mass[0] <= args.mass[1] and 0 < args.gear[0] <= args.gear[1]):
        parser.error("--mass and --gear need 0 < low <= high")
    if args.mass[1] > 1 + args.dr_mass_width or args.gear[0] < 1 - args.dr_gear_width:
        parser.error("the wide DR range must contain every true value")
    from bayes_s2r import sim

    start = time.perf_counter()
    shared = {"world": sim.load_card("sim_nominal"), "pi0": sim.nominal_policy()}
    keys = jax.random.split(jax.random.key(args.seed), args.worlds)
    rows = []
    for i in range(args.worlds):
        rows.append(run_world(i, keys[i], args, shared))
        print(f"world {i}: {rows[-1]['timings_s']}", file=sys.stderr)
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    command = "python benchmarks/bench_regime.py " + " ".join(argv if argv is not None else sys.argv[1:])
    return common.emit({"benchmark": "regime", "machine": common.machine(), "settings": settings,
                        "command": command.strip(), "wall_s": round(time.perf_counter() - start, 1),
                        "summary": summarize(rows), "results": rows}, args.out)


if __name__ == "__main__":
    main()
