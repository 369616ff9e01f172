"""The results page, docs/results.md, written from the benchmarks' JSON files.

    python benchmarks/summarize.py                           # reads benchmarks/results/*.json
    python benchmarks/summarize.py --results DIR             # another folder of the same files
    python benchmarks/summarize.py --write docs/results.md   # also write the page

Prints Markdown. Each section names the command that produced its file; a section whose
file is missing is skipped, so the page only ever shows what was measured.

To add a section: put the command that writes its file in `COMMANDS`, write a function
that takes the loaded JSON of the files it reads (None for a missing one) and returns
Markdown lines (`_head` makes the heading), and add a `Section` naming those files to
`SECTIONS`, in the order the page shows them.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import bench_worlds
import common
import numpy as np

from bayes_s2r.campaign.config import CAMPAIGN_DECIDE
from bayes_s2r.models.gains import GainPrior

HERE = Path(__file__).resolve().parent

#: The page this script writes, relative to the repository root.
PAGE = "docs/results.md"

#: The suffix of an allocation table run under the library's default gain prior (`--gain-prior '{}'`)
#: rather than the team prior fitted from the other worlds.
LIBRARY_PRIOR = "_library_prior"
#: The suffix of an allocation table run under the team prior fitted as `bayes-s2r prior --candidates
#: --own-means --no-hierarchy` fits it, the one-fix structure searched too (`--gain-prior history-fix`).
ONE_FIX_PRIOR = "_one_fix_prior"

#: The rows a rival of the toolkit's rule is not: the rule itself and the two oracles.
NOT_RIVALS = ("q_cvu", "oracle", "oracle_safe")

COMMANDS = {
    "allocation": "python benchmarks/bench_allocation.py --worlds all --seeds 100 --out benchmarks/results/allocation.json",
    "allocation_scarce": ("python benchmarks/bench_allocation.py --worlds all --seeds 100 --budget-real 1.6 "
                          "--out benchmarks/results/allocation_scarce.json"),
    "allocation_scarce_pilots": ("python benchmarks/bench_allocation.py --worlds all --seeds 100 --budget-real 1.6 "
                                 "--pilot-episodes 12 "
                                 "--out benchmarks/results/allocation_scarce_pilots.json"),
    **{f"{name}{suffix}": (f"python benchmarks/bench_allocation.py --worlds all --seeds 100 {flags}"
                           f"--gain-prior {prior} --out benchmarks/results/{name}{suffix}.json")
       for name, flags in (("allocation", ""), ("allocation_scarce", "--budget-real 1.6 "),
                           ("allocation_scarce_pilots", "--budget-real 1.6 --pilot-episodes 12 "))
       for suffix, prior in ((LIBRARY_PRIOR, "'{}'"), (ONE_FIX_PRIOR, "history-fix"))},
    "allocation_scarce_pilots_g0": ("python benchmarks/bench_allocation.py --worlds all --seeds 100 --budget-real 1.6 "
                                    "--pilot-episodes 12 --continuation g0 --lookahead-depth 2 "
                                    "--out benchmarks/results/allocation_scarce_pilots_g0.json"),
    "allocation_scarce_pilots_baseline": ("python benchmarks/bench_allocation.py --worlds all --seeds 100 --budget-real 1.6 "
                                          "--pilot-episodes 12 --baseline-episodes 100 --strategies q_cvu "
                                          "--out benchmarks/results/allocation_scarce_pilots_baseline.json"),
    "allocation_scarce_pilots_g0_baseline": ("python benchmarks/bench_allocation.py --worlds all --seeds 100 "
                                             "--budget-real 1.6 --pilot-episodes 12 --baseline-episodes 100 "
                                             "--continuation g0 --lookahead-depth 2 --strategies q_cvu "
                                             "--out benchmarks/results/allocation_scarce_pilots_g0_baseline.json"),
    "decide": "python benchmarks/bench_decide.py --full --out benchmarks/results/decide.json",
    "fit": "python benchmarks/bench_fit.py --out benchmarks/results/fit.json",
    "sbc_gains": "python benchmarks/sbc_gains.py --out benchmarks/results/sbc_gains.json",
    "sbc_gains_one_fix": ("python benchmarks/sbc_gains.py --prior '{\"fix_prob\": 0.05, \"fix_loc\": 3, "
                          "\"fix_scale\": 1}' --out benchmarks/results/sbc_gains_one_fix.json"),
    "sbc_gains_team_prior": ("python benchmarks/sbc_gains.py --prior '{\"candidate_scale\": 4, \"candidate_df\": 2}' "
                             "--out benchmarks/results/sbc_gains_team_prior.json"),
    "rollouts": ("python benchmarks/bench_rollouts.py --envs 256 1024 4096 --steps 200 --mujoco-envs 64 "
                 "--out benchmarks/results/rollouts.json"),
    "scaling": "python benchmarks/bench_scaling.py --devices 1,2,4 --out benchmarks/results/scaling.json",
    "cli_errors": "python benchmarks/bench_cli_errors.py --out benchmarks/results/cli_errors.json",
    "cli_decide": "python benchmarks/bench_cli_decide.py --out benchmarks/results/cli_decide.json",
    "locomotion_gpu": ("python benchmarks/bench_locomotion.py --task ant --batches 4096,32768,131072 --steps 100 "
                       "--repeats 3 --native-batch 512 --native-threads 2 --out benchmarks/results/locomotion_gpu.json"),
    "locomotion_cpu": ("python benchmarks/bench_locomotion.py --task ant --batches 256,1024 --steps 100 --repeats 3 "
                       "--native-threads 2 --out benchmarks/results/locomotion_cpu.json"),
    "dp_ceiling": "python benchmarks/bench_dp_ceiling.py --problems 100 --per-problem --out benchmarks/results/dp_ceiling.json",
    "dp_ceiling_rule": ("python benchmarks/bench_dp_ceiling.py --problems 100 --per-problem --rules q_cvu q_cvu+tr "
                        "--out benchmarks/results/dp_ceiling_rule.json"),
    "belief_structure": ("python benchmarks/bench_belief_structure.py --problems 100 "
                         "--out benchmarks/results/belief_structure.json"),
    "belief_structure_library": ("python benchmarks/bench_belief_structure.py --problems 30 --library "
                                 "--out benchmarks/results/belief_structure_library.json"),
    "worlds": ("python benchmarks/bench_worlds.py --families easy,needle,small,robot,pandora --worlds 200 --jobs 2 "
               "--out benchmarks/results/worlds.json"),
    "worlds_pooled": ("python benchmarks/bench_worlds.py --families easy,needle,small,robot,pandora --worlds 200 "
                      "--jobs 2 --gain-prior history-pooled --out benchmarks/results/worlds_pooled.json"),
    "worlds_library_prior": ("python benchmarks/bench_worlds.py --families all --worlds 100 --jobs 2 --gain-prior library "
                             "--strategies q_cvu,q_beta0,mv_greedy,thompson,pandora,round_robin,dr_only,si_then_dr,"
                             "dr_then_ft,oracle_safe --out benchmarks/results/worlds_library_prior.json"),
    "worlds_history_hierarchy": ("python benchmarks/bench_worlds.py --families small,needle,robot --worlds 120 --jobs 2 "
                                 "--gain-prior history-hierarchy --strategies q_cvu,q_beta0,mv_greedy,thompson,pandora,"
                                 "round_robin,dr_only,si_then_dr,dr_then_ft,oracle_safe "
                                 "--out benchmarks/results/worlds_history_hierarchy.json"),
    "worlds_history_skew": ("python benchmarks/bench_worlds.py --families all --worlds 62 --jobs 2 "
                            "--gain-prior history-skew --strategies q_cvu,q_beta0,mv_greedy,thompson,pandora,"
                            "round_robin,dr_only,si_then_dr,dr_then_ft,oracle_safe "
                            "--out benchmarks/results/worlds_history_skew.json"),
    "worlds_history_shrunk": ("python benchmarks/bench_worlds.py --families all --worlds 200 --jobs 2 "
                              "--gain-prior history-shrunk --strategies q_cvu "
                              "--out benchmarks/results/worlds_history_shrunk.json"),
    "worlds_history_shrunk_shared": ("python benchmarks/bench_worlds.py --families all --worlds 200 --jobs 2 "
                                     "--gain-prior history-shrunk-shared --strategies q_cvu "
                                     "--out benchmarks/results/worlds_history_shrunk_shared.json"),
    "worlds_history_shared": ("python benchmarks/bench_worlds.py --families all --worlds 200 --jobs 2 "
                              "--gain-prior history-shared --strategies q_cvu "
                              "--out benchmarks/results/worlds_history_shared.json"),
    "worlds_start_record": ("python benchmarks/bench_worlds.py --families all --worlds 200 --jobs 2 "
                            "--start-deployment-episodes 100 --strategies q_cvu "
                            "--out benchmarks/results/worlds_start_record.json"),
    "worlds_pilots": ("python benchmarks/bench_worlds.py --families pilots --worlds 200 --jobs 2 "
                      "--strategies q_cvu,q_cvu@g0_depth2,q_beta0,mv_greedy,thompson,pandora,round_robin,dr_only,"
                      "si_then_dr,dr_then_ft,oracle_safe --out benchmarks/results/worlds_pilots.json"),
    "worlds_pilots_pooled": ("python benchmarks/bench_worlds.py --families pilots --worlds 200 --jobs 2 --gain-prior "
                             "history-pooled --strategies q_cvu,q_cvu@g0_depth2,q_beta0,mv_greedy,thompson,pandora,"
                             "round_robin,dr_only,si_then_dr,dr_then_ft,oracle_safe "
                             "--out benchmarks/results/worlds_pilots_pooled.json"),
    "worlds_held_out": ("python benchmarks/bench_worlds.py --families wide,late,mixed,failing --worlds 200 --jobs 2 "
                        "--strategies q_cvu,q_beta0,mv_greedy,thompson,pandora,round_robin,dr_only,si_then_dr,"
                        "dr_then_ft,oracle_safe --out benchmarks/results/worlds_held_out.json"),
    "worlds_held_out_shared": ("python benchmarks/bench_worlds.py --families wide,late,mixed,failing --worlds 200 --jobs 2 "
                               "--gain-prior history-shared --strategies q_cvu "
                               "--out benchmarks/results/worlds_held_out_shared.json"),
    "worlds_rollout_margin": ("python benchmarks/bench_worlds.py --families easy,needle,small,robot,pilots,pandora,"
                              "wide,late,mixed,failing,siblings,rivals --worlds 200 --jobs 2 --strategies q_cvu "
                              "--decide '{\"rollout_margin\": 1}' --out benchmarks/results/worlds_rollout_margin.json"),
    "dp_ceiling_margin": ("python benchmarks/bench_dp_ceiling.py --problems 100 --per-problem --rules q_cvu q_cvu+tr "
                          "--decide '{\"rollout_margin\": 1}' --out benchmarks/results/dp_ceiling_margin.json"),
    "worlds_rollout_margin_half": ("python benchmarks/bench_worlds.py --families siblings,rivals,easy,needle,mixed "
                                   "--worlds 200 --jobs 2 --strategies q_cvu --decide '{\"rollout_margin\": 0.5}' "
                                   "--out benchmarks/results/worlds_rollout_margin_half.json"),
    "dp_ceiling_margin_half": ("python benchmarks/bench_dp_ceiling.py --problems 100 --per-problem --rules q_cvu "
                               "q_cvu+tr --decide '{\"rollout_margin\": 0.5}' "
                               "--out benchmarks/results/dp_ceiling_margin_half.json"),
    "worlds_base_index_draws": ("python benchmarks/bench_worlds.py --families robot,pilots --worlds 200 --jobs 2 "
                                "--strategies q_cvu --decide '{\"base_index\": \"draws\"}' "
                                "--out benchmarks/results/worlds_base_index_draws.json"),
    "prior_check": "python benchmarks/bench_prior_check.py --out benchmarks/results/prior_check.json",
    "worlds_history_shared_200": ("python benchmarks/bench_worlds.py --families late,rivals,siblings --worlds 200 "
                                  "--jobs 2 --gain-prior history-shared --history-campaigns 200 --strategies "
                                  "q_cvu,q_beta0,mv_greedy,thompson,pandora,dr_only "
                                  "--out benchmarks/results/worlds_history_shared_200.json"),
    "worlds_history_baseline": ("python benchmarks/bench_worlds.py --families late,failing,wide --worlds 200 --jobs 2 "
                                "--gain-prior history-baseline --strategies q_cvu,q_beta0,mv_greedy,thompson,pandora,"
                                "dr_only --out benchmarks/results/worlds_history_baseline.json"),
    "worlds_without_diagnosis_margin": (
        "python benchmarks/bench_worlds.py --families easy,needle,small,robot,pandora,pilots,wide,late,mixed,failing,"
        "siblings,rivals --worlds 200 --jobs 2 --strategies q_cvu --decide '{\"diagnosis_margin\": 0}' "
        "--out benchmarks/results/worlds_without_diagnosis_margin.json"),
    "worlds_history_fix": ("python benchmarks/bench_worlds.py --families easy,needle,small,robot,pandora,pilots,wide,"
                           "late,mixed,failing,siblings,rivals --worlds 200 --jobs 2 --gain-prior history-fix "
                           "--strategies q_cvu --out benchmarks/results/worlds_history_fix.json"),
    "worlds_history_fix_rivals": ("python benchmarks/bench_worlds.py --families needle,rivals --worlds 200 --jobs 2 "
                                  "--gain-prior history-fix --strategies q_cvu,q_beta0,mv_greedy,thompson,pandora "
                                  "--out benchmarks/results/worlds_history_fix_rivals.json"),
    "worlds_history_fix_method": ("python benchmarks/bench_worlds.py --families robot,pilots,rivals --worlds 200 "
                                  "--jobs 2 --gain-prior history-fix-method --strategies q_cvu "
                                  "--out benchmarks/results/worlds_history_fix_method.json"),
    "worlds_history_fix_method_rivals": ("python benchmarks/bench_worlds.py --families robot,pilots,rivals,needle,failing,"
                                         "late,small,siblings,easy,pandora,wide,mixed --worlds 200 --jobs 2 "
                                         "--gain-prior history-fix-method "
                                         "--strategies q_beta0,mv_greedy,thompson,pandora "
                                         "--out benchmarks/results/worlds_history_fix_method_rivals.json"),
    "worlds_history_fix_method_plain": ("python benchmarks/bench_worlds.py --families easy,needle,small,robot,pandora,"
                                        "pilots,wide,late,mixed,failing,siblings,rivals --worlds 20 --jobs 1 "
                                        "--gain-prior history-fix-method --strategies round_robin,dr_only,si_then_dr,"
                                        "dr_then_ft,oracle_safe --out "
                                        "benchmarks/results/worlds_history_fix_method_plain.json"),
    "worlds_fresh": ("python benchmarks/bench_worlds.py --families noisy,sim_fix --worlds 200 --jobs 2 "
                     "--gain-prior history-fix-method --strategies q_cvu,q_beta0,mv_greedy,thompson,pandora,round_robin,"
                     "dr_only,si_then_dr,dr_then_ft,oracle_safe --out benchmarks/results/worlds_fresh.json"),
    "worlds_fresh_history": ("python benchmarks/bench_worlds.py --families noisy,sim_fix --worlds 200 --jobs 2 "
                             "--gain-prior history --strategies q_cvu --out benchmarks/results/worlds_fresh_history.json"),
    "worlds_history_fix_method_hierarchy": (
        "python benchmarks/bench_worlds.py --families easy,needle,small,robot,pandora,pilots,wide,late,mixed,failing,"
        "siblings,rivals,noisy,sim_fix --worlds 200 --jobs 2 --gain-prior history-fix-method-hierarchy --strategies q_cvu "
        "--out benchmarks/results/worlds_history_fix_method_hierarchy.json"),
    "prior_check_one_fix": ("python benchmarks/bench_prior_check.py --families easy,needle,small,robot,pilots,pandora,"
                            "wide,late,mixed,failing,siblings,rivals,noisy,sim_fix --priors history-fix-method "
                            "history-fix-method-hierarchy --out benchmarks/results/prior_check_one_fix.json"),
    "worlds_history_fix_per_method": (
        "python benchmarks/bench_worlds.py --families siblings,kin --worlds 200 --jobs 2 --gain-prior "
        "history-fix-per-method --strategies q_cvu --out benchmarks/results/worlds_history_fix_per_method.json"),
    "worlds_history_fix_per_method_rivals": (
        "python benchmarks/bench_worlds.py --families siblings,kin --worlds 200 --jobs 2 --gain-prior "
        "history-fix-per-method --strategies q_beta0,mv_greedy,thompson,pandora "
        "--out benchmarks/results/worlds_history_fix_per_method_rivals.json"),
    "worlds_kin": ("python benchmarks/bench_worlds.py --families kin --worlds 200 --jobs 2 --gain-prior history-fix-method "
                   "--strategies q_cvu,q_beta0,mv_greedy,thompson,pandora,round_robin,dr_only,si_then_dr,dr_then_ft,"
                   "oracle_safe --out benchmarks/results/worlds_kin.json"),
    "prior_check_fix_per_method": (
        "python benchmarks/bench_prior_check.py --families easy,needle,small,robot,pilots,pandora,wide,late,mixed,"
        "failing,siblings,rivals,noisy,sim_fix,kin --priors history-fix-method history-fix-per-method "
        "--out benchmarks/results/prior_check_fix_per_method.json"),
    "worlds_teams": (
        "python benchmarks/bench_worlds.py --families small,needle --worlds 200 --teams 10 --jobs 2 --gain-prior "
        "history-fix-per-method --strategies q_cvu,q_beta0,mv_greedy,thompson,pandora,dr_only,oracle_safe "
        "--out benchmarks/results/worlds_teams.json"),
    "worlds_teams_lookahead": (
        "python benchmarks/bench_worlds.py --families robot,pilots,failing --worlds 60 --teams 10 --jobs 2 "
        "--gain-prior history-fix-per-method --strategies q_cvu,q_beta0 "
        "--out benchmarks/results/worlds_teams_lookahead.json"),
    "worlds_teams_shrunk": (
        "python benchmarks/bench_worlds.py --families small,needle --worlds 200 --teams 10 --jobs 2 --gain-prior "
        "history-fix-per-method-shrunk --strategies q_cvu,q_beta0,mv_greedy,thompson,pandora,dr_only,oracle_safe "
        "--out benchmarks/results/worlds_teams_shrunk.json"),
    "worlds_teams_hierarchy": (
        "python benchmarks/bench_worlds.py --families sim_fix --worlds 60 --teams 10 --jobs 2 --gain-prior "
        "history-fix-per-method-shrunk-hierarchy --strategies q_cvu --out benchmarks/results/worlds_teams_hierarchy.json"),
    "worlds_teams_hierarchy_default": (
        "python benchmarks/bench_worlds.py --families sim_fix --worlds 60 --teams 10 --jobs 2 --gain-prior "
        "history-fix-per-method --strategies q_cvu --out benchmarks/results/worlds_teams_hierarchy_default.json"),
    "worlds_teams_hierarchy_rivals": (
        "python benchmarks/bench_worlds.py --families small --worlds 100 --teams 10 --jobs 2 --gain-prior "
        "history-fix-per-method-shrunk-hierarchy --strategies q_cvu,mv_greedy,pandora "
        "--out benchmarks/results/worlds_teams_hierarchy_rivals.json"),
    "backends": ("python benchmarks/bench_backends.py --episodes 1024 --envs 256 1024 4096 --card-episodes 512 "
                 "--out benchmarks/results/backends.json"),
    "sysid": "python benchmarks/bench_sysid.py --reps 80 --out benchmarks/results/sysid.json",
    "sysid_mjx": "python benchmarks/bench_sysid.py --reps 80 --backend mjx --out benchmarks/results/sysid_mjx.json",
    "sysid_mjx_seed1": ("python benchmarks/bench_sysid.py --tasks inverted_pendulum --reps 160 --seed 1 --backend mjx "
                        "--out benchmarks/results/sysid_mjx_seed1.json"),
    "regime": "python benchmarks/bench_regime.py --worlds 10 --out benchmarks/results/regime.json",
    "regime_si2": "python benchmarks/bench_regime.py --worlds 10 --si-episodes 2 --out benchmarks/results/regime_si2.json",
    "regime_dr_x4": ("python benchmarks/bench_regime.py --worlds 10 --dr-iterations 32 --dr-episodes 32 "
                     "--out benchmarks/results/regime_dr_x4.json"),
}


def _load(folder: Path, name: str) -> dict | None:
    path = folder / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _machine(data: dict) -> str:
    m = data.get("machine", {})
    load = m.get("load_avg")
    where = f"{m.get('cores', '?')} cores, {m.get('backend', m.get('jax_backend', '?'))}"
    return where + (f", load average {load[0]:.1f}" if load else "")


def _head(name: str, title: str, data: dict) -> list[str]:
    return [f"## {title}", "", f"`{COMMANDS[name]}` ({_machine(data)})", ""]


def _diff(mean: float, lo: float, hi: float) -> str:
    """A difference with its interval: "+0.012 [-0.003, +0.027]"."""
    return f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def _diff_of(d: dict | None) -> str:
    """`_diff` of a {"mean", "ci95"} entry ("" without one)."""
    return "" if d is None else _diff(d["mean"], *d["ci95"])


def _paired(over: dict, k: str, what: str) -> str:
    """"k mean [paired interval vs q_cvu]" for one `over_worlds` entry."""
    o = over[k]
    ci = "" if k == "q_cvu" else f" [{o[what + '_ci_low']:+.3f}, {o[what + '_ci_high']:+.3f}]"
    return f"{k} {o[what + '_mean']:.3f}{ci}"


def _gaps_closed(over: dict) -> list[tuple[str, str, float]]:
    """(oracle, best recipe, share) for the gap from the best fixed recipe to `oracle` and from
    the best recipe with no more unsafe episodes than q_cvu to `oracle_safe`, over the worlds
    (a pair is left out without its rows)."""
    q = over["q_cvu"]
    recipes = [k for k in ("dr_only", "si_then_dr", "dr_then_ft") if k in over]
    out = []
    for oracle, pool in (("oracle", recipes),
                         ("oracle_safe", [k for k in recipes
                                          if over[k]["safety_violations"] <= q["safety_violations"]])):
        share = common.gap_closed(q, [over[k] for k in pool], over.get(oracle), digits=None)
        if share is not None:
            out.append((oracle, max(pool, key=lambda k: over[k]["final_J_mean"]), share))
    return out


def _gap_sentence(over: dict) -> str:
    """The share of the gap from the best fixed recipe to the oracle that q_cvu closes, over the
    worlds, plain and restricted to what respects the safety gate (empty without the rows)."""
    label = {"oracle": "the best fixed recipe", "oracle_safe": "the best recipe with no more unsafe episodes"}
    out = [f"{share:.0%} of the gap from {label[oracle]} ({best}) to `{oracle}`"
           for oracle, best, share in _gaps_closed(over)]
    return (" It closes " + " and ".join(out) + ".") if out else ""


def _budget(settings: dict) -> str:
    text = f"real {settings['budget_real']:g} h"
    if settings.get("pilot_episodes"):
        text += f", pilots of {settings['pilot_episodes']} episodes"
    if settings.get("lookahead_depth", 1) > 1:
        text += f", look-ahead {settings['lookahead_depth']}"
    return text


def _flips(rows: list[dict]) -> str:
    """q_cvu's mean flip probability over the worlds, first choice / later ones ("—" where not recorded)."""
    def mean(field):
        values = [r[field] for r in rows if r["strategy"] == "q_cvu" and r.get(field) is not None]
        return f"{sum(values) / len(values):.2f}" if values else "—"
    return f"{mean('flip_probability_first')} / {mean('flip_probability_later')}"


def _rivals_below(table: dict) -> tuple[list[str], int]:
    """An allocation table's non-oracle rivals of the rule, and how many are below it over the worlds
    with a paired interval that excludes zero."""
    rivals = [k for k in table["settings"]["strategies"] if k not in NOT_RIVALS]
    return rivals, sum(table["over_worlds"][k]["final_J_ci_high"] < 0 for k in rivals)


def _same_grid(a: dict, b: dict) -> bool:
    """Whether two allocation tables ran the same seeds on the same worlds (so they pair by seed)."""
    return all(a["settings"][k] == b["settings"][k] for k in ("seeds", "seed_start")) and (
        list(a["settings"]["worlds"]) == list(b["settings"]["worlds"]))


def allocation_overview(tables: list[tuple[str, dict, dict | None, dict | None]]) -> list[str]:
    """One line per allocation table (name, data, and its library-prior and one-fix-prior companions
    or None), over the worlds."""
    out = ["## Allocation quality at a glance", "",
           ("Each line sums up one of the tables below over its worlds and seeds: mean true J_real of the "
            "deployed policy; the best other non-oracle strategy, with the 95% paired interval of (it − q_cvu) "
            "over seeds and its unsafe episodes per campaign; how many of the non-oracle strategies are below "
            "the rule with an interval that excludes zero; and the share of the gap from the best fixed recipe "
            "to `oracle` (in brackets: from the best recipe with no more unsafe episodes to `oracle_safe`) that "
            "the rule closes. The flip probability is the rule's own account of how close its call was "
            "(1 − the posterior probability that its choice is the best), for its first choice and its later "
            "ones, averaged over the worlds; a value near 1 − 1/k says that the belief cannot tell k candidates "
            "apart. The last two columns give the rule's J under the library's default prior and under the "
            "team prior fitted with the one-fix structure, as `bayes-s2r prior --candidates --own-means "
            "--no-hierarchy` fits it (with the number of that table's non-oracle strategies below it with an "
            "interval that excludes zero)."), "",
           ("| budget | q_cvu | unsafe | best other strategy | rivals below | gap closed | flip probability "
            "(first / later) | q_cvu, library prior | q_cvu, one-fix team prior |"),
           "|---|---|---|---|---|---|---|---|---|"]
    for name, data, library, one_fix in tables:
        over = data["over_worlds"]
        rivals, below = _rivals_below(data)
        best = max(rivals, key=lambda k: over[k]["final_J_mean"])
        gaps = {oracle: share for oracle, _, share in _gaps_closed(over)}
        gap = (f"{gaps['oracle']:.0%}" if "oracle" in gaps else "—") + (
            f" ({gaps['oracle_safe']:.0%})" if "oracle_safe" in gaps else "")
        lib = f"{library['over_worlds']['q_cvu']['final_J_mean']:.3f}" if library else "—"
        fix = "—"
        if one_fix:
            fix_rivals, fix_below = _rivals_below(one_fix)
            fix = f"{one_fix['over_worlds']['q_cvu']['final_J_mean']:.3f} ({fix_below} of {len(fix_rivals)} below)"
        out.append(f"| {_budget(data['settings'])} | {over['q_cvu']['final_J_mean']:.3f} | "
                   f"{over['q_cvu']['safety_violations']:.1f} | {_paired(over, best, 'final_J')}; "
                   f"{over[best]['safety_violations']:.1f} | {below} of {len(rivals)} | {gap} | "
                   f"{_flips(data['results'])} | {lib} | {fix} |")
    return out + [""]


def _fitted_fits(data: dict | None) -> dict:
    """Per world, what `--gain-prior history` fitted ({} for a table run under a given prior)."""
    prior = (data or {}).get("settings", {}).get("gain_prior")
    return (prior.get("per_world") or {}) if isinstance(prior, dict) else {}


def _fitted_priors(data: dict | None) -> set[tuple[float, float | None]]:
    """The (candidate_scale, candidate_df) pairs an allocation table fitted per world."""
    return {(f["prior"]["candidate_scale"], f["prior"]["candidate_df"]) for f in _fitted_fits(data).values()}


def _prior_sentence(data: dict) -> str:
    fits = _fitted_fits(data)
    if not fits:
        return ""
    chosen = sorted(_fitted_priors(data), key=str)
    what = "; ".join(f"scale {sc:g}, " + ("normal" if df is None else f"Student-t ν = {df:g}") for sc, df in chosen)
    effects = sorted({f["effects"] for f in fits.values()})
    locs = sorted({f["prior"]["gain_loc"] for f in fits.values() if "gain_loc" in f["prior"]})
    mean = f"; effects' prior mean {'/'.join(f'{x:g}' for x in locs)} logits" if locs else ""
    return (" The belief-based strategies share the team's gain prior, fitted per world by "
            f"`bs.fit_gain_prior` from one past campaign on each other world ({'/'.join(map(str, effects))} "
            f"past effects): candidate level {what}{mean}.")


def _library_prior(data: dict, library: dict, name: str) -> list[str]:
    """The same table under the library's default prior, and the rule under the fitted prior
    paired against every other strategy under the library's (same seeds and worlds)."""
    if not _same_grid(data, library):
        return []
    ls = library["settings"]
    over = library["over_worlds"]
    rows = ([r for r in data["results"] if r["strategy"] == "q_cvu"] +
            [r for r in library["results"] if r["strategy"] not in NOT_RIVALS])
    cross = common.over_worlds(rows)
    rivals = [k for k in cross if k != "q_cvu"]
    return [(f"Under the library's default prior (`{COMMANDS[name + LIBRARY_PRIOR]}`, {_machine(library)}), over "
             "the worlds: " + ", ".join(f"{_paired(over, k, 'final_J')}; {over[k]['safety_violations']:.1f}"
                                        for k in ls["strategies"]) + "." + _gap_sentence(over)
             + " The toolkit's rule under the fitted prior against each other strategy under the library's "
             "(paired over seeds): " + ", ".join(_paired(cross, k, "final_J") for k in rivals) + "."), ""]


def _one_fix_prior(data: dict, one_fix: dict, name: str) -> list[str]:
    """The same table under the team prior fitted with the one-fix structure searched, as
    `bayes-s2r prior --candidates --own-means --no-hierarchy` fits it, and the rule under it paired against
    the rule under the table's own prior (same seeds and worlds)."""
    if not _same_grid(data, one_fix):
        return []
    fs = one_fix["settings"]
    over = one_fix["over_worlds"]
    fits = [f["prior"] for f in _fitted_fits(one_fix).values()]
    chosen = sorted({(p.get("fix_prob"), p.get("fix_loc"), p.get("fix_scale")) for p in fits}, key=str)
    what = "; ".join(f"each candidate the fix with probability {q:g}, its effect N({m:g}, {w:g}²) logits"
                     for q, m, w in chosen)
    rivals, below = _rivals_below(one_fix)
    return [(f"Under the team prior fitted with the one-fix structure searched too, as `bayes-s2r prior "
             f"--candidates --own-means --no-hierarchy` fits it (`{COMMANDS[name + ONE_FIX_PRIOR]}`, "
             f"{_machine(one_fix)}; per world: {what}), over "
             "the worlds: " + ", ".join(f"{_paired(over, k, 'final_J')}; {over[k]['safety_violations']:.1f}"
                                        for k in fs["strategies"])
             + f". There the rule is above {below} of the {len(rivals)} non-oracle strategies with a paired interval "
             "that excludes zero." + _gap_sentence(over) + " Its net utility, the same way: "
             + ", ".join(_paired(over, k, "net_utility") for k in fs["strategies"])
             + f". The rule under it against under the prior above, paired over seeds: final J {_paired_seeds(one_fix, data)}, "
             f"net utility {_paired_seeds(one_fix, data, 'net_utility_by_seed')}."), ""]


def _worlds_at_the_ceiling(data: dict, tol: float = 0.01) -> list[str]:
    """Worlds where a non-oracle strategy other than q_cvu has a mean J within `tol` of
    oracle_safe's (or above it): the ceiling a rule respecting the safety gate can reach."""
    out = []
    for world in data["settings"]["worlds"]:
        rows = {r["strategy"]: r["final_J_mean"] for r in data["results"] if r["world"] == world}
        rivals = [v for k, v in rows.items() if k not in NOT_RIVALS]
        if "oracle_safe" in rows and rivals and max(rivals) >= rows["oracle_safe"] - tol:
            out.append(world)
    return out


#: The per-strategy table: header, how to read the value from a row, format.
PER_STRATEGY_COLUMNS = (
    ("final J", lambda r: r["final_J_mean"], "{:.2f}"),
    ("spent real h", lambda r: r["spent"]["real"], "{:.2f}"),
    ("spent compute", lambda r: r["spent"]["compute"], "{:.3f}"),
    ("spent eng h", lambda r: r["spent"]["eng"], "{:.1f}"),
    ("unsafe episodes per campaign", lambda r: r["safety_violations"], "{:.1f}"),
    ("deployment check passed", lambda r: r["deploy_pass_rate"], "{:.0%}"),
    ("regret vs oracle", lambda r: r["regret_vs_oracle"], "{:.2f}"),
    ("regret vs oracle_safe", lambda r: r.get("regret_vs_oracle_safe"), "{:.2f}"),
)


def _cell(values: list, fmt: str) -> str:
    """The mean of `values` in `fmt` ("—" if any is missing; no "-0.00")."""
    if any(v is None for v in values):
        return "—"
    text = fmt.format(sum(values) / len(values))
    return text.lstrip("-") if float(text.rstrip("%")) == 0 else text


def _per_strategy(data: dict) -> list[str]:
    """Per strategy, the means over the worlds of what each row reports besides J."""
    worlds = len(data["settings"]["worlds"])
    out = [f"Per strategy, the mean over the {worlds} worlds of each world's mean over seeds:", "", "| strategy | " + " | ".join(h for h, _, _ in PER_STRATEGY_COLUMNS) + " |",
           "|---" * (len(PER_STRATEGY_COLUMNS) + 1) + "|"]
    for k in data["settings"]["strategies"]:
        rows = [r for r in data["results"] if r["strategy"] == k]
        cells = [_cell([get(r) for r in rows], fmt) for _, get, fmt in PER_STRATEGY_COLUMNS]
        out.append(f"| {k} | " + " | ".join(cells) + " |")
    return out + [""]


def allocation(data: dict, name: str = "allocation", title: str = "Allocation quality",
               note: str | None = None, library: dict | None = None, one_fix: dict | None = None) -> list[str]:
    s = data["settings"]
    out = _head(name, title, data) + ([note, ""] if note else []) + _stale(data)
    out += [(f"{len(s['worlds'])} hidden worlds × {s['seeds']} seeds × up to {s['rounds']} rounds, the same "
            f"budget for every strategy (real {s['budget_real']:g} h, compute {s['budget_compute']:g}, "
            f"eng {s['budget_eng']:g} h). Mean true J_real of the deployed policy; in brackets the 95% "
            "paired interval of (strategy − q_cvu) over seeds; unsafe robot episodes per campaign."
            + _prior_sentence(data)), ""]
    strategies = s["strategies"]
    out.append("| world | " + " | ".join(strategies) + " |")
    out.append("|---" * (len(strategies) + 1) + "|")
    for world in s["worlds"]:
        rows = {r["strategy"]: r for r in data["results"] if r["world"] == world}
        cells = []
        for k in strategies:
            r = rows[k]
            ci = "" if k == "q_cvu" else f" [{r['final_J_ci_low']:+.2f}, {r['final_J_ci_high']:+.2f}]"
            cells.append(f"{r['final_J_mean']:.2f}{ci}; {r['safety_violations']:.1f}")
        out.append(f"| {world} | " + " | ".join(cells) + " |")
    checks = data.get("summary", {})
    if checks:
        met = sum(bool(c.get("beats_every_non_oracle")) for c in checks.values())
        safe = sum(bool(c.get("beats_every_equally_safe")) for c in checks.values())
        tied = sum(bool(c.get("best_or_tied_among_equally_safe")) for c in checks.values())
        out += ["", (f"The toolkit's rule has strictly the best mean among the non-oracle strategies on {met} of "
                f"{len(checks)} worlds, and strictly the best among the strategies with no more unsafe "
                f"episodes than it on {safe} of {len(checks)}")]
        if any("best_or_tied_among_equally_safe" in c for c in checks.values()):
            out[-1] += f" (the best or tied for the best on {tied} of {len(checks)})"
        out[-1] += "."
        if "oracle_safe" in strategies:
            regret = {w: next(r["regret_vs_oracle_safe"] for r in data["results"]
                              if r["world"] == w and r["strategy"] == "q_cvu") for w in s["worlds"]}
            out[-1] += (" `oracle_safe` knows the true gains but keeps to the same safety gate; the toolkit's "
                        "regret against it: " + ", ".join(f"{w} {v:.2f}" for w, v in regret.items()) + ".")
            capped = _worlds_at_the_ceiling(data)
            out[-1] += (f" On {len(capped)} of {len(checks)} worlds some other non-oracle strategy already "
                        "reaches `oracle_safe`'s mean J (within 0.01)" + (f" ({', '.join(capped)})" if capped else "")
                        + ": there, beating every rival means beating an oracle that knows the true gains.")
        over = data["over_worlds"]  # per-seed world means, paired against q_cvu over seeds
        companion = _library_prior(data, library, name) if library else []
        rivals, below = _rivals_below(data)
        out += ["", ("Over the worlds (each seed's mean over the worlds; in brackets the 95% paired interval "
                     "of (strategy − q_cvu) over seeds; unsafe episodes per campaign, summed over worlds): "
                     + ", ".join(f"{_paired(over, k, 'final_J')}; {over[k]['safety_violations']:.1f}"
                                 for k in strategies)
                     + f". Over the worlds the toolkit's rule is above {below} of the {len(rivals)} non-oracle "
                     "strategies with a paired interval that excludes zero." + _gap_sentence(over)),
                "", *(_one_fix_prior(data, one_fix, name) if one_fix else []),
                "<details><summary>Net utility, spending, deployment checks and regret per strategy" + (
                    ", and the same table under the library's default prior"
                                                        if companion else "") + "</summary>",
                "", ("Net utility (final J − λ0·spent, what the rule maximises), the same way: "
                     + ", ".join(_paired(over, k, "net_utility") for k in strategies) + "."),
                ""] + _per_strategy(data) + companion + ["</details>"]
    return out + [""]


def allocation_scarce(data: dict, library: dict | None = None, one_fix: dict | None = None) -> list[str]:
    note = ("Robot time for two tries and no pilots: no strategy learns anything about an adaptation before it "
            "runs it. The rule's belief then barely tells the adaptations apart (its flip probability, in the "
            "overview above), so the order of the two tries is close to a coin flip for it, and a strategy whose "
            "fixed or cost-based order happens to suit this set of worlds can come out ahead. The next table "
            "adds what the rule would buy to break that tie.")
    return allocation(data, "allocation_scarce", "Allocation quality on a scarce budget", note, library, one_fix)


def allocation_scarce_pilots(data: dict, library: dict | None = None, g0: dict | None = None,
                             baseline: tuple[dict | None, dict | None] = (None, None),
                             one_fix: dict | None = None) -> list[str]:
    n = data["settings"]["pilot_episodes"]
    note = (f"The same candidates plus one pilot per adaptation that does not act on the robot: it builds "
            f"the adapted policy and evaluates it with {n} episodes per arm without deploying it (its gain is "
            "0; a later run of that adaptation reuses the policy). ")
    if data["settings"].get("continuation", "g0") == "rollout":
        note += ("The toolkit's rule (the campaign's `rollout` continuation) values a pilot by the rest of the "
                 "campaign it changes: in each simulated outcome of the pilot, the index policy runs the rounds "
                 "left on the belief the pilot leaves: it runs a further pilot while its knowledge gradient pays "
                 "for it and gives the last affordable try to the adaptation whose kept gain is largest. The G0 "
                 "look-ahead two decisions ahead, below the table, also reads pilots first. ")
    elif data["settings"].get("lookahead_depth", 1) == 2:
        note += ("The toolkit's rule looks two decisions ahead (`CampaignConfig(lookahead_depth=2)`): one "
                 "step ahead, a pilot followed by the run it points to looks no better than that run alone; "
                 "the second step shows the try the pilot saves. ")
    note += ("Only the toolkit's rule values what a pilot tells; the other strategies' rows are those of the table "
             "above, except Thompson sampling's, whose draw picks a pilot when it prices every adaptation below "
             "the pilot's cost.")
    out = allocation(data, "allocation_scarce_pilots", "Scarce budget, with pilot diagnoses", note, library, one_fix)
    return out + (_pilots_g0(data, g0) if g0 else []) + (_pilots_baseline(data, g0, *baseline) if all(baseline) else [])


def _seed_means(data: dict, strategy: str, field: str) -> np.ndarray:
    """Per seed, the mean over the worlds of a strategy's `field` (final_J_by_seed, ...)."""
    rows = [r for r in data["results"] if r["strategy"] == strategy]
    return np.mean([r[field] for r in rows], axis=0)


def _paired_seeds(a: dict, b: dict, field: str = "final_J_by_seed") -> str:
    """"a against b (difference [95% interval])" of the rule's per-seed means over the worlds."""
    x, y = _seed_means(a, "q_cvu", field), _seed_means(b, "q_cvu", field)
    lo, hi = common.t_interval(x - y)
    return f"{x.mean():.3f} against {y.mean():.3f} (difference {_diff(x.mean() - y.mean(), lo, hi)})"


def _pilots_baseline(data: dict, g0: dict | None, base: dict, g0_base: dict) -> list[str]:
    """Both continuations of the pilot table when the campaign starts with the starting policy's
    deployment record (J_real of the start known), paired by seed."""
    def zeros(table):  # campaigns ending at true J 0, the starting policy's J where the fix was never made
        return sum(int(x == 0.0) for r in table["results"] if r["strategy"] == "q_cvu" for x in r["final_J_by_seed"])

    total = sum(len(r["final_J_by_seed"]) for r in data["results"] if r["strategy"] == "q_cvu")
    return [(f"The same campaigns started with the starting policy's deployment record ({base['settings']['baseline_episodes']} "
             f"episodes, free of the budget: J_real of the start known; `{COMMANDS['allocation_scarce_pilots_baseline']}` "
             f"and `{COMMANDS['allocation_scarce_pilots_g0_baseline']}`, {_machine(base)}): the toolkit's rule reaches final "
             f"J {_paired_seeds(base, data)} without the record, and G0 two decisions ahead "
             f"{_paired_seeds(g0_base, base)} for the rule with the record. Without the record {zeros(data)} of the rule's "
             f"{total} campaigns end at true J 0 (G0 two decisions ahead: {zeros(g0) if g0 else '—'}), with it "
             f"{zeros(base)} (G0: {zeros(g0_base)}): not knowing where the start stands, the rule spends its tries on "
             "adaptations that do not fix it. A campaign is better started with the starting policy's deployment "
             "recorded (a `bs.DeploymentEval` in the ledger)."), ""]


def _pilots_g0(data: dict, g0: dict) -> list[str]:
    """The pilot table's rule with the G0 continuation two decisions ahead, paired by seed."""
    lines = [f"{what} {_paired_seeds(g0, data, field)}"
             for field, what in (("final_J_by_seed", "final J"), ("net_utility_by_seed", "net utility"))]
    paths = [p for r in g0["results"] if r["strategy"] == "q_cvu" for p in r["paths"]]
    piloted = np.mean([p.startswith("pilot_") for p in paths]) if paths else float("nan")
    return [(f"The same table with the rule's G0 continuation two decisions ahead (`{COMMANDS['allocation_scarce_pilots_g0']}`, "
             f"{_machine(g0)}): the toolkit's rule reaches {lines[0]}, and {lines[1]}, paired over seeds against the "
             f"campaign's default above; it opens with a pilot in {piloted:.0%} of its campaigns."), ""]


def decide(data: dict) -> list[str]:
    r = next(x for x in data["results"] if x.get("case") == "main")
    out = _head("decide", "Decision engine", data)
    out += ["| candidates × draws × outcomes | CVU | vs Python loop | vs bare matmul | warm decide() | compile |",
            "|---|---|---|---|---|---|",
            (f"| {r['candidates']} × {r['draws']} × {r['outcomes']} | {r['cvu_s'] * 1e3:.0f} ms | "
            f"{r['speedup_vs_reference']:.0f}× faster | {r['cvu_over_floor']:.1f}× | "
            f"{r['decide_warm_s'] * 1e3:.0f} ms | {r['compile_s']:.1f} s |"), ""]
    two = next((x for x in data["results"] if x.get("case") == "two_step"), None)
    if two is not None:
        out += [(f"Two decisions ahead (`lookahead_depth=2`), {two['candidates']} candidates × {two['draws']:,} "
                 f"draws × {two['outcomes']} outcomes, each next state carried by {two['inner_draws']} draws "
                 f"with {two['inner_samples']} outcomes of its own: warm decide() {two['decide_warm_s']:.2f} s "
                 f"(one step ahead: {two['one_step_warm_s'] * 1e3:.0f} ms)."), ""]
    return out


def fit(data: dict) -> list[str]:
    rows = {r["name"]: r for r in data["results"]}
    s = data["settings"]
    nf, nw = rows["nuts_first"], rows["nuts_warm"]
    repeats = s.get("repeats", 1)
    out = _head("fit", "Fitting the gains", data)
    out += [(f"{s['candidates']} candidates, {s['rows']:,} trial rows, {s['num_chains']} chains × "
            f"{s['num_samples']} draws; warm: median of {repeats} refits with other seeds. ESS and R-hat "
            "are the worst over all NUTS fits."), "",
            "| fit | wall (compile included) | warm | min bulk ESS | max R-hat |", "|---|---|---|---|---|"]
    ess = min(nf["ess_bulk_min"], nw["ess_bulk_min"])
    rhat = max(nf["rhat_max"], nw["rhat_max"])
    out.append(f"| NUTS | {nf['wall_s']:.1f} s | {nw['wall_s']:.1f} s | {ess:.0f} | {rhat:.3f} |")
    sf, sw = rows["svi_first"], rows["svi_warm"]
    diff = max(sf["max_abs_mean_diff_vs_nuts"], sw["max_abs_mean_diff_vs_nuts"])
    out.append(f"| SVI | {sf['wall_s']:.1f} s | {sw['wall_s']:.2f} s | means within {diff:.3f} of NUTS | |")
    big = rows.get("nuts_warm_big")
    if big:
        out += ["", (f"{big['rows']:,} rows: the fit takes {big['ratio_vs_rows_after_reading']:.2f}× the time "
                f"of {s['rows']:,} rows (evidence is reduced to sufficient statistics first); with reading "
                f"the records, a Python pass of {big['read_evidence_s']:.1f} s, {big['ratio_vs_rows']:.2f}×.")]
    return out + [""]


def _calibration(data: dict) -> str:
    r = next(x for x in data["results"] if x["name"] == "all")
    lo, hi = r["band"]
    return (f"{data['settings']['datasets']} datasets drawn from the model's prior, {r['intervals']} central 90% "
            f"intervals: coverage {r['coverage']:.1%} (acceptance band {lo:.1%}–{hi:.1%}; target 85–95%); "
            f"rank uniformity test p = {r['rank_test']['p_value']:.2f}; divergent transitions: {r['divergences']}")


def sbc(data: dict, team: dict | None = None, allocation: dict | None = None, one_fix: dict | None = None) -> list[str]:
    """Calibration under the library's prior and, with `team`, under a heavy-tailed team prior
    (said to be the allocation tables' when `allocation` fitted that one), and with `one_fix`
    under a prior with the one-fix structure."""
    out = _head("sbc_gains", "Calibration of the gains model", data)
    out += [f"Under the library's default prior: {_calibration(data)}.", ""]
    if team is not None:
        prior = GainPrior(**team["settings"]["prior"])
        df = "normal" if prior.candidate_df is None else f"Student-t ν = {prior.candidate_df:g}"
        fitted = (prior.candidate_scale, prior.candidate_df) in _fitted_priors(allocation)
        out += [(f"Under a team prior with candidate level scale {prior.candidate_scale:g}, {df}"
                 + (" (the one fitted for the allocation tables)" if fitted else "")
                 + f" (`{COMMANDS['sbc_gains_team_prior']}`, {_machine(team)}): {_calibration(team)}."), ""]
    if one_fix is not None:
        prior = GainPrior(**one_fix["settings"]["prior"])
        out += [(f"With the one-fix structure (`GainPrior(fix_prob={prior.fix_prob:g}, fix_loc={prior.fix_loc:g}, "
                 f"fix_scale={prior.fix_scale:g})`: each of the {one_fix['settings']['candidates']} candidates is the "
                 f"one fix with probability {prior.fix_prob:g}, summed out of the likelihood and drawn per draw; "
                 f"`{COMMANDS['sbc_gains_one_fix']}`, {_machine(one_fix)}): {_calibration(one_fix)}."), ""]
    return out


def rollouts(data: dict) -> list[str]:
    out = _head("rollouts", "Testbed rollouts", data)
    out += ["| environments | env-steps/s | Python loop over mj_step | ratio |", "|---|---|---|---|"]
    for r in data["results"]:
        out.append(f"| {r['envs']} | {r['steps_per_s']:,.0f} | {r['mujoco_loop_steps_per_s']:,.0f} | "
                   f"{r['ratio']:.1f}× |")
    return out + [""]


def locomotion(data: dict, *, name: str = "locomotion_gpu", title: str = "Locomotion rollouts on a GPU") -> list[str]:
    out = _head(name, title, data)
    if data.get("settings", {}).get("note"):
        out += [data["settings"]["note"] + ".", ""]
    out += ["| row | environments | env-steps/s | compile (s) | MJX / native |", "|---|---|---|---|---|"]
    mjx = None
    for r in data["rows"]:
        native = r["row"] != "mjx_dr"
        what = f"native mujoco.rollout, {r['threads']} threads" if native else "MJX, per-environment DR, MLP policy"
        compile_s = f"{r['compile_s']:.1f}" if "compile_s" in r else ""
        ratio = f"{mjx / r['env_steps_per_s']:.2f}×" if native and mjx else ""
        mjx = None if native else r["env_steps_per_s"]
        out.append(f"| {what} | {r['batch']:,} | {r['env_steps_per_s']:,.0f} | {compile_s} | {ratio} |")
    return out + [""]


def scaling(data: dict) -> list[str]:
    out = _head("scaling", "Devices", data)
    out += ["| devices | rollout env-steps/s | look-ahead | max abs diff vs one device |", "|---|---|---|---|"]
    for r in data["results"]:
        out.append(f"| {r['backend']} × {r['devices']} | {r['steps_per_s']:,.0f} | "
                   f"{r['lookahead_s'] * 1e3:.0f} ms | {r['max_abs_diff_vs_single']:.1g} |")
    notes = data.get("notes") or []
    return out + ([""] + [notes[0]] if notes else []) + [""]


CLI_CASES = {"help": "`bayes-s2r --help`", "bad_toml": "a malformed candidates TOML",
             "bad_role": "an unknown role in the candidates TOML",
             "bad_budget": "an unknown resource in `--budget`", "bad_utility": "an unknown `--utility`"}


def cli_errors(data: dict) -> list[str]:
    """How fast the command line answers a typo, each in a new process."""
    out = _head("cli_errors", "Command-line answers to a typo", data)
    out += ["| input | median wall time | exit code |", "|---|---|---|"]
    for r in data["results"]:
        out.append(f"| {CLI_CASES.get(r['case'], r['case'])} | {r['median_s']:.2f} s | {r['exit_code']} |")
    return out + ["", ("Each run is a new `python -m bayes_s2r` process, timed from start to exit; a typo is "
                       "reported before JAX loads."), ""]


DECIDE_CASES = {"cold": "first run: empty compile cache, nothing stored",
                "warm": "second run: compile cache, fit reused from the ledger",
                "warm_refit": "second run with `--refit`: compile cache only"}


def cli_decide(data: dict) -> list[str]:
    """Time to answer: `decide` on the example ledger, cold and warm, each in a new process."""
    out = _head("cli_decide", "Time to answer: `decide` on the example ledger", data)
    out += ["| run | median wall time | median CPU time | target |", "|---|---|---|---|"]
    for r in data["results"]:
        target = f"under {r['target_s']:g} s" if r.get("target_s") else ""
        out.append(f"| {DECIDE_CASES.get(r['case'], r['case'])} | {r['median_s']:.2f} s | "
                   f"{r['median_cpu_s']:.2f} s | {target} |")
    same = "the same" if data["settings"].get("same_decision_warm_as_cold") else "NOT the same"
    return out + ["", (f"`python -m bayes_s2r decide --ledger ... --candidates bayes_s2r/examples/candidates.toml`"
                       f" on the example trials, median of {data['settings']['repeats']}; the reused fit gave "
                       f"{same} decision as the fresh one. The CPU time is the work done (all threads); on a loaded "
                       "machine the wall time also counts the waits for a core."), ""]


WORLD_COLUMNS = (("net utility", "net_utility_mean", "{:.3f}"), ("final J", "final_J_mean", "{:.3f}"),
                 ("unsafe / campaign", "unsafe_mean", "{:.2f}"), ("probe-caught unsafe", "probe_unsafe_mean", "{:.2f}"),
                 ("decisions (with the stop)", "rounds_mean", "{:.1f}"))


def _paired_diffs(a: dict, b: dict, family: str, strategy: str, field: str = "net_utility",
                  b_strategy: str | None = None) -> np.ndarray:
    """a's `field` of `strategy` − b's of `b_strategy` (default the same) on each world both tables ran."""
    b_strategy = strategy if b_strategy is None else b_strategy
    rows = [_by_world(d, family, field) for d in (a, b)]
    worlds = sorted(w for w, s in rows[0] if s == strategy and (w, b_strategy) in rows[1])
    return np.array([rows[0][w, strategy] - rows[1][w, b_strategy] for w in worlds])


def _by_world(data: dict, family: str, field: str) -> dict[tuple[int, str], float]:
    """{(world, strategy): field} of a worlds table's family, stopping at once included: it keeps
    the start's J and spends nothing, so its net utility and final J are the start's J."""
    out = {(r["world"], r["strategy"]): r[field] for r in data["rows"] if r["family"] == family}
    if field in ("net_utility", "final_J"):
        out.update({(r["world"], bench_worlds.STOP): r["start_J"] for r in data["rows"]
                    if r["family"] == family and "start_J" in r})
    return out


def _diff_cell(diff: np.ndarray) -> str:
    """Paired differences as a table cell: "+0.012 [-0.003, +0.027] (200 worlds)"."""
    return f"{_diff(float(diff.mean()), *common.t_interval(diff))} ({len(diff)} worlds)"


def _stale(data: dict) -> list[str]:
    """What the table's settings say about the code it was measured with, as a paragraph."""
    note = data["settings"].get("rule_note")
    return [note, ""] if note else []


def _worlds_location(data: dict, fitted: dict) -> list[str]:
    """The rule under a team prior whose one mean is fitted too, against `data`'s (one mean at 0.3), by world."""
    out = [("The team prior's one mean: the same worlds with the effects' prior mean (one for all methods) fitted "
            "as well (`bs.fit_gain_prior(..., gain_locs=DEFAULT_LOCS)`, `--gain-prior history-loc`, "
            "`benchmarks/results/worlds_history_loc.json`; its parts' commands are in its settings), paired by world. "
            "It helps where gains are many and small and costs the most where one candidate is the fix, so one "
            "mean for all stays at 0.3 unless asked:"), "", *_stale(fitted),
           "| family | fitted mean | q_cvu, fitted − 0.3, 95% | mv_greedy − q_cvu, fitted | mv_greedy − q_cvu, 0.3 |",
           "|---|---|---|---|---|"]
    for family in data["summary"]:
        if family not in fitted["summary"]:
            continue
        loc = (fitted["settings"].get("team_priors") or {}).get(family, {}).get("gain_loc")
        cells = [_diff_of(d["summary"][family].get("mv_greedy", {}).get("minus_q_cvu")) for d in (fitted, data)]
        out.append(f"| {family} | {'' if loc is None else f'{loc:g}'} | "
                   f"{_diff_cell(_paired_diffs(fitted, data, family, 'q_cvu'))} | "
                   + " | ".join(cells) + " |")
    return out + [""]


def _worlds_library(library: dict) -> list[str]:
    """The rule against its rivals when the team brings no past campaigns (the library's prior)."""
    return _worlds_rivals(library, (
        f"Under the library's default prior, as a team with no past campaigns would decide "
        f"(`{COMMANDS['worlds_library_prior']}`, {library['settings']['worlds']} worlds per family, "
        f"{_machine(library)}): the rivals ahead of the rule with a paired interval that excludes 0 "
        "(with their unsafe episodes per campaign), the rule against β = 0, and the share of the gap closed."))


def _first_table(data: dict, pilots: dict | None) -> dict:
    """A worlds table with the pilots table's family beside it (what other priors are paired with)."""
    return {"summary": {**(pilots or {}).get("summary", {}), **data["summary"]},
            "rows": data["rows"] + (pilots or {}).get("rows", [])}


_SAME_PRIOR = ("Every strategy ran under that prior; the last column is the rule under it minus the rule under "
               "one pooled mean (the table above), paired by world.")


def _worlds_hierarchy(hierarchy: dict, base: dict) -> list[str]:
    """The rule and its rivals under a team prior whose whole effect hierarchy is sized by the history."""
    return _worlds_rivals(hierarchy, (
        "Under a team prior with the whole effect hierarchy sized by the history "
        "(`bs.fit_gain_prior(..., gain_locs=DEFAULT_LOCS, scale_hierarchy=True)`: the upper levels scaled with the "
        f"fitted candidate level and the mean fitted; `{COMMANDS['worlds_history_hierarchy']}`, "
        f"{hierarchy['settings']['worlds']} worlds per family, {_machine(hierarchy)}). " + _SAME_PRIOR
        + " The first belief is then close to the spread of the true gains where they are many and small, and the rule stops at once there as its rivals do; where one rare fix decides, the "
        "fitted mean of 0 makes the search look worth less. So the library does not size the hierarchy unless "
        "asked."), base)


def _worlds_skew(skew: dict, base: dict) -> list[str]:
    """The rule and its rivals under a team prior whose candidate level may be skewed."""
    chosen = "; ".join(f"{f} {p['candidate_skew']:g}" for f, p in (skew["settings"].get("team_priors") or {}).items())
    return _worlds_rivals(skew, (
        "Under a team prior whose candidate level may be skewed (`bs.fit_gain_prior(..., "
        "candidate_skews=DEFAULT_SKEWS)`: most effects a little below the mean and a few large gains; "
        f"`{COMMANDS['worlds_history_skew']}`, {skew['settings']['worlds']} worlds per family, {_machine(skew)}). "
        f"The skew chosen per family: {chosen}. " + _SAME_PRIOR + " The history's evidence prefers the skewed "
        "level in every family, but the rule's net utility moved in none with an interval that excludes 0, so the "
        "library searches the skew only when asked."), base)


def _worlds_pooled(pooled: dict, pooled_pilots: dict | None, base: dict, first: dict) -> list[str]:
    """The rule and its rivals under one pooled mean for all methods (`base`: its table with its
    pilots family, `pooled_pilots`), against the first table (`first`, likewise)."""
    notes = dict.fromkeys(d["settings"].get("rule_note") for d in (pooled, pooled_pilots) if d)
    table = {**base, "settings": {"rule_note": " ".join(n for n in notes if n) or None}}
    return _worlds_rivals(table, (
        "Under a team prior with one mean for all methods (gain_loc 0.3, `--gain-prior history-pooled`: "
        f"`{COMMANDS['worlds_pooled']}` and `{COMMANDS['worlds_pilots_pooled']}`, {pooled['settings']['worlds']} "
        f"worlds per family, {_machine(pooled)}; the parts they were merged from are in their settings). Every "
        "strategy ran under that prior; the last "
        "column is the rule under it minus the rule in the first table (the pilots table for `pilots`), paired by "
        "world. The variants below (the mean fitted, the hierarchy sized, a skewed level) change this prior and "
        "are paired with it."), first)


def _worlds_shrunk(shrunk: dict, first: dict, base: dict) -> list[str]:
    """The rule under each method's mean shrunk toward one mean by the evidence, against the rule
    under its own means (`first`) and under one pooled mean (`base`), paired by world."""
    out = [("Each method's mean shrunk toward the one mean by the evidence (`bs.fit_gain_prior(..., "
            "method_spreads=DEFAULT_METHOD_SPREADS)`: the methods' means drawn from N(0.3, ω²), ω chosen by the "
            "marginal likelihood with each method's mean integrated out, each method given its posterior mean; "
            f"`{COMMANDS['worlds_history_shrunk']}`, {shrunk['settings']['worlds']} worlds per family, "
            f"{_machine(shrunk)}). The rule alone ran under it, paired by world with the rule under each method's "
            "own mean (the first table) and under one pooled mean. Where ω = 0 is chosen the prior is the pooled "
            "one, and so are the campaigns. Shrinking takes back part of what the methods' own means cost where "
            "the methods do not differ, and gives up part of what they gain where fine-tuning is usually the fix; "
            "neither dominates, so each method's own mean stays the default."), "", *_stale(shrunk),
           *_merged_parts(shrunk["settings"]),
           "| family | means chosen (logits) | q_cvu net utility | shrunk − own means, 95% | shrunk − one mean, 95% |",
           "|---|---|---|---|---|"]
    diffs: dict[str, list] = {"own": [], "pooled": []}
    for family, summary in shrunk["summary"].items():
        locs = (shrunk["settings"].get("team_priors") or {}).get(family, {}).get("method_locs") or {}
        means = ", ".join(f"{h} {m:.2f}" for h, m in sorted(locs.items())) or "one mean (ω = 0)"
        for key, table in (("own", first), ("pooled", base)):
            diffs[key].append((family, _paired_diffs(shrunk, table, family, "q_cvu")))
        cells = [_diff_cell(diffs[key][-1][1]) for key in ("own", "pooled")]
        out.append(f"| {family} | {means} | {summary['q_cvu']['net_utility_mean']:.3f} | " + " | ".join(cells) + " |")
    for label, keep in (("all families together", lambda f: True), ("all but robot together", lambda f: f != "robot")):
        cells = [_diff_cell(np.concatenate([x for f, x in diffs[key] if keep(f)])) for key in ("own", "pooled")]
        out.append(f"| {label} | | | " + " | ".join(cells) + " |")
    return out + [""]


def _shared_k(table: dict, family: str) -> float:
    """The multiple of the library's shared levels in a table's team prior of `family`."""
    prior = (table["settings"].get("team_priors") or {}).get(family) or {}
    return prior.get("gain_scale", float("nan")) / GainPrior().gain_scale


def _worlds_shared(own: dict, shrunk_shared: dict, shrunk: dict, first: dict) -> list[str]:
    """The rule with the shared levels sized by the evidence, under each method's own mean (`own`)
    and under the shrunk means (`shrunk_shared`), each paired by world with the rule under the same
    means and the library's levels (the first table, `shrunk`)."""
    out = [("The levels a campaign's candidates share sized by the evidence (`bs.fit_gain_prior(..., "
            "shared_scales=DEFAULT_SHARED_SCALES)`: μ_A and the method level multiplied by the k whose marginal "
            "likelihood, with each past campaign's effects taken jointly, is largest), with each method's own mean "
            f"(`{COMMANDS['worlds_history_shared']}`) and with the shrunk means "
            f"(`{COMMANDS['worlds_history_shrunk_shared']}`); {own['settings']['worlds']} worlds per family, "
            f"{_machine(own)}. The rule alone ran under each, paired by world with the rule under the same means and "
            "the library's levels (k = 1): the first table and the shrunk means above."),
           "", *_stale(own), *_merged_parts(own["settings"]), *_stale(shrunk_shared),
           *_merged_parts(shrunk_shared["settings"]),
           ("| family | k chosen (own / shrunk means) | q_cvu, own means | own means: fitted k − k = 1, 95% | "
            "shrunk means: fitted k − k = 1, 95% |"), "|---|---|---|---|---|"]
    diffs: dict[str, list] = {"own": [], "shrunk": []}
    for family, summary in own["summary"].items():
        diffs["own"].append(_paired_diffs(own, first, family, "q_cvu"))
        diffs["shrunk"].append(_paired_diffs(shrunk_shared, shrunk, family, "q_cvu"))
        cells = " | ".join(_diff_cell(diffs[key][-1]) for key in ("own", "shrunk"))
        out.append(f"| {family} | {_shared_k(own, family):g} / {_shared_k(shrunk_shared, family):g} | "
                   f"{summary['q_cvu']['net_utility_mean']:.3f} | {cells} |")
    cells = " | ".join(_diff_cell(np.concatenate(diffs[key])) for key in ("own", "shrunk"))
    out.append(f"| all families together | | | {cells} |")
    return out + [""]


def _worlds_start(start: dict, first: dict) -> list[str]:
    """The rule started with the starting policy's deployment record, against the first table's rule."""
    episodes = start["settings"]["overrides"]["start_deployment_episodes"]
    out = [(f"The rule started with the starting policy's deployment record ({episodes} episodes, "
            "`CampaignConfig(start_deployment_episodes=...)`, free of the budget; "
            f"`{COMMANDS['worlds_start_record']}`, {start['settings']['worlds']} worlds per family, "
            f"{_machine(start)}), paired by world with the rule of the first table, which starts with J of the start "
            "unknown. These worlds start at J 0.2–0.6, near the 0.5 a decision assumes without the record, and the "
            "record changed little, except where fine-tuning is usually the fix: knowing the start, the rule read the "
            "pilots first less often and ended lower. On the pilot Brax worlds, whose starting policies mostly fail "
            "(J 0 in three of the five), it helped (above)."), "", *_stale(start), *_merged_parts(start["settings"]),
           "| family | q_cvu net utility | with − without the record, 95% | final J, with − without |", "|---|---|---|---|"]
    every = []
    for family, summary in start["summary"].items():
        every.append(_paired_diffs(start, first, family, "q_cvu"))
        dj = _paired_diffs(start, first, family, "q_cvu", "final_J").mean()
        out.append(f"| {family} | {summary['q_cvu']['net_utility_mean']:.3f} | {_diff_cell(every[-1])} | {dj:+.3f} |")
    out.append(f"| all families together | | {_diff_cell(np.concatenate(every))} | |")
    return out + [""]


def _worlds_rivals(table: dict, intro: str, main: dict | None = None, level: bool = False) -> list[str]:
    """Per family of a worlds table run under another prior: the rule, the rivals ahead of it,
    (with `level`) the rivals it is not shown to be above, β = 0, the gap closed, and (given
    `main`) the rule against the main table's."""
    out = [intro, "", *_stale(table), *_merged_parts(table["settings"]),
           "| family | q_cvu net utility | unsafe | rivals ahead |" + (" not shown below q_cvu |" if level else "")
           + " q_beta0 − q_cvu, 95% | gap closed |" + (" q_cvu − first table's, 95% |" if main else ""),
           "|---|---|---|---|---|---|" + ("---|" if level else "") + ("---|" if main else "")]
    for family, summary in table["summary"].items():
        q = summary["q_cvu"]
        rivals = {name: row for name, row in summary.items()
                  if not name.startswith("_") and name not in ("q_cvu", "oracle_safe")}
        ahead = [f"{name} {row['minus_q_cvu']['mean']:+.3f}; {row['unsafe_mean']:.2f}" for name, row in rivals.items()
                 if row["minus_q_cvu"]["ci95"][0] > 0]
        even = [f"{name} {row['minus_q_cvu']['mean']:+.3f}" for name, row in rivals.items()
                if row["minus_q_cvu"]["ci95"][0] <= 0 <= row["minus_q_cvu"]["ci95"][1]]
        b0 = _diff_of(summary.get("q_beta0", {}).get("minus_q_cvu"))
        gap = summary.get("_gap") or {}
        closed = "" if gap.get("gap_closed") is None else f"{gap['gap_closed']:.0%} (from {gap['best_rival']})"
        against = ""
        if main and family in main["summary"]:
            against = f" {_diff_cell(_paired_diffs(table, main, family, 'q_cvu'))} |"
        out.append(f"| {family} | {q['net_utility_mean']:.3f} | {q['unsafe_mean']:.2f} | {', '.join(ahead) or 'none'} |"
                   + (f" {', '.join(even) or 'none'} |" if level else "") + f" {b0} | {closed} |" + against)
    return out + [""]


def _merged_parts(settings: dict) -> list[str]:
    """How a merged worlds table was put together, part by part."""
    out = []
    parts = settings.get("parts", [])

    def worlds(part):  # "worlds 0–119", naming the families when the parts ran different ones
        some = part.get("families") and any(p.get("families") != part["families"] for p in parts)
        return (f"worlds {part['first_world']}–{part['first_world'] + part['worlds'] - 1}"
                + (f" of {', '.join(part['families'])}" if some else ""))

    for part in parts[1:]:
        what = (f"a re-run of {', '.join(part['strategies'])} on {', '.join(part['replaces'])}"
                if part.get("strategies") else f"a re-run of {', '.join(part['replaces'])}") if part.get("replaces") else (
            worlds(part))
        out += [f"Merged (`bench_worlds.py --merge`) with {what}: `{part['command']}`.", ""]
    for part in parts:
        if part.get("note"):
            out += [f"Note on {worlds(part)}: {part['note']}.", ""]
    if settings.get("note"):
        out += [f"Note: {settings['note']}.", ""]
    return out


def _family_tables(data: dict) -> list[str]:
    """Per family of a worlds table: each strategy's columns and its net utility minus the rule's."""
    out = []
    for family, summary in data["summary"].items():
        gap = summary.get("_gap") or {}
        closed = gap.get("gap_closed")
        closed = None if closed is None else round(closed, 2) + 0.0  # no "-0%"
        out += [f"**{family}**" + (f": the rule closes {closed:.0%} of the gap from `{gap['best_rival']}` (the best "
                                   "non-oracle strategy with no more unsafe episodes) to `oracle_safe`."
                                   if closed is not None else ""), "",
                "| strategy | " + " | ".join(c[0] for c in WORLD_COLUMNS) + " | minus q_cvu, 95% |",
                "|---" * (len(WORLD_COLUMNS) + 2) + "|"]
        for name, row in summary.items():
            if name.startswith("_"):
                continue
            cell = _diff_of(row.get("minus_q_cvu"))
            out.append(f"| {name} | " + " | ".join(fmt.format(row[key]) for _, key, fmt in WORLD_COLUMNS)
                       + f" | {cell} |")
        out.append("")
    return out


def _worlds_pilots(pilots: dict) -> list[str]:
    """The family where pilots decide: read a few candidates cheaply, then make the one try that counts."""
    return [(f"Pilots (`{COMMANDS['worlds_pilots']}`, {pilots['settings']['worlds']} worlds, {_machine(pilots)}): "
             "one fix among near-zero and harmful adaptations, budget for about two tries and a cheap pilot of "
             "every adaptation. `q_cvu@g0_depth2` is the rule with the one-step G0 two decisions ahead in place "
             "of the rollout."), ""] + _merged_parts(pilots["settings"]) + _family_tables(pilots)


def worlds(data: dict, fitted: dict | None = None, library: dict | None = None,
           pilots: dict | None = None, hierarchy: dict | None = None, skew: dict | None = None,
           pooled: dict | None = None, pooled_pilots: dict | None = None, shrunk: dict | None = None,
           start: dict | None = None, shared: dict | None = None, shrunk_shared: dict | None = None) -> list[str]:
    """Random-world families: each strategy's net utility against the rule's, paired over worlds."""
    settings = data["settings"]
    first = _first_table(data, pilots)
    base = _first_table(pooled, pooled_pilots) if pooled else first  # what the variants' priors change
    out = _head("worlds", "Allocation quality on random worlds", data) + [
        (f"{settings['worlds']} worlds per family drawn by `benchmarks/worlds.py` (families: "
         f"{', '.join(settings['families'])}), {settings['rounds']} rounds, no execution evidence at the start, "
         f"gain prior: {_gain_prior_text(settings)}. Net utility is final J − λ0·spent at the prices "
         f"{', '.join(f'{k} {v:g}' for k, v in settings['prices'].items())}; the interval is the 95% paired t-interval over worlds of the strategy's net "
         "utility minus the rule's (`q_cvu`). The row `stop_at_once` keeps the starting policy and spends nothing: its net "
         "utility is the start's J, it needs no campaign, and it counts among the rivals in every table."), ""]
    out += _merged_parts(settings)
    out += _family_tables(data)
    return (out + (_worlds_pooled(pooled, pooled_pilots, base, first) if pooled else [])
            + (_worlds_shrunk(shrunk, first, base) if shrunk and pooled else [])
            + (_worlds_shared(shared, shrunk_shared, shrunk, first) if shared and shrunk_shared and shrunk else [])
            + (_worlds_start(start, first) if start else [])
            + (_worlds_location(base, fitted) if fitted else [])
            + (_worlds_hierarchy(hierarchy, base) if hierarchy else [])
            + (_worlds_skew(skew, base) if skew else [])
            + (_worlds_library(library) if library else []) + (_worlds_pilots(pilots) if pilots else []))


def worlds_fresh(data: dict, without: dict | None = None) -> list[str]:
    """Families drawn after `bayes-s2r prior` began to search the one-fix structure by default:
    every strategy under that prior, and the test set before they ran, the rule under it against
    the rule under the fit without it (`without`)."""
    settings = data["settings"]
    out = _head("worlds_fresh", "Allocation quality on families drawn after the team prior's default changed", data) + [
        (f"{settings['worlds']} worlds per family of families drawn after `bayes-s2r prior` began to search the "
         f"one-fix structure by default (`HELD_OUT` in `benchmarks/worlds.py`: {', '.join(settings['families'])}), "
         f"{settings['rounds']} rounds, no execution evidence at the start, gain prior: {_gain_prior_text(settings)}. "
         "Columns and intervals as in the random-world tables above."), ""]
    out += _merged_parts(settings) + _family_tables(data)
    if without is None:
        return out
    diffs = {f: _paired_diffs(data, without, f, "q_cvu") for f in data["summary"] if f in without["summary"]}
    lost = [f for f, d in diffs.items() if common.t_interval(d)[1] < 0]
    verdict = (f"not met: the rule lost in {', '.join(lost)}" if lost else
               "met: it lost in neither")
    return out + [(f"The test set before these families ran: the rule under this prior should not lose to the rule "
                   f"under the fit without the one-fix search (`{COMMANDS['worlds_fresh_history']}`, "
                   f"{_machine(without)}) with an interval excluding zero in either. Paired by world, with − "
                   "without: " + "; ".join(f"{f} {_diff_cell(d)}" for f, d in diffs.items())
                   + f". The test is {verdict}."), ""]


def _rule_worlds(table: dict, family: str) -> int:
    """How many worlds of `family` the rule ran in `table`."""
    return len({r["world"] for r in table["rows"] if r["family"] == family and r["strategy"] == "q_cvu"})


def _pooled_shared(tables: list[dict | None], shared: list[dict | None]) -> list[str]:
    """The rule with the shared levels sized by the evidence minus the rule, pooled over every
    family both kinds of table ran (a world is one pair)."""
    if any(t is None for t in (*tables, *shared)):
        return []
    diffs, families = [], []
    for sh in shared:
        for family in sh["summary"]:
            if family in families:
                raise ValueError(f"family {family!r} is in two shared-levels tables: merge them or pass one")
            base = [t for t in tables if family in t["summary"] and "q_cvu" in t["summary"][family]]
            if len(base) != 1:
                raise ValueError(f"family {family!r} has {len(base)} tables of the rule to pair with, expected one")
            diffs.append(_paired_diffs(sh, base[0], family, "q_cvu"))
            worlds = [_rule_worlds(t, family) for t in (sh, base[0])]
            if not worlds[0] == worlds[1] == len(diffs[-1]):
                raise ValueError(f"family {family!r}: {worlds[0]} worlds with the shared levels and {worlds[1]} "
                                 f"without, {len(diffs[-1])} paired; expected the same worlds in both")
            families.append(family)
    both = np.concatenate(diffs)
    return [(f"Pooled over the {len(families)} families ({', '.join(families)}; for the families of the first "
             f"tables, `{COMMANDS['worlds_history_shared']}` against them), the rule with the shared levels sized by "
             f"the evidence minus the rule: {_diff_cell(both)}."), ""]


def worlds_held_out(data: dict, shared: dict | None = None, *pooled) -> list[str]:
    """Families drawn after the rule's defaults were set: the rule on shapes it was not tuned to.
    `pooled`: the first tables (worlds, worlds_pilots) and their rule-only run with the shared
    levels sized (worlds_history_shared), for the pooled difference over every family."""
    settings = data["settings"]
    out = _head("worlds_held_out", "Allocation quality on held-out families", data) + [
        (f"{settings['worlds']} worlds per family of families drawn after the rule's defaults were set and never "
         f"used to choose them (`HELD_OUT` in `benchmarks/worlds.py`: {', '.join(settings['families'])}), "
         f"{settings['rounds']} rounds, no execution evidence at the start, gain prior: "
         f"{_gain_prior_text(settings)}. Columns and intervals as in the random-world tables above."), ""]
    out += _merged_parts(settings) + _family_tables(data)
    if shared is None:
        return out
    out += [(f"The rule with the levels a campaign's candidates share sized by the evidence "
             f"(`{COMMANDS['worlds_held_out_shared']}`, {_machine(shared)}), against the rule above and the best "
             "rival of each family's table, paired by world:"), "", *_stale(shared), *_merged_parts(shared["settings"]),
            ("| family | shared levels chosen (× the library's) | decisions (with the stop) | q_cvu − q_cvu above, 95% "
             "| best rival − q_cvu, 95% |"), "|---|---|---|---|---|"]
    for family in shared["summary"]:
        rival = data["summary"][family]["_gap"]["best_rival"]
        out.append(f"| {family} | {_shared_k(shared, family):g} | {shared['summary'][family]['q_cvu']['rounds_mean']:.1f} "
                   f"| {_diff_cell(_paired_diffs(shared, data, family, 'q_cvu'))} "
                   f"| {rival} {_diff_cell(_paired_diffs(data, shared, family, rival, b_strategy='q_cvu'))} |")
    out.append("")
    if pooled:
        out += _pooled_shared([data, *pooled[:-1]], [shared, pooled[-1]])
    return out


def _variant_section(name: str, dp_name: str | None = None):
    """The section of the worlds table `name` of one rule option: it reads that table, then the DP
    table `dp_name` and the current rule's (where `dp_name` is given), then the default's tables."""

    def with_dp(data: dict, dp: dict | None, dp_default: dict | None, *defaults: dict) -> list[str]:
        return _rule_variant(name, dp_name, data, dp, dp_default, *defaults)

    def without_dp(data: dict, *defaults: dict) -> list[str]:
        return _rule_variant(name, None, data, None, None, *defaults)

    return without_dp if dp_name is None else with_dp


#: What a table of a rule option not taken as the default says of it.
_UNLESS = " It would be the default only if no family lost with an interval excluding 0."


def _margin_words(k: float) -> tuple[str, str, str]:
    return (f"The fortified rollout: `rollout_margin={k:g}`",
            (f"The rule with `DecideConfig(rollout_margin={k:g})`: a try or the stop other than the rollout's base "
            f"policy's own choice is made only when its Q leads that choice's by more than {k:g} Monte-Carlo standard "
            "error of their paired difference (`docs/decide.md`)." + _UNLESS), "margin")


def _draws_words(value: str) -> tuple[str, str, str]:
    if value != "draws":
        raise ValueError(f"no words for base_index={value!r}")
    return ("The draws' shape in the rollout's base policy: `base_index=\"draws\"`",
            ("The rule with `DecideConfig(base_index=\"draws\")`: the rollout's base policy ranks and values its tries "
            "with the shape of the posterior's draws instead of a normal of their mean and sd (`docs/decide.md`)."
             + _UNLESS), "draws")


def _diagnosis_words(k: float) -> tuple[str, str, str]:
    default = CAMPAIGN_DECIDE.get("diagnosis_margin", 0.0)
    if k == 0 and default > 0:  # the table is the campaign's rule as it was before the margin
        return ("Diagnoses beyond their noise: the rule without its margin, `diagnosis_margin=0`",
                ("A campaign's rule makes a diagnosis (a pilot, a safety probe) where no try beats the stop only "
                 f"when the diagnosis's Q leads the stop's by more than {default:g} Monte-Carlo standard error of "
                 "its estimate (`CAMPAIGN_DECIDE`, `docs/decide.md`). This table is the rule with `diagnosis_margin=0`, the "
                 "plain argmax Q and the campaign's default before; a negative difference is what the margin "
                 "gains. The margin became the default because no family lost with it with an interval "
                 "excluding 0."), "no margin")
    return (f"Diagnoses beyond their noise: `diagnosis_margin={k:g}`",
            (f"The rule with `DecideConfig(diagnosis_margin={k:g})`: where no try beats the stop, a diagnosis (a pilot, "
            f"a safety probe) is made only when its Q leads the stop's by more than {k:g} Monte-Carlo standard error "
            "of its estimate (`docs/decide.md`)." + _UNLESS), "margin")


#: The words for a table of the rule with one `DecideConfig` option changed, by that option.
_VARIANT_WORDS = {"rollout_margin": _margin_words, "base_index": _draws_words, "diagnosis_margin": _diagnosis_words}


def _variant_words(overrides: dict) -> tuple[str, str, str]:
    """(heading, what the rule does differently, a word for its columns) for a table run with
    `overrides` of the rule's `DecideConfig`."""
    for field, words in _VARIANT_WORDS.items():
        if field in overrides:
            return words(overrides[field])
    raise ValueError(f"no words for a rule run with {overrides!r}")


def _default_table(family: str, defaults: tuple) -> dict:
    """The one table of `defaults` (the default rule's tables) that holds `family`."""
    found = [d for d in defaults if d and family in d["summary"]]
    if len(found) != 1:
        raise ValueError(f"family {family!r} has {len(found)} default tables to pair with, expected one")
    return found[0]


def _paths_changed(a: dict, b: dict, family: str) -> int:
    """How many of `family`'s worlds the rule took another sequence of decisions on in `a` than in `b`."""
    paths = [{r["world"]: r["path"] for r in d["rows"] if r["family"] == family and r["strategy"] == "q_cvu"}
             for d in (a, b)]
    return sum(paths[0][w] != paths[1][w] for w in paths[0] if w in paths[1])


def _rule_variant(name: str, dp_name: str | None, data: dict, dp: dict | None, dp_default: dict | None,
                  *defaults: dict) -> list[str]:
    """The rule with one option changed against the default rule, paired by world on each family
    of `data` with the one of `defaults` (the tables whose rule rows are the default's) that holds
    it, and on the exactly solved problems."""
    heading, what, short = _variant_words(data["settings"]["overrides"])
    families = data["summary"]
    every_family = set().union(*(d["summary"] for d in defaults if d))
    which = "every family" if set(families) == every_family else ", ".join(families)
    out = [f"## {heading} on {which}", "", f"`{COMMANDS[name]}` ({_machine(data)})", "",
           (f"{what} Paired by world with the default rule of the tables above; the last column counts the "
            "campaigns whose sequence of decisions changed."), "",
           *_stale(data), *_merged_parts(data["settings"]),
           f"| family | q_cvu, {short} | {short} − default, 95% | campaigns whose path changed |", "|---|---|---|---|"]
    every = []
    for family, summary in data["summary"].items():
        default = _default_table(family, defaults)
        every.append(_paired_diffs(data, default, family, "q_cvu"))
        out.append(f"| {family} | {summary['q_cvu']['net_utility_mean']:.3f} | {_diff_cell(every[-1])} | "
                   f"{_paths_changed(data, default, family)} of {len(every[-1])} |")
    together = "all families" if which == "every family" else "these families"
    out += [f"| {together} together | | {_diff_cell(np.concatenate(every))} | |", ""]
    if dp is None or dp_default is None:
        return out
    rules = dp["settings"]["rules"]
    out += [(f"On the exactly solved small problems (`{COMMANDS[dp_name]}`, {_machine(dp)}), each rule's "
             "value as a share of the Bayes-optimal value (in brackets the share of problems within 5%), with the "
             f"{short} and without it (the current rule's table above):"), "",
            *([f"Note: {dp['settings']['note']}.", ""] if dp["settings"].get("note") else []),
            "| variant | " + " | ".join(f"{r}, {short} | {r}, default" for r in rules) + " |",
            "|---" * (2 * len(rules) + 1) + "|"]
    for variant, result in dp["results"].items():
        cells = []
        for r in rules:
            for d in (result, dp_default["results"].get(variant)):
                v = None if d is None else d["rules"].get(r)
                cells.append(_dp_share(v))
        out.append(f"| {variant} | " + " | ".join(cells) + " |")
    return out + [""]


rollout_margin = _variant_section("worlds_rollout_margin", "dp_ceiling_margin")
rollout_margin_half = _variant_section("worlds_rollout_margin_half", "dp_ceiling_margin_half")
base_index_draws = _variant_section("worlds_base_index_draws")
diagnosis_margin = _variant_section("worlds_without_diagnosis_margin")


def _gain_prior_text(settings: dict) -> str:
    """The table's gain prior in words, with each method's fitted mean where it has them."""
    name = settings.get("gain_prior", "library")
    means = {f: p["method_locs"] for f, p in (settings.get("team_priors") or {}).items() if p and p.get("method_locs")}
    if not means:
        return name
    # "history" is the fit `bayes-s2r prior --candidates` made before the one-fix search became its default
    cli = {"history": ", `bayes-s2r prior --candidates --no-one-fix`",
           "history-fix-method": (", `bayes-s2r prior --candidates`: one fix per campaign searched too, its "
                                  "probability by method")}.get(name, "")
    return (f"{name} (each family's team prior fitted from past campaigns on other worlds of it, with each "
            f"method's own mean{cli}; the means chosen, in logits: "
            + "; ".join(f"{f}: " + ", ".join(f"{h} {m:g}" for h, m in sorted(locs.items())) for f, locs in means.items())
            + ")")


def _dp_share(value: dict | None) -> str:
    """A rule's exact value as a share of the DP's, with the share of problems within 5% ("" without one)."""
    return "" if value is None else f"{value['ratio_of_means']:.3f} ({value['share_within_5pct']:.0%})"


def _dp_rule(data: dict, rule: dict) -> list[str]:
    """The current rule re-measured on the same problems as the table above."""
    rules = rule["settings"]["rules"]
    out = [(f"The current rule on the same problems (`{COMMANDS['dp_ceiling_rule']}`, {_machine(rule)}), against "
            "its columns above:"), "", "| variant | " + " | ".join(f"{r} now | {r} above" for r in rules) + " |",
           "|---" * (2 * len(rules) + 1) + "|"]
    for variant, result in rule["results"].items():
        cells = []
        for r in rules:
            now, before = result["rules"][r], data["results"].get(variant, {}).get("rules", {}).get(r)
            cells += [_dp_share(now), _dp_share(before)]
        out.append(f"| {variant} | " + " | ".join(cells) + " |")
    return out + [""]


def dp_ceiling(data: dict, rule: dict | None = None) -> list[str]:
    """The rule's exact value as a share of the Bayes-optimal value, on small grid problems."""
    settings = data["settings"]
    rules = settings["rules"]
    out = _head("dp_ceiling", "The Bayes-optimal ceiling on small problems", data) + [
        (f"{settings['problems']} random problems per variant, {settings['candidates']} candidates, "
         f"{settings['rounds']} decisions, gains on a grid ({settings['levels']}); each rule's exact expected "
         "value over the outcome tree as a share of the dynamic program's (ratio of means; in brackets the "
         "share of problems within 5%). `q_cvu` is the rule with `decide`'s default transition "
         "(`HeadroomTransition`: each try adapts the deployed policy), which these problems do not follow: "
         "their tries are alternatives, or their gains add up. `q_cvu+tr` is the rule told the transition the "
         "problems follow (`AlternativesTransition`, or `NoTransition` when gains add up), as a campaign that "
         "declares `transition_rule` is; the variants are described in `benchmarks/dp_ceiling.py`."), "",
        *_stale(data),
        "| variant | DP value | " + " | ".join(rules) + " |", "|---" * (len(rules) + 2) + "|"]
    for variant, result in data["results"].items():
        cells = [_dp_share(result["rules"][r]) for r in rules]
        out.append(f"| {variant} | {result['dp_mean']:.4f} | " + " | ".join(cells) + " |")
    out.append("")
    ceilings = {v: r["ceiling"] for v, r in data["results"].items() if "ceiling" in r}
    if ceilings:
        out += [
            (f"The ceiling on the share of the gap closed (`{data.get('ceiling_command', COMMANDS['dp_ceiling'])}`): "
             "`oracle_safe` knowing the true gains (greedy on true gain − cost among the feasible tries; it pays "
             "for what it runs and the noisy evaluation still decides adoption), the best policy that knows the "
             "gains (clairvoyant), the Bayes-optimal value (DP), the best non-oracle baseline (Weitzman's index "
             "on the prior's marginals, the index on the node posterior, one-step look-ahead, the library's "
             "`pandora` and `q_beta0`), and the share of the gap from that baseline to `oracle_safe` that the "
             "DP closes, (DP − baseline)/(oracle − baseline), with the number of problems where the DP closes "
             "at least 60% of that problem's gap. No policy that does not see the gains closes more."), "",
            ("| variant | oracle_safe | clairvoyant | DP | Weitzman index | best baseline | gap closed by the DP "
             "| problems ≥ 60% |"), "|---|---|---|---|---|---|---|---|"]
        for variant, c in ceilings.items():
            best = c["best_baseline"]
            out.append(f"| {variant} | {c['oracle_mean']:.4f} | {c['clairvoyant_mean']:.4f} | {c['dp_mean']:.4f} | "
                       f"{c['baseline_means']['index_prior']:.4f} | {best} {c['baseline_means'][best]:.4f} | {c['dp_gap_closed']:.1%} | "
                       f"{c['problems_dp_closes_60pct']} of {c['problems_with_a_gap']} |")
        out.append("")
    return out + (_dp_rule(data, rule) if rule else [])


def _belief_rows(data: dict, rule: str) -> list[str]:
    beliefs = data["settings"]["beliefs"]
    out = []
    for truth, result in data["results"].items():
        entry = result["rules"][rule]
        cells = [f"{entry[b]['share_of_dp']:.3f}" for b in beliefs[:1]]
        for b in beliefs[1:]:  # the values are a few hundredths of J: four decimals
            d = entry[b]["minus_true_belief"]
            cells.append(f"{entry[b]['share_of_dp']:.3f} ({d['mean']:+.4f} [{d['ci95'][0]:+.4f}, {d['ci95'][1]:+.4f}])")
        out.append(f"| {truth} | {rule} | " + " | ".join(cells) + " |")
    return out


def belief_structure(data: dict, library: dict | None = None) -> list[str]:
    """What a belief that links the candidates wrongly costs, exactly, on small problems."""
    beliefs = data["settings"]["beliefs"]
    out = _head("belief_structure", "What a wrong link between candidates costs", data) + [
        (f"{data['settings']['problems']} problems per truth, {data['settings']['candidates']} candidates of which "
         "the first two are siblings (same method), 3 decisions. Each rule decides from the posterior of a belief "
         "and is valued exactly under the truth: its mean value as a share of the DP's, and in brackets its "
         "paired difference (J units) from the same rule deciding from the truth's own posterior. `one_fix`: at "
         "most one candidate is the fix (siblings anti-correlated); `noisy`: the siblings share a component; "
         "`pandora`: independent. `independent` is the product of the truth's marginals; `coupled@κ` pulls the "
         "siblings together as a shared method level does, with the truth's marginals kept. The truths and beliefs are described in "
         "`benchmarks/bench_belief_structure.py`."), "", *_stale(data),
        "| truth | rule | " + " | ".join(beliefs) + " |", "|---" * (len(beliefs) + 2) + "|"]
    for rule in data["settings"]["rules"]:
        out += _belief_rows(data, rule)
    out.append("")
    if library:
        out += [(f"The library's rule (`q_cvu+tr`: rollout look-ahead, alternatives transition; "
                 f"`{COMMANDS['belief_structure_library']}`, {_machine(library)}):"), "", *_stale(library),
                "| truth | rule | " + " | ".join(library["settings"]["beliefs"]) + " |",
                "|---" * (len(library["settings"]["beliefs"]) + 2) + "|", *_belief_rows(library, "q_cvu+tr"), ""]
    return out


def prior_check(data: dict, *tables: dict | None) -> list[str]:
    """Each family's team priors checked against its past campaigns, next to what a first try
    truly brings there and what the shared levels sized by the history did to the rule."""
    priors = data["settings"]["priors"]
    shared = [t for t in tables if t is not None]
    defaults, by_shared = shared[:3], shared[3:]
    out = _head("prior_check", "Do the team priors predict their own past campaigns?", data) + [
        ("Each family's 12 past campaigns (`worlds.history`) against each prior a table ran under "
         "(`bs.check_gain_prior`): the share of past effects inside their central 90% prior predictive intervals "
         "(binomial test p in brackets; a prior wider than the history holds more), the mean PIT (0.5 when the prior "
         "is centred on the history), and the gain per try the prior expects (E[max(ΔJ, 0)] at the past control "
         "levels). `true gain`: what a first try truly brings in the family (the same mean over the adaptations of "
         f"its first {data['settings']['worlds']} benchmark worlds). The last column is the rule's net utility "
         "under `history-shared` minus under `history`, paired by world (the tables of the sections above)."), "",
        "| family | true gain | " + " | ".join(f"{p}: inside 90%, mean PIT, gain expected" for p in priors)
        + " | q_cvu history-shared − history, 95% |", "|---" * (len(priors) + 3) + "|"]
    for r in data["results"]:
        cells = [f"{c['coverage']:.0%} (p {c['p_value']:.2g}), {c['mean_pit']:.2f}, {c['gain_expected']:.3f}"
                 for c in (r["priors"][p] for p in priors)]
        diff = "—"
        for variant in by_shared:
            for default in defaults:
                d = _paired_diffs(variant, default, r["family"], "q_cvu")
                if len(d) > 1:
                    diff = _diff_cell(d)
        out.append(f"| {r['family']} | {r['true_gain']:.3f} | " + " | ".join(cells) + f" | {diff} |")
    return out + [""]


def one_fix(data: dict, rivals: dict | None, *defaults: dict | None) -> list[str]:
    """The rule under the team prior with the one-fix structure searched, paired by world with the
    rule under the default team prior (the table of `defaults` that holds the family), and the
    default table's rivals against it; with `rivals`, the belief-driven rivals under it too."""
    out = ["## One fix per campaign: the team prior with the one-fix structure", "",
           f"`{COMMANDS['worlds_history_fix']}` ({_machine(data)})", "",
           ("`bs.fit_gain_prior(..., fix_probs=DEFAULT_FIX_PROBS)` (`--gain-prior history-fix`, `bayes-s2r prior "
            "--one-fix`) also searches a structure in which at most one candidate of a campaign is the fix: each is it "
            "with probability q, and a fix's effect N(fix_loc, fix_scale²) replaces its level. q, fix_loc and "
            "fix_scale are chosen with the candidate level by the past campaigns' joint evidence (q = 0: none). In the "
            "model the fix is summed out of the likelihood and each posterior draw carries its own fix, so a fix "
            "found says the others are not fixes and a candidate measured at zero leaves more room for the others. "
            "The rule alone ran under it; the differences pair it by world with the rule under the default `history` "
            "prior, and the rivals' columns put the default table's strategies (under `history`) against it."), "",
           *_stale(data), *_merged_parts(data["settings"]),
           ("| family | one fix chosen: q, fix effect (logits) | q_cvu | one fix − history, 95% | paths changed | "
            "pandora − q_cvu, 95% | mv_greedy − q_cvu, 95% |"), "|---|---|---|---|---|---|---|"]
    every = []
    for family, summary in data["summary"].items():
        default = _default_table(family, defaults)
        prior = (data["settings"].get("team_priors") or {}).get(family) or {}
        chosen = (f"{prior['fix_prob']:g}, {prior['fix_loc']:g} ± {prior['fix_scale']:g}" if prior.get("fix_prob")
                  else "none (q = 0)")
        every.append(_paired_diffs(data, default, family, "q_cvu"))
        against = [_diff_cell(_paired_diffs(default, data, family, r, b_strategy="q_cvu")) for r in
                   ("pandora", "mv_greedy")]
        out.append(f"| {family} | {chosen} | {summary['q_cvu']['net_utility_mean']:.3f} | {_diff_cell(every[-1])} | "
                   f"{_paths_changed(data, default, family)} of {len(every[-1])} | " + " | ".join(against) + " |")
    out += [f"| all {len(every)} families together | | | {_diff_cell(np.concatenate(every))} | | | |", ""]
    if rivals is None:
        return out
    out += _worlds_rivals(rivals, (
        "The belief-driven rivals under the same one-fix prior "
        f"(`{COMMANDS['worlds_history_fix_rivals']}`, {_machine(rivals)}): does the prior lift them as much? The "
        "strategies without a belief (round-robin, the recipes) run the same campaigns under any prior (the tables "
        "above)."))
    names = list(rivals["settings"]["strategies"])
    out += ["Each strategy under the one-fix prior minus under the default `history` prior, paired by world:", "",
            "| family | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for family in rivals["summary"]:
        default = _default_table(family, defaults)
        out.append(f"| {family} | " + " | ".join(_diff(float(x.mean()), *common.t_interval(x)) for x in
                                                 (_paired_diffs(rivals, default, family, n) for n in names)) + " |")
    return out + [""]


def method_fix(data: dict, rivals: dict | None, one_fix_table: dict, plain: dict | None,
               *defaults: dict | None) -> list[str]:
    """The rule under the one-fix prior with each method's own fix probability, paired by world
    with the rule under the default prior and under one probability for all (`one_fix_table`);
    with `rivals`, the belief-driven rivals under the same prior against it, and with `plain`
    (the strategies that choose without the belief, re-run on some worlds under this prior)
    every strategy against it."""
    out = ["## One fix per campaign, its probability by method", "",
           f"`{COMMANDS['worlds_history_fix_method']}` ({_machine(data)})", "",
           ("`bs.fit_gain_prior(..., fix_probs=DEFAULT_FIX_PROBS, method_fix_concentrations="
            "DEFAULT_METHOD_FIX_CONCENTRATIONS)` (`--gain-prior history-fix-method`, `bayes-s2r prior --candidates`, "
            "the command's default since the tables below) lets each method's candidates have their own probability of being the fix "
            "(`GainPrior.method_fix_probs`), drawn from a Beta of concentration κ around the common q and "
            "integrated out of the past campaigns' evidence; κ is chosen by it (∞: one q for all) and each method gets "
            "its posterior mean. The families below are those where the evidence chose a finite κ; in the others the "
            "prior is the one-fix prior itself, and so are their campaigns."), "",
           *_stale(data), *_merged_parts(data["settings"]),
           ("| family | fix probability by method | q_cvu | − history, 95% | − one q for all, 95% | "
            "paths changed against one q |"), "|---|---|---|---|---|---|"]
    for family, summary in data["summary"].items():
        prior = (data["settings"].get("team_priors") or {}).get(family) or {}
        own = ", ".join(f"{h} {q:.2f}" for h, q in sorted((prior.get("method_fix_probs") or {}).items()))
        versus = [_paired_diffs(data, table, family, "q_cvu") for table in (_default_table(family, defaults),
                                                                              one_fix_table)]
        out.append(f"| {family} | {own or 'one for all'} | {summary['q_cvu']['net_utility_mean']:.3f} | "
                   + " | ".join(map(_diff_cell, versus))
                   + f" | {_paths_changed(data, one_fix_table, family)} of {len(versus[1])} |")
    if rivals is None:
        return out + [""]
    out += ["", (f"The rivals that decide from the belief, under the same prior "
                 f"(`{COMMANDS['worlds_history_fix_method_rivals']}`, {_machine(rivals)}), each minus the rule, "
                 "paired by world. In a family where the evidence kept one q for all (no fix probability by "
                 "method), the prior is the one-fix prior and the rule's campaigns are those of "
                 f"`{COMMANDS['worlds_history_fix']}`:"), "", *_merged_parts(rivals["settings"]),
            "| family | fix probability by method | " + " | ".join(f"{n} − q_cvu" for n in rivals["settings"]["strategies"])
            + " |", "|---" * (len(rivals["settings"]["strategies"]) + 2) + "|"]
    # the table holding the rule's campaigns under each family's prior (families it never ran under it are left out)
    rules = {f: r for f in dict.fromkeys([*data["summary"], *rivals["summary"]])
             if (r := _method_fix_rule(_rivals_prior(f, data, rivals), f, data, one_fix_table))}
    for family in rivals["summary"]:
        if family not in rules:
            continue
        fixes = _rivals_prior(family, data, rivals).get("method_fix_probs") or {}
        own = ", ".join(f"{h} {q:.2f}" for h, q in sorted(fixes.items()))
        out.append(f"| {family} | {own or 'one for all'} | " + " | ".join(
            _diff_cell(_paired_diffs(rivals, rules[family], family, n, b_strategy="q_cvu"))
            for n in rivals["settings"]["strategies"]) + " |")
    out += ["", *_method_fix_against_history(rules, defaults)]
    if plain is None:
        return out
    same, total = _same_campaigns(plain, defaults)
    every = _every_strategy(rivals, {f: rules[f] for f in rivals["summary"] if f in rules}, defaults)
    return out + _worlds_rivals(every, (
        "Every strategy against the rule under this prior: the belief-driven rivals from the table above, and the "
        f"strategies that choose without the gain belief ({', '.join(PLAIN_STRATEGIES)}) from the default tables. "
        "Their campaigns do not depend on the gain prior: re-run under this prior on the first "
        f"{plain['settings']['worlds']} worlds of every family (`{COMMANDS['worlds_history_fix_method_plain']}`, "
        f"{_machine(plain)}), {same} of {total} campaigns are those of the default tables (same path, final J, "
        "spending and unsafe episodes). The rivals ahead of the rule with a paired interval that excludes 0 (with "
        "their unsafe episodes per campaign), the rule against β = 0, and the share of the gap from the best "
        "non-oracle strategy with no more unsafe episodes to `oracle_safe` it closes. The column \"not shown below "
        "q_cvu\" names the rivals whose paired interval holds 0:"), level=True)


def _method_fix_against_history(rules: dict[str, dict], defaults: tuple) -> list[str]:
    """The rule under the per-method one-fix prior (its table per family, `rules`) minus under the
    default prior, paired by world, per family and pooled."""
    diffs = {f: _paired_diffs(r, _default_table(f, defaults), f, "q_cvu") for f, r in rules.items()}
    cells = ", ".join(f"{f} {_diff(float(d.mean()), *common.t_interval(d))}" for f, d in diffs.items())
    return [(f"The rule under this prior minus under the default `history` prior, paired by world, in the "
             f"{len(diffs)} families where its campaigns under it are known: {cells}; all together "
             f"{_diff_cell(np.concatenate(list(diffs.values())))}."), ""]


def _same_campaigns(plain: dict, defaults: tuple) -> tuple[int, int]:
    """How many of `plain`'s campaigns are the default tables' own (same path, J, spending,
    unsafe episodes), out of all of them."""
    fields = ("path", "final_J", "net_utility", "spent", "unsafe", "probe_unsafe")
    kept = {(r["family"], r["world"], r["strategy"]): r for d in defaults if d for r in d["rows"]}
    same = sum(all(kept.get((r["family"], r["world"], r["strategy"]), {}).get(k) == r[k] for k in fields)
               for r in plain["rows"])
    return same, len(plain["rows"])


# The strategies that choose without the gain belief: their campaigns are the same under any gain prior.
PLAIN_STRATEGIES = ("round_robin", "dr_only", "si_then_dr", "dr_then_ft", "oracle_safe")


def _rivals_prior(family: str, data: dict, rivals: dict) -> dict:
    """`family`'s per-method one-fix team prior, as the rivals' table (else the rule's) recorded it."""
    return ((rivals["settings"].get("team_priors") or {}).get(family)
            or (data["settings"].get("team_priors") or {}).get(family) or {})


def _method_fix_rule(prior: dict, family: str, data: dict, one_fix_table: dict) -> dict | None:
    """The table holding the rule's campaigns under `family`'s per-method one-fix `prior`: `data`
    where it ran the family, else the one-q table where the prior is its own; else None."""
    if family in data["summary"]:
        return data
    return _one_q_rule(family, prior, one_fix_table)


def _every_strategy(rivals: dict, rule_of: dict[str, dict], defaults: tuple) -> dict:
    """One worlds table per family of the rule (`rule_of[family]`), the belief-driven `rivals`,
    and the strategies that choose without the belief from the family's default table, on the
    worlds all of them ran."""
    rows, summary = [], {}
    for family, rule in rule_of.items():
        default = _default_table(family, defaults)
        plain = tuple(s for s in PLAIN_STRATEGIES if s in default["settings"]["strategies"])
        strategies = ("q_cvu", *rivals["settings"]["strategies"], *plain)
        found = ([r for r in rule["rows"] if r["family"] == family and r["strategy"] == "q_cvu"]
                 + [r for r in rivals["rows"] if r["family"] == family]
                 + [r for r in default["rows"] if r["family"] == family and r["strategy"] in plain])
        ran = {s: {r["world"] for r in found if r["strategy"] == s} for s in strategies}
        worlds = set.intersection(*ran.values())
        found = [r for r in found if r["world"] in worlds]
        rows += found
        summary[family] = bench_worlds.summarize(found, strategies)
    return {"summary": summary, "rows": rows, "settings": {}}


def _one_q_rule(family: str, prior: dict, one_fix_table: dict) -> dict | None:
    """`one_fix_table` where its team prior for `family` is `prior` with no fix probability by
    method (the same prior, so the same campaigns of the rule); else None."""
    if prior.get("method_fix_probs"):
        return None
    same = {k: v for k, v in prior.items() if k != "method_fix_probs"}
    return one_fix_table if (one_fix_table["settings"].get("team_priors") or {}).get(family) == same else None


def one_fix_hierarchy(data: dict, check: dict | None, method_fix_table: dict, rivals: dict, one_fix_table: dict,
                      fresh: dict) -> list[str]:
    """The rule under the default team prior with its whole effect hierarchy sized, against under the
    default (`method_fix_table`, else `one_fix_table` where the prior is the same, else `fresh`),
    paired by world, next to what each prior expects a try to bring and what a first try truly brings."""
    out = ["## The team prior's whole hierarchy sized, under the one-fix structure", "",
           f"`{COMMANDS['worlds_history_fix_method_hierarchy']}` ({_machine(data)})", "",
           ("The default team prior of these tables (`bayes-s2r prior --candidates --own-means --no-hierarchy`: each "
            "method's own mean and fix probability fitted) "
            "sizes the candidate level alone; the levels a campaign's candidates share keep the library's scales "
            "(0.5, 0.5, 0.3 logits) and add their spread on top. With `scale_hierarchy=True` they are sized with "
            "the candidate level (`--gain-prior history-fix-method-hierarchy`). The prior check "
            + (f"(`{COMMANDS['prior_check_one_fix']}`, {_machine(check)}) " if check else "")
            + "gives the share of past effects inside their 90% prior intervals and the gain per try each prior "
            "expects, next to what a first try truly brings; the rule's net utility under the sized hierarchy is "
            "paired by world with the rule under the default prior."), "", *_stale(data), *_merged_parts(data["settings"]),
           ("| family | true gain | default: inside 90%, gain expected | sized: inside 90%, gain expected | "
            "q_cvu, sized | sized − default, 95% | paths changed |"), "|---|---|---|---|---|---|---|"]
    checks = {r["family"]: r for r in (check or {}).get("results", [])}
    every = []
    for family, summary in data["summary"].items():
        default = (fresh if family in fresh["summary"] else
                   _method_fix_rule(_rivals_prior(family, method_fix_table, rivals), family, method_fix_table,
                                    one_fix_table))
        if default is None:
            continue
        every.append(_paired_diffs(data, default, family, "q_cvu"))
        c = checks.get(family)
        cells = (["—"] * 3 if c is None else
                 [f"{c['true_gain']:.3f}", *(f"{c['priors'][p]['coverage']:.0%}, {c['priors'][p]['gain_expected']:.3f}"
                                             for p in ("history-fix-method", "history-fix-method-hierarchy"))])
        out.append(f"| {family} | " + " | ".join(cells) + f" | {summary['q_cvu']['net_utility_mean']:.3f} | "
                   f"{_diff_cell(every[-1])} | {_paths_changed(data, default, family)} of {len(every[-1])} |")
    return out + [f"| all families together | | | | | {_diff_cell(np.concatenate(every))} | |", "",
                  "It would be the default only if no family lost with an interval excluding 0.", ""]


def _unit_cell(prior: dict) -> str:
    """A team prior's fix structure in a few words: "method, 0.2 per method, 1 ± 0.5"."""
    if not prior.get("fix_prob"):
        return "none"
    per = "method" if prior.get("fix_unit") == "method" else "candidate"
    return f"{per}, {prior['fix_prob']:g} per {per}, {prior['fix_loc']:g} ± {prior['fix_scale']:g}"


def fix_per_method(data: dict, rivals: dict | None, kin: dict | None, check: dict | None, method_fix_table: dict,
                   method_fix_rivals: dict, one_fix_table: dict, held_out: dict | None = None) -> list[str]:
    """The rule under the team prior whose fix may be a whole method, against under the default team
    prior, paired by world; the belief-driven rivals under it; every strategy on the family drawn
    to test it (`kin`), and with `held_out` (the default tables of the other families) every
    strategy under it; and, from the prior check, the unit the evidence chose in every family."""
    out = ["## A fix per method: siblings that work or fail together", "",
           f"`{COMMANDS['worlds_history_fix_per_method']}` ({_machine(data)})", "",
           ("`GainPrior(fix_unit=\"method\")` makes each method work in a campaign with its probability, independently "
            "of the others, and then every candidate of it a fix; `fit_gain_prior(..., fix_units=(\"candidate\", "
            "\"method\"))` (`bayes-s2r prior --candidates --own-means --no-hierarchy`, `--gain-prior "
            "history-fix-per-method`) keeps the unit with the larger marginal likelihood of the past campaigns, the "
            "method unit only by a log Bayes factor above `FIX_UNIT_MARGIN` (1), the rest searched as in the default "
            "team prior. "
            "Under it a sibling measured at zero says its method does not work, so its untried siblings lose their "
            "chance with it; under one fix per campaign they gain a little.")]
    if check:
        units = {r["family"]: r["priors"]["history-fix-per-method"].get("fitted", {}) for r in check["results"]}
        chose = [f for f, prior in units.items() if prior.get("fix_unit") == "method"]
        out += ["", (f"The unit each family's past campaigns chose (`{COMMANDS['prior_check_fix_per_method']}`, "
                     f"{_machine(check)}): a fix per method in {', '.join(chose) or 'none'}; one fix per campaign "
                     f"(the default team prior itself, so the same campaigns) in the other {len(units) - len(chose)}.")]
    out += ["", *_stale(data), *_merged_parts(data["settings"]),
            "| family | fix structure chosen | q_cvu | − default team prior, 95% | paths changed |", "|---|---|---|---|---|"]
    every = []
    for family, summary in data["summary"].items():
        default = _fix_per_method_default(family, kin, method_fix_table, method_fix_rivals, one_fix_table)
        every.append(_paired_diffs(data, default, family, "q_cvu"))
        prior = (data["settings"].get("team_priors") or {}).get(family) or {}
        out.append(f"| {family} | {_unit_cell(prior)} | {summary['q_cvu']['net_utility_mean']:.3f} | "
                   f"{_diff_cell(every[-1])} | {_paths_changed(data, default, family)} of {len(every[-1])} |")
    out += [f"| these families together | | | {_diff_cell(np.concatenate(every))} | |", ""]
    if rivals is not None:
        names = rivals["settings"]["strategies"]
        out += [(f"The rivals that decide from the belief, under the same prior (`{COMMANDS['worlds_history_fix_per_method_rivals']}`, "
                 f"{_machine(rivals)}), each minus the rule, paired by world; in brackets, each minus itself under the "
                 "default team prior:"), "", *_merged_parts(rivals["settings"]),
                "| family | " + " | ".join(f"{n} − q_cvu" for n in names) + " |", "|---" * (len(names) + 1) + "|"]
        for family in rivals["summary"]:
            if family not in data["summary"]:
                continue
            default = _fix_per_method_default(family, kin, method_fix_table, method_fix_rivals, one_fix_table,
                                              rivals=True)
            cells = []
            for n in names:
                own = _paired_diffs(rivals, default, family, n)
                cells.append(_diff_cell(_paired_diffs(rivals, data, family, n, b_strategy="q_cvu"))
                             + (f" ({float(own.mean()):+.3f})" if own.size else ""))
            out.append(f"| {family} | " + " | ".join(cells) + " |")
        out.append("")
        defaults = (held_out, kin)
        ran = [f for f in rivals["summary"] if f in data["summary"] and sum(f in (d or {}).get("summary", {})
                                                                          for d in defaults) == 1]
        if ran:
            every = _every_strategy(rivals, dict.fromkeys(ran, data), defaults)
            out += _worlds_rivals(every, (
                "Every strategy against the rule under this prior: the belief-driven rivals from the table above, and "
                f"the strategies that choose without the gain belief ({', '.join(PLAIN_STRATEGIES)}) from the default "
                "tables (their campaigns do not depend on the gain prior). The column \"not shown below q_cvu\" names "
                "the rivals whose paired interval holds 0:"), level=True)
    if kin is not None:
        out += _worlds_rivals(kin, (
            f"Every strategy on `kin`, drawn after the structure was built to test it, under the default team prior "
            f"(`{COMMANDS['worlds_kin']}`, {_machine(kin)}): the rivals ahead of the rule with a paired interval that "
            "excludes 0, the rule against β = 0, and the share of the gap it closes."), level=True)
    return out


def _fix_per_method_default(family: str, kin: dict | None, method_fix_table: dict, method_fix_rivals: dict,
                            one_fix_table: dict, rivals: bool = False) -> dict:
    """The table holding `family`'s campaigns under the default team prior: the rule's (or, with
    `rivals`, the belief-driven rivals')."""
    if kin is not None and family in kin["summary"]:
        return kin
    if rivals:
        return method_fix_rivals
    found = _method_fix_rule(_rivals_prior(family, method_fix_table, method_fix_rivals), family, method_fix_table,
                             one_fix_table)
    if found is None:
        raise ValueError(f"no table holds the rule's campaigns on {family!r} under the default team prior")
    return found


def _one_team_rule(family: str, per_method: dict | None, per_method_rivals: dict | None, kin: dict | None,
                   method_fix_table: dict, method_fix_rivals: dict, one_fix_table: dict) -> tuple[dict, dict]:
    """(the rule's table, the belief-driven rivals' table) of `family` under the default team prior
    fitted from the one history of the stored tables (team 0)."""
    if per_method and per_method_rivals and family in per_method["summary"]:
        return per_method, per_method_rivals
    return _fix_per_method_default(family, kin, method_fix_table, method_fix_rivals, one_fix_table), method_fix_rivals


def _teams_ahead(data: dict, family: str, strategy: str) -> str:
    """In how many of a table's teams `strategy` is ahead of the rule on average: "3 of 10"."""
    teams = data["settings"]["teams"]
    rows = {(r["world"], r["strategy"]): r["net_utility"] for r in data["rows"] if r["family"] == family}
    diffs = [[rows[w, strategy] - rows[w, "q_cvu"] for w, s in rows if s == "q_cvu" and (w, strategy) in rows
              and w % teams == k] for k in range(teams)]
    return f"{sum(float(np.mean(d)) > 0 for d in diffs if d)} of {sum(bool(d) for d in diffs)}"


def teams(data: dict, lookahead: dict | None, per_method: dict | None, per_method_rivals: dict | None,
          kin: dict | None, method_fix_table: dict, method_fix_rivals: dict, one_fix_table: dict,
          shrunk: dict | None = None) -> list[str]:
    """Every strategy where each world's team prior comes from one of ten teams' histories, and
    the rule against β = 0 so, beside the same comparisons under the one history of the other tables;
    given `shrunk`, the same ten teams with each method's mean shrunk toward one."""
    out = ["## Ten teams: the comparisons over other past campaigns", "",
           f"`{COMMANDS['worlds_teams']}` ({_machine(data)})", "",
           ("Every other random-world table fits each family's team prior from one history: the same twelve past "
            "campaigns for all of its worlds. Twelve campaigns measure a method's mean to about ±0.1 logits, so "
            "which method looks best is partly that history's luck, and a table over one history answers for one "
            "team. Here world w takes the default team prior of team w mod 10, each fitted from its own twelve "
            "past campaigns (`worlds.history(..., team=k)`; team 0 is the other tables' history)."), ""]
    out += _worlds_rivals(data, "Every strategy against the rule, paired by world:", level=True)
    one = [("The same comparisons under the one history of the other tables, and in how many of the ten teams "
            "each rival is ahead of the rule on average:"), "",
           "| family | rival | − q_cvu, ten teams, 95% | − q_cvu, one history, 95% | teams where ahead |",
           "|---|---|---|---|---|"]
    for family, summary in data["summary"].items():
        rule, rivals = _one_team_rule(family, per_method, per_method_rivals, kin, method_fix_table, method_fix_rivals,
                                      one_fix_table)
        for name in ("q_beta0", "mv_greedy", "pandora"):
            if name in summary:
                single = _paired_diffs(rivals, rule, family, name, b_strategy="q_cvu")
                one.append(f"| {family} | {name} | {_diff_cell(_paired_diffs(data, data, family, name, b_strategy='q_cvu'))} | "
                           f"{_diff_cell(single)} | {_teams_ahead(data, family, name)} |")
    out += [*one, ""]
    out += _stopping_at_once(data, shrunk)
    if lookahead is not None:
        out += [(f"The look-ahead against β = 0 over ten teams where it was ahead under the one history "
                 f"(`{COMMANDS['worlds_teams_lookahead']}`, {_machine(lookahead)}):"), "",
                ("| family | q_cvu net utility | q_beta0 − q_cvu, ten teams, 95% | the same, one history, 95% | "
                 "teams where β = 0 is ahead |"), "|---|---|---|---|---|"]
        for family, summary in lookahead["summary"].items():
            rule, rivals = _one_team_rule(family, per_method, per_method_rivals, kin, method_fix_table,
                                          method_fix_rivals, one_fix_table)
            out.append(f"| {family} | {summary['q_cvu']['net_utility_mean']:.3f} | "
                       f"{_diff_cell(_paired_diffs(lookahead, lookahead, family, 'q_beta0', b_strategy='q_cvu'))} | "
                       f"{_diff_cell(_paired_diffs(rivals, rule, family, 'q_beta0', b_strategy='q_cvu'))} | "
                       f"{_teams_ahead(lookahead, family, 'q_beta0')} |")
        out.append("")
    if shrunk is not None:
        out += _worlds_rivals(shrunk, (
            "The same ten teams with each method's mean shrunk toward one common mean instead of fitted on its own "
            f"(`--gain-prior history-fix-per-method-shrunk`; `{COMMANDS['worlds_teams_shrunk']}`, {_machine(shrunk)}). "
            "A method whose twelve past campaigns were lucky looks best and is chosen first (the optimizer's curse); "
            "the common mean is fitted and the methods' spread ω averaged over its posterior (`fit_gain_prior(..., "
            "method_spreads=DEFAULT_METHOD_SPREADS, integrate_method_spread=True)`), and every strategy decides from "
            "this prior. The last column pairs the rule with the first table's:"), data, level=True)
    return out


def _stopping_at_once(data: dict, shrunk: dict | None) -> list[str]:
    """Each strategy's net utility minus the start's J: what trying gained over stopping at once
    (spending nothing and keeping the starting policy), per family, under each table's prior."""
    out = [("What trying gained over stopping at once (net utility minus the start's J, paired by world; stopping "
            "at once keeps the starting policy and spends nothing), under the prior of this section's first table"
            + (" and under the shrunk means below" if shrunk else "") + ":"), "",
           "| family | strategy | − stopping at once, 95% |" + (" the same, shrunk means, 95% |" if shrunk else ""),
           "|---|---|---|" + ("---|" if shrunk else "")]
    none_above = []  # families where no strategy but the oracles gains over stopping at once
    for family, summary in data["summary"].items():
        above = False
        for name in (k for k in summary if not k.startswith("_") and k != bench_worlds.STOP):
            gained = [_paired_diffs(table, table, family, name, b_strategy=bench_worlds.STOP)
                      for table in (data, shrunk) if table is not None]
            above |= not name.startswith("oracle") and common.t_interval(gained[0])[0] > 0
            out.append(f"| {family} | {name} | " + " | ".join(map(_diff_cell, gained)) + " |")
        if not above and "pandora" in summary:  # the reading below rests on Pandora's index
            none_above.append(family)
    if none_above:
        out += ["", (f"In {', '.join(none_above)} no strategy but the oracle gains over stopping at once with an interval "
                     "above 0, Pandora's index included, which is optimal for independent tries when the prior is right: "
                     "the prior there makes tries look worth more than they bring.")]
    return out + [""]


def _mean_on_paired(a: dict, b: dict, family: str, field: str) -> tuple[float, float]:
    """The rule's mean `field` in a and in b over the worlds of `family` both ran."""
    rows = [_by_world(d, family, field) for d in (a, b)]
    worlds = [w for w, s in rows[0] if s == "q_cvu" and (w, "q_cvu") in rows[1]]
    return tuple(float(np.mean([r[w, "q_cvu"] for w in worlds])) for r in rows)


def teams_hierarchy(data: dict, default: dict | None, rivals: dict | None, *defaults: dict | None) -> list[str]:
    """The team prior with each method's mean shrunk toward a fitted common one and the whole
    hierarchy sized, over ten teams: the rule under it against the rule under each method's own
    mean and the library's upper levels (`default`, else the first of `defaults` that ran the
    family) and against stopping at once, paired by world; given `rivals`, the belief-driven
    rivals under it too."""
    baselines = [t for t in (default, *defaults) if t is not None]
    out = ["## Ten teams: each method's mean shrunk and the whole hierarchy sized", "",
           f"`{COMMANDS['worlds_teams_hierarchy']}` ({_machine(data)})", "",
           ("The team prior `bayes-s2r prior --candidates` fits by default (`--shrink --hierarchy`; `--gain-prior "
            "history-fix-per-method-shrunk-hierarchy`): each method's mean shrunk toward a common mean fitted with "
            "it, averaged over the posterior of the methods' spread, and the levels above the candidate's sized with "
            "the fitted candidate level, with the one-fix structure and fix per method searched. World w takes team "
            "w mod 10's prior, as in the tables above. The rule under it is paired by world with the rule under the "
            "team prior of the tables above, each method's own mean and the library's upper levels "
            "(`--own-means --no-hierarchy`, `history-fix-per-method`; \"the own means\" below; "
            + (f"`{COMMANDS['worlds_teams_hierarchy_default']}` where no table above ran the family" if default else "")
            + ") and with stopping at once."), "", *_stale(data), *_merged_parts(data["settings"]),
           ("| family | q_cvu net utility | − q_cvu under the own means, 95% | q_cvu − stopping at once, 95% "
            "| the same under the own means, 95% | decisions (under the own means) |"), "|---|---|---|---|---|---|"]
    base_of = {family: next((t for t in baselines if "q_cvu" in t["summary"].get(family, {})), None)
               for table in (data, rivals) if table for family in table["summary"]}
    diffs = {family: _paired_diffs(table, base_of[family], family, "q_cvu")  # the rule under each prior
             for table in (data, rivals) if table for family in table["summary"] if base_of[family]}
    stop = bench_worlds.STOP
    for family, summary in data["summary"].items():
        if (base := base_of[family]) is None:
            continue
        rounds = _mean_on_paired(data, base, family, "rounds")
        out.append(f"| {family} | {summary['q_cvu']['net_utility_mean']:.3f} | {_diff_cell(diffs[family])} | "
                   f"{_diff_cell(_paired_diffs(data, data, family, 'q_cvu', b_strategy=stop))} | "
                   f"{_diff_cell(_paired_diffs(base, base, family, 'q_cvu', b_strategy=stop))} | "
                   f"{rounds[0]:.1f} ({rounds[1]:.1f}) |")
    bounds = {family: common.t_interval(d) for family, d in diffs.items()}
    lost = [family for family, (_, hi) in bounds.items() if hi < 0]
    gained = [family for family, (lo, _) in bounds.items() if lo > 0]
    if rivals is not None:
        out += [""] + _worlds_rivals(rivals, (
            f"The belief-driven rivals under the same prior (`{COMMANDS['worlds_teams_hierarchy_rivals']}`, "
            f"{_machine(rivals)}); the last column pairs the rule with the rule under the own means:"),
            next((t for t in baselines if set(rivals["summary"]) <= set(t["summary"])), None), level=True)
    return out + [(f"Over these {len(diffs)} families the rule under this prior is below itself under the own means "
                   f"with an interval that excludes 0 in {', '.join(lost) or 'none'}, and above it in {', '.join(gained) or 'none'}."), ""]


def team_prior_variants(long: dict, baseline: dict | None, held_out: dict | None) -> list[str]:
    """The rule and its rivals, every strategy under the same prior, where the team prior comes
    from a longer history, or places the starting policies where past campaigns started."""
    out = ["## The rule and its rivals under other team priors", ""]
    out += _worlds_rivals(long, (
        "A team prior fitted from 200 past campaigns instead of 12, with the levels a campaign's candidates share "
        f"sized by them (`{COMMANDS['worlds_history_shared_200']}`, {_machine(long)}): every strategy decides from "
        "it, so the table asks whether the rule's deficits come from a prior estimated from a short history. The "
        "last column pairs the rule with its own table under the 12-campaign `history` prior (held-out families)."),
        held_out)
    if baseline:
        out += _worlds_rivals(baseline, (
            "The 12-campaign `history` prior with the starting policies' level fitted to the past starts "
            f"(`--gain-prior history-baseline`; `{COMMANDS['worlds_history_baseline']}`, {_machine(baseline)}): "
            "before a campaign measures its start, its gains are priced at the J its team usually starts from "
            "instead of 0.5."), held_out)
    return out


REGIME_ARMS = {"nominal": "nominal policy", "si": "SI, then retrain at the fit", "dr_wide": "wide DR (contains the truth)",
               "oracle": "retrain at the true ξ (reference)"}


def backends(data: dict, sysid: dict | None = None, sysid_mjx: dict | None = None,
             sysid_mjx_seed1: dict | None = None) -> list[str]:
    """The built-in worlds on Brax's `generalized` pipeline and on MJX: agreement, speed, SI."""
    out = _head("backends", "Testbed physics: Brax `generalized` against MJX", data)
    out += [("Same episodes on both engines (same ξ from a testbed-wide DR, initial states and sensor noise); "
            "env-steps/s of the warm call at each batch size."), "",
            "| task | engine | success | score | env-steps/s | first call (s) | Jacobian (s, warm) |",
            "|---|---|---|---|---|---|---|"]
    for r in data["results"]:
        for name, b in r["backends"].items():
            speed = " / ".join(f"{v:,}" for v in b["env_steps_per_s"].values())
            out.append(f"| {r['task']} | {name} | {b['success']:.3f} | {b['score']:.3f} | {speed} | "
                       f"{b['first_call_s']:.1f} | {b['jacobian']['warm_s']:.3f} |")
    out.append("")
    sizes = " / ".join(str(n) for n in data["settings"]["envs"])
    out += [f"Batch sizes {sizes}. MJX minus generalized on the same {data['results'][0]['episodes']} episodes:", ""]
    for r in data["results"]:
        d, sc = r["success_mjx_minus_generalized"], r["score_mjx_minus_generalized"]
        out.append(f"- {r['task']}: success {_diff_of(d)}, score {_diff_of(sc)}, "
                   f"same success flag in {r['same_success_flag']:.1%} of the episodes.")
    out.append("")
    if data.get("cards"):
        out += [("The shipped cart-pole world cards, the nominal policy on each (success / unsafe rate, "
                f"{data['settings']['card_episodes']} episodes, the same on both engines):"), "",
                "| card | generalized | mjx |", "|---|---|---|"]
        for r in data["cards"]:
            cells = [f"{r[b]['success']:.3f} / {r[b]['unsafe']:.3f}" for b in ("generalized", "mjx")]
            out.append(f"| {r['card']} | {cells[0]} | {cells[1]} |")
        out.append("")
    if sysid and sysid_mjx:
        runs = [("generalized", sysid), ("mjx", sysid_mjx)]
        commands = f"`{COMMANDS['sysid']}` and `{COMMANDS['sysid_mjx']}`"
        if sysid_mjx_seed1:
            runs.append(("mjx, seed 1", sysid_mjx_seed1))
            commands += f", and `{COMMANDS['sysid_mjx_seed1']}`"
        out += [f"System identification, central 90% jackknife intervals ({commands}; {_machine(sysid_mjx)}):", "",
                "| task | engine | repetitions | coverage mass / damping / gear | latency right | median wall (s) |",
                "|---|---|---|---|---|---|"]
        for name, d in runs:
            for r in d["results"]:
                cov = r["coverage"]["jackknife"]
                c = " / ".join(f"{cov[f]['coverage']:.2f}" for f in ("mass_scale", "damping_scale", "gear_scale"))
                out.append(f"| {r['task']} | {name} | {r['reps']} | {c} | {r['latency_hit_rate']:.2f} | "
                           f"{r['median_wall_s']:.1f} |")
        out.append("")
    return out


def _regime_good_choices(data: dict, tol: float = 0.05) -> tuple[int, int]:
    """(worlds whose chosen arm's real J is within `tol` of the better of SI and wide DR, worlds
    with a decision); a stop keeps the nominal policy, and ft_real has no arm in the table."""
    good = total = 0
    for r in data.get("results", []):
        if "decision" not in r:
            continue
        arms, best = r["arms"], r["decision"]["best"]
        chosen = arms[best if best in arms else "nominal"]["J"]
        good += chosen >= max(arms["si"]["J"], arms["dr_wide"]["J"]) - tol
        total += 1
    return good, total


def _regime_variant(data: dict | None, name: str, what: str) -> list[str]:
    """One sentence on a variant run of the regime benchmark (nothing when it was not run)."""
    if data is None:
        return []
    s = data["summary"]
    si, dr = s["arms"]["si"], s["arms"]["dr_wide"]
    d = s["si_minus_dr_wide"]
    good, total = _regime_good_choices(data)
    choices = (f"; the rule chose {', '.join(f'{k} {v}' for k, v in s['choices'].items())}, an arm within 0.05 of "
               f"the better of SI and wide DR in {good} of {total} worlds" if "choices" in s else "")
    return ["", (f"{what} (`{COMMANDS[name]}`): SI {si['J_mean']:.3f} ({si['gap_closed_pooled']:.0%} of the gap), "
                 f"wide DR {dr['J_mean']:.3f} ({dr['gap_closed_pooled']:.0%}), SI minus wide DR {_diff_of(d)}"
                 f"{choices}.")]


def regime(data: dict, si2: dict | None = None, dr_x4: dict | None = None) -> list[str]:
    """The identifiable-dynamics regime: SI against wide DR, and the rule's choice."""
    settings, summary = data["settings"], data["summary"]
    out = _head("regime", "The identifiable-dynamics regime: a few SI rollouts against wide DR", data) + [
        (f"{summary['worlds']} hidden cart-poles, each with a heavier pole (mass ×{settings['mass'][0]:g}–"
         f"{settings['mass'][1]:g}) and a weaker actuator (gear ×{settings['gear'][0]:g}–{settings['gear'][1]:g}); "
         f"wide DR randomizes mass 1 ± {settings['dr_mass_width']:g} and gear 1 ± {settings['dr_gear_width']:g}, "
         f"which contains every truth. SI fits {settings['si_episodes']} excited real episodes of "
         f"{settings['si_horizon']} steps (short, so that the failing nominal policy rarely lets the pole fall). J is the success rate on the hidden world "
         f"({settings['eval_episodes']} episodes per arm and world); the interval is the 95% t-interval over worlds; "
         "the gap closed is (J − J nominal) / (J oracle − J nominal) of the world means."), "",
        "| arm | real J | 95% interval | gap closed | real episodes per world |", "|---|---|---|---|---|"]
    for name, label in REGIME_ARMS.items():
        a = summary["arms"][name]
        share = "—" if a["gap_closed_pooled"] is None else f"{a['gap_closed_pooled']:.0%}"
        out.append(f"| {label} | {a['J_mean']:.3f} | [{a['J_ci95'][0]:.3f}, {a['J_ci95'][1]:.3f}] | {share} | "
                   f"{a['real_episodes_per_world']} |")
    d = summary["si_minus_dr_wide"]
    out += ["", f"SI minus wide DR: {_diff_of(d)}."]
    on_range = [r["arms"]["dr_wide"]["J_sim_on_dr_range"] for r in data.get("results", [])
                if "J_sim_on_dr_range" in r["arms"]["dr_wide"]]
    if on_range:
        out[-1] += (f" Over its own training range, in sim, the wide-DR policy succeeds in {sum(on_range) / len(on_range):.0%}"
                    " of the episodes: it is trained, and gives up the heavy, weakly driven corner where the truths lie.")
    if "choices" in summary:
        picks = ", ".join(f"{k} {v}" for k, v in summary["choices"].items())
        out += ["", (f"The rule (`decide`, beliefs fitted on {settings['pilot_episodes']}-episode pilot paired "
                     f"evaluations and a {settings['shakedown']}-episode safety shakedown per robot-touching candidate) "
                     f"chose, per world: {picks} (SI in {summary['si_chosen_share']:.0%} of the worlds); the chosen "
                     f"arm's real J averages {summary['chosen_J_mean']:.3f} against {summary['best_of_si_dr_J_mean']:.3f} "
                     "for the better of SI and wide DR in each world (a stop keeps the nominal policy). SI's "
                     f"data-collection protocol was unsafe in {summary['si_protocol_unsafe'][0]} of "
                     f"{summary['si_protocol_unsafe'][1]} short episodes (shakedown and SI data together). The chosen "
                     f"arm is within 0.05 of the better of SI and wide DR in {'{} of {}'.format(*_regime_good_choices(data))} "
                     "worlds.")]
        gated = sum(1 for r in data.get("results", []) if "decision" in r and r["decision"]["best"] is None
                    and not r["decision"].get("table", {}).get("si", {}).get("feasible", True))
        if gated:
            out[-1] += (f" In {gated} stop(s) the safety gate had closed SI (unsafe short episodes in its shakedown "
                        "put the execution-risk bound above α_exec) and nothing else feasible was worth its cost.")
    out += _regime_variant(si2, "regime_si2", "With 2 SI episodes instead of 6")
    out += _regime_variant(dr_x4, "regime_dr_x4", "With 4× the DR training (32 generations of 32 episodes per candidate)")
    verdict = "reproduced" if summary["regime_reproduced"] else "NOT reproduced"
    return out + ["", (f"Regime {verdict} in the main run (SI closes at least half the gap, beats wide DR with a "
                       "95% interval above 0, and is chosen in at least half the worlds)."), ""]


class Section(NamedTuple):
    """One section of the page.

    Attributes:
        files: the results files it reads (names without ".json"); `render` gets each one's
            JSON, or None when the file is missing.
        render: returns the section's Markdown lines (empty: nothing to show).
        required: skip the section when its first file is missing.
    """

    files: tuple[str, ...]
    render: Callable[..., list[str]]
    required: bool = True


ALLOCATION_TABLES = ("allocation", "allocation_scarce", "allocation_scarce_pilots")


def _overview(*data: dict | None) -> list[str]:
    """The at-a-glance lines, once more than one allocation table was measured."""
    triples = list(zip(data[::3], data[1::3], data[2::3]))
    tables = [(name, d, library, one_fix) for name, (d, library, one_fix) in zip(ALLOCATION_TABLES, triples)
              if d and "over_worlds" in d]
    return allocation_overview(tables) if len(tables) > 1 else []


def _with_companions(fn):
    """An allocation table with its library-prior and one-fix-prior companions, where there are."""
    return lambda data, library, one_fix: fn(data, library=library, one_fix=one_fix)


SECTIONS = [
    Section(tuple(f for name in ALLOCATION_TABLES for f in (name, name + LIBRARY_PRIOR, name + ONE_FIX_PRIOR)),
            _overview, required=False),
    Section(("allocation", "allocation" + LIBRARY_PRIOR, "allocation" + ONE_FIX_PRIOR), _with_companions(allocation)),
    Section(("allocation_scarce", "allocation_scarce" + LIBRARY_PRIOR, "allocation_scarce" + ONE_FIX_PRIOR),
            _with_companions(allocation_scarce)),
    Section(("allocation_scarce_pilots", "allocation_scarce_pilots" + LIBRARY_PRIOR, "allocation_scarce_pilots_g0",
             "allocation_scarce_pilots_baseline", "allocation_scarce_pilots_g0_baseline",
             "allocation_scarce_pilots" + ONE_FIX_PRIOR),
            lambda data, library, g0, base, g0_base, one_fix: allocation_scarce_pilots(
                data, library=library, g0=g0, baseline=(base, g0_base), one_fix=one_fix)),
    Section(("decide",), decide),
    Section(("fit",), fit),
    Section(("sbc_gains", "sbc_gains_team_prior", "allocation", "sbc_gains_one_fix"),
            lambda data, team, alloc, one_fix: sbc(data, team=team, allocation=alloc, one_fix=one_fix)),
    Section(("rollouts",), rollouts),
    Section(("locomotion_gpu",), locomotion),
    Section(("locomotion_cpu",), lambda data: locomotion(data, name="locomotion_cpu",
                                                         title="Locomotion rollouts on a CPU, against native MuJoCo")),
    Section(("scaling",), scaling),
    Section(("cli_errors",), cli_errors),
    Section(("cli_decide",), cli_decide),
    Section(("worlds", "worlds_history_loc", "worlds_library_prior", "worlds_pilots", "worlds_history_hierarchy",
             "worlds_history_skew", "worlds_pooled", "worlds_pilots_pooled", "worlds_history_shrunk",
             "worlds_start_record", "worlds_history_shared", "worlds_history_shrunk_shared"), worlds),
    Section(("worlds_held_out", "worlds_held_out_shared", "worlds", "worlds_pilots", "worlds_history_shared"),
            worlds_held_out),
    Section(("worlds_fresh", "worlds_fresh_history"), worlds_fresh),
    Section(("dp_ceiling", "dp_ceiling_rule"), dp_ceiling),
    Section(("worlds_rollout_margin", "dp_ceiling_margin", "dp_ceiling_rule", "worlds", "worlds_pilots",
             "worlds_held_out"), rollout_margin),
    Section(("worlds_rollout_margin_half", "dp_ceiling_margin_half", "dp_ceiling_rule", "worlds", "worlds_pilots",
             "worlds_held_out"), rollout_margin_half),
    Section(("worlds_base_index_draws", "worlds", "worlds_pilots", "worlds_held_out"), base_index_draws),
    Section(("worlds_without_diagnosis_margin", "worlds", "worlds_pilots", "worlds_held_out"), diagnosis_margin),
    Section(("prior_check", "worlds", "worlds_pilots", "worlds_held_out", "worlds_history_shared",
             "worlds_held_out_shared"), prior_check),
    Section(("worlds_history_shared_200", "worlds_history_baseline", "worlds_held_out"), team_prior_variants),
    Section(("worlds_history_fix", "worlds_history_fix_rivals", "worlds", "worlds_pilots", "worlds_held_out"),
            one_fix),
    Section(("worlds_history_fix_method", "worlds_history_fix_method_rivals", "worlds_history_fix",
             "worlds_history_fix_method_plain", "worlds", "worlds_pilots", "worlds_held_out"), method_fix),
    Section(("worlds_history_fix_method_hierarchy", "prior_check_one_fix", "worlds_history_fix_method",
             "worlds_history_fix_method_rivals", "worlds_history_fix", "worlds_fresh"), one_fix_hierarchy),
    Section(("worlds_history_fix_per_method", "worlds_history_fix_per_method_rivals", "worlds_kin",
             "prior_check_fix_per_method", "worlds_history_fix_method", "worlds_history_fix_method_rivals",
             "worlds_history_fix", "worlds_held_out"), fix_per_method),
    Section(("worlds_teams", "worlds_teams_lookahead", "worlds_history_fix_per_method",
             "worlds_history_fix_per_method_rivals", "worlds_kin", "worlds_history_fix_method",
             "worlds_history_fix_method_rivals", "worlds_history_fix", "worlds_teams_shrunk"), teams),
    Section(("worlds_teams_hierarchy", "worlds_teams_hierarchy_default", "worlds_teams_hierarchy_rivals",
             "worlds_teams", "worlds_teams_lookahead"), teams_hierarchy),
    Section(("belief_structure", "belief_structure_library"), belief_structure),
    Section(("regime", "regime_si2", "regime_dr_x4"), regime),
    Section(("backends", "sysid", "sysid_mjx", "sysid_mjx_seed1"), backends),
]


def summarize(folder: Path) -> str:
    """The whole page, from the results files in `folder`."""
    lines = ["# Results", "",
             (f"Measured with the commands shown; `python benchmarks/summarize.py --write {PAGE}` "
              "rewrites this page from `benchmarks/results/`."), ""]
    load = functools.cache(lambda name: _load(folder, name))  # each file is read once
    for section in SECTIONS:
        data = [load(name) for name in section.files]
        if section.required and data[0] is None:
            continue
        lines += section.render(*data)
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default=str(HERE / "results"))
    p.add_argument("--write", default=None, help=f"write the page to this file (the repository's is {PAGE})")
    args = p.parse_args(argv)
    text = summarize(Path(args.results))
    print(text, end="")
    if args.write:
        Path(args.write).write_text(text)
    return text


if __name__ == "__main__":
    main()
