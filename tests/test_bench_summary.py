"""docs/results.md is generated from the benchmark JSON files and matches them."""

import json
from pathlib import Path

import numpy as np
import pytest
import summarize
import worlds as W

ROOT = Path(__file__).resolve().parent.parent


def test_summary_reports_the_measured_numbers(tmp_path):
    # a results folder holding only the decision benchmark: the section shows exactly that file
    row = {"case": "main", "candidates": 32, "draws": 4000, "outcomes": 256, "cvu_s": 0.0684,
           "speedup_vs_reference": 36.9, "cvu_over_floor": 3.1, "decide_warm_s": 0.0709, "compile_s": 3.35}
    data = {"benchmark": "decide", "machine": {"cores": 2, "backend": "cpu", "load_avg": [0.5, 0, 0]},
            "settings": {}, "results": [row]}
    (tmp_path / "decide.json").write_text(json.dumps(data))
    text = summarize.summarize(tmp_path)
    assert "## Decision engine" in text and "## Fitting" not in text
    assert "| 32 × 4000 × 256 | 68 ms | 37× faster | 3.1× | 71 ms | 3.4 s |" in text
    assert "load average 0.5" in text


def test_the_results_page_is_the_generated_one():
    page = (ROOT / summarize.PAGE).read_text()
    assert page == summarize.summarize(ROOT / "benchmarks" / "results")


def test_every_table_measured_with_an_earlier_rule_says_so_on_the_page():
    page = (ROOT / summarize.PAGE).read_text()
    notes = {path.stem: data["settings"]["rule_note"] for path in (ROOT / "benchmarks" / "results").glob("*.json")
             if (data := json.loads(path.read_text())).get("settings", {}).get("rule_note")}
    missing = sorted(name for name, note in notes.items() if note not in page)
    assert not missing, missing


def test_a_section_is_one_function_and_one_entry(tmp_path, monkeypatch):
    (tmp_path / "worlds.json").write_text(json.dumps({"results": [{"mean": 0.5}]}))
    (tmp_path / "decide.json").write_text(json.dumps({"results": []}))

    def worlds(data):
        return ["## Random worlds", "", f"mean {data['results'][0]['mean']}", ""]

    monkeypatch.setattr(summarize, "SECTIONS", [summarize.Section(("worlds",), worlds),
                                                summarize.Section(("missing",), worlds)])
    text = summarize.summarize(tmp_path)
    assert text.count("## Random worlds") == 1 and "mean 0.5" in text  # a missing file's section is skipped


def test_an_allocation_table_reports_its_fitted_prior_and_its_companion_tables(tmp_path):
    import bench_allocation
    import common

    # two seeds: the fewest that give an interval paired over seeds
    args = ["--synthetic", "--seeds", "2", "--rounds", "1", "--svi-steps", "50", "--cvu-samples", "8",
            "--strategies", "q_cvu,q_beta0,dr_only"]
    fitted = bench_allocation.main([*args, "--out", str(tmp_path / "allocation.json")])
    library = bench_allocation.main([*args, "--gain-prior", "{}",
                                     "--out", str(tmp_path / f"allocation{summarize.LIBRARY_PRIOR}.json")])
    text = summarize.summarize(tmp_path)
    fits = fitted["settings"]["gain_prior"]["per_world"]
    assert "fitted per world by `bs.fit_gain_prior` from one past campaign on each other world" in text
    for fit in fits.values():
        assert f"scale {fit['prior']['candidate_scale']:g}" in text
    assert "Under the library's default prior (`" + summarize.COMMANDS["allocation" + summarize.LIBRARY_PRIOR] in text
    assert f"q_cvu {library['over_worlds']['q_cvu']['final_J_mean']:.3f}" in text
    # the rule under the fitted prior, paired over seeds against each rival under the library's
    rows = ([r for r in fitted["results"] if r["strategy"] == "q_cvu"] +
            [r for r in library["results"] if r["strategy"] != "q_cvu"])
    cross = common.over_worlds(rows)["q_beta0"]
    paragraph = text.split("Under the library's default prior")[1]
    assert (f"q_beta0 {cross['final_J_mean']:.3f} [{cross['final_J_ci_low']:+.3f}, "
            f"{cross['final_J_ci_high']:+.3f}]") in paragraph.split("under the library's (paired over seeds)")[1]

    # what each row reports besides J, averaged over the worlds, one line per strategy
    for k in ("q_cvu", "dr_only"):
        rows = [r for r in fitted["results"] if r["strategy"] == k]
        J = sum(r["final_J_mean"] for r in rows) / len(rows)
        real = sum(r["spent"]["real"] for r in rows) / len(rows)
        passed = sum(r["deploy_pass_rate"] for r in rows) / len(rows)
        line = next(x for x in text.splitlines() if x.startswith(f"| {k} | "))
        assert line.startswith(f"| {k} | {J:.2f} | {real:.2f} | ") and f" | {passed:.0%} | " in line

    # with more than one allocation table, a line per table over the worlds heads the section
    assert "at a glance" not in text
    (tmp_path / "allocation_scarce.json").write_text((tmp_path / "allocation.json").read_text())
    text = summarize.summarize(tmp_path)
    over = fitted["over_worlds"]
    best = max(("q_beta0", "dr_only"), key=lambda k: over[k]["final_J_mean"])
    below = sum(over[k]["final_J_ci_high"] < 0 for k in ("q_beta0", "dr_only"))
    line = (f"| real {fitted['settings']['budget_real']:g} h | {over['q_cvu']['final_J_mean']:.3f} | "
            f"{over['q_cvu']['safety_violations']:.1f} | {best} {over[best]['final_J_mean']:.3f} "
            f"[{over[best]['final_J_ci_low']:+.3f}, {over[best]['final_J_ci_high']:+.3f}]; "
            f"{over[best]['safety_violations']:.1f} | {below} of 2 |")
    glance = text.split("## Allocation quality at a glance")[1].split("\n## ")[0]
    rows = [r for r in glance.splitlines() if r.startswith(line)]
    assert len(rows) == 2  # the companion's q_cvu ends the line of the table that has one
    assert rows[0].endswith(f"| {library['over_worlds']['q_cvu']['final_J_mean']:.3f} | — |")
    assert rows[1].endswith("| — | — |")
    flips = [r["flip_probability_first"] for r in fitted["results"] if r["strategy"] == "q_cvu"]
    assert f"| {sum(flips) / len(flips):.2f} / " in rows[0]  # the rule's first-choice flip probability

    # the same table under the team prior fitted with the one-fix structure searched, as `bayes-s2r prior` does
    one_fix = bench_allocation.main([*args, "--gain-prior", "history-fix",
                                     "--out", str(tmp_path / f"allocation{summarize.ONE_FIX_PRIOR}.json")])
    assert one_fix["settings"]["gain_prior"]["search"] == "bayes-s2r prior --candidates"
    fits = one_fix["settings"]["gain_prior"]["per_world"]
    assert all("fix_prob" in fit["prior"] for fit in fits.values())
    text = summarize.summarize(tmp_path)
    paragraph = next(x for x in text.splitlines() if x.startswith("Under the team prior fitted with the one-fix"))
    assert summarize.COMMANDS["allocation" + summarize.ONE_FIX_PRIOR] in paragraph
    for fit in fits.values():
        assert f"each candidate the fix with probability {fit['prior']['fix_prob']:g}" in paragraph
    fix_over = one_fix["over_worlds"]
    assert f"q_beta0 {fix_over['q_beta0']['final_J_mean']:.3f} [{fix_over['q_beta0']['final_J_ci_low']:+.3f}" in paragraph
    # the rule under it against under the table's own prior, paired over seeds
    x = np.mean([r["final_J_by_seed"] for r in one_fix["results"] if r["strategy"] == "q_cvu"], axis=0)
    y = np.mean([r["final_J_by_seed"] for r in fitted["results"] if r["strategy"] == "q_cvu"], axis=0)
    assert f"final J {x.mean():.3f} against {y.mean():.3f} (difference {x.mean() - y.mean():+.3f}" in paragraph
    glance = text.split("## Allocation quality at a glance")[1].split("\n## ")[0]
    below = sum(fix_over[k]["final_J_ci_high"] < 0 for k in ("q_beta0", "dr_only"))
    assert f"| {fix_over['q_cvu']['final_J_mean']:.3f} ({below} of 2 below) |" in glance


def test_calibration_under_the_team_prior_names_the_prior_the_allocation_tables_fitted(tmp_path):
    def sbc(coverage, p, divergences, prior=None):
        row = {"name": "all", "intervals": 1600, "coverage": coverage, "band": [0.864, 0.934],
               "rank_test": {"p_value": p}, "divergences": divergences}
        settings = {"datasets": 100, **({"prior": prior} if prior else {})}
        return {"benchmark": "sbc_gains", "machine": {"cores": 2, "backend": "cpu"}, "settings": settings,
                "results": [row]}

    (tmp_path / "sbc_gains.json").write_text(json.dumps(sbc(0.902, 0.27, 1)))
    text = summarize.summarize(tmp_path)
    assert "coverage 90.2%" in text and "p = 0.27; divergent transitions: 1." in text
    assert "team prior" not in text
    team = sbc(0.892, 0.076, 2, {"candidate_scale": 4, "candidate_df": 2})
    (tmp_path / "sbc_gains_team_prior.json").write_text(json.dumps(team))
    line = next(x for x in summarize.summarize(tmp_path).splitlines() if x.startswith("Under a team prior"))
    assert "scale 4, Student-t ν = 2 (`" in line and "coverage 89.2%" in line and "p = 0.08" in line
    fits = {w: {"prior": {"candidate_scale": 4.0, "candidate_df": 2.0}} for w in ("a", "b")}
    allocation = {"settings": {"gain_prior": {"per_world": fits}}}
    assert "(the one fitted for the allocation tables)" in "".join(summarize.sbc(sbc(0.902, 0.27, 1), team, allocation))
    fits["b"]["prior"]["candidate_scale"] = 2.0
    fits["a"]["prior"]["candidate_scale"] = 8.0
    assert "fitted for the allocation" not in "".join(summarize.sbc(sbc(0.902, 0.27, 1), team, allocation))
    # and under the one-fix structure, naming its settings
    one_fix = sbc(0.9225, 0.082, 0, {"fix_prob": 0.05, "fix_loc": 3, "fix_scale": 1})
    one_fix["settings"]["candidates"] = 16
    text = "".join(summarize.sbc(sbc(0.902, 0.27, 1), team, allocation, one_fix))
    assert "`GainPrior(fix_prob=0.05, fix_loc=3, fix_scale=1)`: each of the 16 candidates" in text
    assert "coverage 92.2%" in text and "p = 0.08; divergent transitions: 0." in text


def test_worlds_where_a_rival_already_reaches_the_safe_oracle_are_named():
    means = {"w1": {"q_cvu": 0.9, "dr_only": 1.0, "oracle": 1.0, "oracle_safe": 1.0},
             "w2": {"q_cvu": 0.9, "dr_only": 0.5, "oracle": 1.0, "oracle_safe": 0.9},
             "w3": {"q_cvu": 0.4, "dr_only": 0.995, "oracle": 1.0, "oracle_safe": 1.0}}
    data = {"settings": {"worlds": list(means)},
            "results": [{"world": w, "strategy": k, "final_J_mean": v} for w, m in means.items() for k, v in m.items()]}
    # q_cvu itself and the oracles do not count; within 0.01 of oracle_safe does
    assert summarize._worlds_at_the_ceiling(data) == ["w1", "w3"]


def test_the_random_world_section_reports_each_family_and_the_paired_intervals():
    data = json.loads((summarize.HERE / "results" / "worlds.json").read_text())
    text = "\n".join(summarize.worlds(data))
    for family, summary in data["summary"].items():
        assert f"**{family}**" in text
        row = summary["mv_greedy"]
        lo, hi = row["minus_q_cvu"]["ci95"]
        assert f"| mv_greedy | {row['net_utility_mean']:.3f} |" in text
        assert f"[{lo:+.3f}, {hi:+.3f}]" in text
    parts = data["settings"].get("parts") or [data["settings"]]  # a merged table names each part's command
    assert summarize.COMMANDS["worlds"] == parts[0]["command"]
    assert all(f"`{part['command']}`" in text for part in parts[1:])


def test_the_dp_ceiling_section_reports_each_rule_as_a_share_of_the_optimum():
    data = json.loads((summarize.HERE / "results" / "dp_ceiling.json").read_text())
    text = "\n".join(summarize.dp_ceiling(data))
    for variant, result in data["results"].items():
        line = next(x for x in text.splitlines() if x.startswith(f"| {variant} | "))
        q = result["rules"]["q_cvu"]
        assert f"| {q['ratio_of_means']:.3f} ({q['share_within_5pct']:.0%}) |" in line


def test_the_prior_check_section_shows_each_family_prior_and_the_rule_s_paired_difference():
    def load(name):
        return json.loads((summarize.HERE / "results" / f"{name}.json").read_text())

    data = load("prior_check")
    tables = [load(n) for n in ("worlds", "worlds_pilots", "worlds_held_out", "worlds_history_shared",
                                "worlds_held_out_shared")]
    lines = summarize.prior_check(data, *tables)
    for r in data["results"]:
        (row,) = [x for x in lines if x.startswith(f"| {r['family']} | ")]
        history = r["priors"]["history"]
        assert f"| {history['coverage']:.0%} (p {history['p_value']:.2g}), {history['mean_pit']:.2f}, " in row
        shared = tables[4] if r["family"] in W.HELD_OUT else tables[3]
        base = tables[2] if r["family"] in W.HELD_OUT else tables[1] if r["family"] == "pilots" else tables[0]
        diff = summarize._paired_diffs(shared, base, r["family"], "q_cvu")
        assert row.endswith(f"| {summarize._diff_cell(diff)} |")
    # without the rule's tables the column says so
    rows = [x for x in summarize.prior_check(data) if x.startswith("| ") and not x.startswith("| family")]
    assert len(rows) == len(data["results"]) and all(x.endswith("| — |") for x in rows)


def test_the_team_prior_variants_pair_the_rule_with_its_table_under_the_short_history():
    def load(name):
        return json.loads((summarize.HERE / "results" / f"{name}.json").read_text())

    long, baseline, held_out = load("worlds_history_shared_200"), load("worlds_history_baseline"), load("worlds_held_out")
    assert summarize.team_prior_variants(long, None, held_out) == summarize.team_prior_variants(
        long, baseline, held_out)[:len(summarize.team_prior_variants(long, None, held_out))]
    lines = summarize.team_prior_variants(long, None, held_out)
    for family, summary in long["summary"].items():
        (row,) = [x for x in lines if x.startswith(f"| {family} | ")]
        assert f"| {summary['q_cvu']['net_utility_mean']:.3f} |" in row
        diff = summarize._paired_diffs(long, held_out, family, "q_cvu")
        assert row.endswith(f"| {summarize._diff_cell(diff)} |") and len(diff) == 200
        ahead = [k for k, v in summary.items() if not k.startswith("_") and k != "q_cvu" and v["minus_q_cvu"]["ci95"][0] > 0]
        assert all(f"{k} {summary[k]['minus_q_cvu']['mean']:+.3f}" in row for k in ahead)
    below = summarize.team_prior_variants(long, baseline, held_out)[len(lines):]
    for family, summary in baseline["summary"].items():
        (row,) = [x for x in below if x.startswith(f"| {family} | ")]
        assert row.endswith(f"| {summarize._diff_cell(summarize._paired_diffs(baseline, held_out, family, 'q_cvu'))} |")


def test_the_belief_structure_section_shows_every_truth_rule_and_belief():
    data = json.loads((summarize.HERE / "results" / "belief_structure.json").read_text())
    library = json.loads((summarize.HERE / "results" / "belief_structure_library.json").read_text())
    lines = "\n".join(summarize.belief_structure(data, library)).splitlines()
    for source, rules in ((data, data["settings"]["rules"]), (library, ["q_cvu+tr"])):
        for truth, result in source["results"].items():
            for rule in rules:
                row = [x for x in lines if x.startswith(f"| {truth} | {rule} | ")]
                entry = result["rules"][rule]
                assert len(row) == 1 and row[0].count("|") == len(source["settings"]["beliefs"]) + 3
                assert f"| {entry['coupled@1']['share_of_dp']:.3f} (" in row[0]


def test_the_regime_section_shows_each_arm_and_the_rule_s_choices(tmp_path):
    arm = lambda J, share, eps=0: {"J_mean": J, "J_ci95": [J - 0.1, J + 0.1], "gap_closed_pooled": share,
                                   "real_episodes_per_world": eps}
    data = {"machine": {"cores": 2, "backend": "cpu"},
            "settings": {"mass": [2.5, 3.5], "gear": [0.22, 0.3], "dr_mass_width": 2.5, "dr_gear_width": 0.8,
                         "si_episodes": 6, "si_horizon": 20, "eval_episodes": 512, "pilot_episodes": 24,
                         "shakedown": 60},
            "summary": {"worlds": 10, "arms": {"nominal": arm(0.0, 0.0), "si": arm(0.95, 0.95, 6),
                                               "dr_wide": arm(0.1, 0.1), "oracle": arm(1.0, 1.0)},
                        "si_minus_dr_wide": {"mean": 0.85, "ci95": [0.7, 1.0]}, "choices": {"si": 9, "dr_wide": 1},
                        "si_chosen_share": 0.9, "chosen_J_mean": 0.9, "best_of_si_dr_J_mean": 0.95,
                        "si_protocol_unsafe": [2, 660], "regime_reproduced": True},
            "results": [{"arms": {"nominal": {"J": 0.0}, "si": {"J": si}, "dr_wide": {"J": dr, "J_sim_on_dr_range": v}},
                         "decision": {"best": best, "table": {"si": {"feasible": best is not None}}}}
                        for si, dr, v, best in ((1.0, 0.2, 0.7, "si"), (1.0, 0.98, 0.8, "dr_wide"),
                                                (0.9, 0.1, 0.75, None))]}
    (tmp_path / "regime.json").write_text(json.dumps(data))
    text = summarize.summarize(tmp_path)
    assert summarize.COMMANDS["regime"] in text
    assert "| SI, then retrain at the fit | 0.950 | [0.850, 1.050] | 95% | 6 |" in text
    assert "| wide DR (contains the truth) | 0.100 | [0.000, 0.200] | 10% | 0 |" in text
    assert "chose, per world: si 9, dr_wide 1 (SI in 90% of the worlds)" in text
    assert "averages 0.900 against 0.950" in text and "unsafe in 2 of 660 short episodes" in text
    assert "the wide-DR policy succeeds in 75% of the episodes" in text
    assert "within 0.05 of the better of SI and wide DR in 2 of 3 worlds" in text  # the stop keeps J 0
    assert "In 1 stop(s) the safety gate had closed SI" in text
    assert "Regime reproduced" in text and "With 2 SI episodes" not in text  # a variant not run is not shown
    variant = json.loads(json.dumps(data))
    variant["summary"]["arms"]["dr_wide"] = arm(0.5, 0.5)
    variant["summary"]["si_minus_dr_wide"] = {"mean": 0.45, "ci95": [-0.1, 1.0]}
    (tmp_path / "regime_dr_x4.json").write_text(json.dumps(variant))
    text = summarize.summarize(tmp_path)
    assert (f"With 4× the DR training (32 generations of 32 episodes per candidate) (`{summarize.COMMANDS['regime_dr_x4']}`)"
            ": SI 0.950 (95% of the gap), wide DR 0.500 (50%), SI minus wide DR +0.450 [-0.100, +1.000]; the rule "
            "chose si 9, dr_wide 1, an arm within 0.05 of the better of SI and wide DR in 2 of 3 worlds.") in text


def test_the_random_world_section_compares_a_fitted_prior_mean_with_the_library_s_by_world():
    def table(q, loc=None):
        rows = [{"family": "small", "world": w, "strategy": s, "net_utility": v}
                for w, v in enumerate(q) for s in ("q_cvu",)]
        diff = {"mean": 0.01, "ci95": [-0.02, 0.04]}
        return {"settings": {"team_priors": {"small": {"gain_loc": loc}} if loc is not None else {}},
                "summary": {"small": {"mv_greedy": {"minus_q_cvu": diff}}}, "rows": rows}

    fitted, fixed = table([0.5, 0.4, 0.7], loc=0.0), table([0.4, 0.4, 0.5, 0.9])  # world 3 only in one
    line = next(x for x in summarize._worlds_location(fixed, fitted) if x.startswith("| small |"))
    lo, hi = summarize.common.t_interval(np.array([0.1, 0.0, 0.2]))
    assert line.startswith(f"| small | 0 | +0.100 [{lo:+.3f}, {hi:+.3f}] (3 worlds) | +0.010 [-0.020, +0.040] |")


def test_the_library_prior_companion_names_the_rivals_ahead_of_the_rule_and_its_unsafe_episodes():
    def row(net, lo, hi, unsafe=0.0):
        return {"net_utility_mean": net, "unsafe_mean": unsafe, "minus_q_cvu": {"mean": (lo + hi) / 2, "ci95": [lo, hi]}}

    summary = {"q_cvu": {"net_utility_mean": 0.4, "unsafe_mean": 0.0}, "q_beta0": row(0.39, -0.02, 0.0),
               "round_robin": row(0.45, 0.01, 0.09, unsafe=2.5), "mv_greedy": row(0.41, -0.01, 0.03),
               "oracle_safe": row(0.6, 0.1, 0.3), "_gap": {"best_rival": "mv_greedy", "gap_closed": -0.05}}
    library = {"settings": {"worlds": 3}, "machine": {}, "summary": {"robot": summary}}
    line = next(x for x in summarize._worlds_library(library) if x.startswith("| robot |"))
    assert line == "| robot | 0.400 | 0.00 | round_robin +0.050; 2.50 | -0.010 [-0.020, +0.000] | -5% (from mv_greedy) |"


def test_the_pilot_table_s_g0_companion_is_paired_by_seed_and_counts_the_campaigns_that_open_with_a_pilot():
    def table(j_by_world, paths):
        return {"machine": {}, "results": [
            {"world": w, "strategy": "q_cvu", "final_J_by_seed": js, "net_utility_by_seed": [j - 0.1 for j in js],
             "paths": paths} for w, js in j_by_world.items()]}

    default = table({"a": [0.0, 1.0, 0.0], "b": [1.0, 1.0, 0.0]}, ["dr > da", "da", "dr"])
    g0 = table({"a": [1.0, 1.0, 0.0], "b": [1.0, 1.0, 1.0]}, ["pilot_dr > dr", "pilot_da > da", "dr"])
    (text, blank) = summarize._pilots_g0(default, g0)
    lo, hi = summarize.common.t_interval(np.array([0.5, 0.0, 0.5]))
    assert f"final J 0.833 against 0.500 (difference +0.333 [{lo:+.3f}, {hi:+.3f}])" in text
    assert "opens with a pilot in 67% of its campaigns" in text and blank == ""


def test_the_pilot_table_with_the_starting_record_is_paired_by_seed_and_counts_the_campaigns_ending_at_zero():
    def table(j_by_world, **settings):
        return {"machine": {}, "settings": settings, "results": [
            {"world": w, "strategy": "q_cvu", "final_J_by_seed": js, "net_utility_by_seed": js, "paths": []}
            for w, js in j_by_world.items()]}

    default = table({"a": [0.0, 1.0, 0.0], "b": [1.0, 1.0, 0.0]})
    g0 = table({"a": [1.0, 1.0, 0.0], "b": [1.0, 1.0, 1.0]})
    base = table({"a": [1.0, 1.0, 0.5], "b": [1.0, 1.0, 1.0]}, baseline_episodes=100)
    g0_base = table({"a": [1.0, 1.0, 1.0], "b": [1.0, 1.0, 1.0]}, baseline_episodes=100)
    (text, blank) = summarize._pilots_baseline(default, g0, base, g0_base)
    lo, hi = summarize.common.t_interval(np.array([0.5, 0.0, 0.75]))
    assert f"final J 0.917 against 0.500 (difference +0.417 [{lo:+.3f}, {hi:+.3f}]) without the record" in text
    assert "3 of the rule's 6 campaigns end at true J 0 (G0 two decisions ahead: 1), with it 0 (G0: 0)" in text
    assert "(100 episodes" in text and blank == ""


def test_the_shared_levels_difference_is_pooled_world_by_world_over_every_family():
    def table(values):  # {family: [q_cvu net utility per world]}
        rows = [{"family": f, "world": w, "strategy": "q_cvu", "net_utility": v}
                for f, vs in values.items() for w, v in enumerate(vs)]
        return {"summary": {f: {"q_cvu": {}} for f in values}, "rows": rows}

    held, first = table({"a": [0.1, 0.2]}), table({"b": [0.5, 0.5, 0.4]})
    held_shared, first_shared = table({"a": [0.2, 0.2]}), table({"b": [0.5, 0.6, 0.4]})
    text = "\n".join(summarize._pooled_shared([held, first], [held_shared, first_shared]))
    diffs = np.array([0.1, 0.0, 0.0, 0.1, 0.0])
    assert "families (a, b;" in text and summarize._diff_cell(diffs) in text and "(5 worlds)" in text
    assert summarize._pooled_shared([held, None], [held_shared, first_shared]) == []
    # pairing that would silently drop or double worlds is refused
    with pytest.raises(ValueError, match="'a' is in two"):
        summarize._pooled_shared([held, first], [held_shared, held_shared])
    with pytest.raises(ValueError, match="'b': 2 worlds with the shared levels and 3 without"):
        summarize._pooled_shared([held, first], [held_shared, table({"b": [0.5, 0.6]})])
    with pytest.raises(ValueError, match="'a' has 2 tables"):
        summarize._pooled_shared([held, held], [held_shared])


def test_the_one_fix_section_pairs_the_rule_with_its_default_table_and_puts_the_rivals_against_it():
    def table(values, paths, priors=None, rivals=None):
        rows = [{"family": f, "world": w, "strategy": "q_cvu", "net_utility": v, "path": paths[f][w]}
                for f, vs in values.items() for w, v in enumerate(vs)]
        rows += [{"family": f, "world": w, "strategy": s, "net_utility": v, "path": []}
                 for (f, s), vs in (rivals or {}).items() for w, v in enumerate(vs)]
        summary = {f: {"q_cvu": {"net_utility_mean": float(np.mean(vs))}} for f, vs in values.items()}
        settings = {"team_priors": priors or {}}
        return {"machine": {"cores": 2, "backend": "cpu"}, "settings": settings, "summary": summary, "rows": rows}

    fix = table({"a": [0.5, 0.4], "b": [0.2, 0.2]}, {"a": [["x"], ["y"]], "b": [["x"], ["x"]]},
                priors={"a": {"fix_prob": 0.15, "fix_loc": 2.0, "fix_scale": 0.5}, "b": {"fix_prob": 0.0}})
    first = table({"a": [0.3, 0.4]}, {"a": [["y"], ["y"]]},
                  rivals={("a", "pandora"): [0.6, 0.4], ("a", "mv_greedy"): [0.1, 0.1]})
    held = table({"b": [0.2, 0.1]}, {"b": [["x"], ["x"]]},
                 rivals={("b", "pandora"): [0.2, 0.2], ("b", "mv_greedy"): [0.0, 0.0]})
    text = "\n".join(summarize.one_fix(fix, None, first, None, held))
    assert "## One fix per campaign" in text and "--gain-prior history-fix" in text
    cells = [summarize._diff_cell(np.array(x)) for x in ([0.2, 0.0], [0.1, 0.0], [-0.4, -0.3])]
    assert f"| a | 0.15, 2 ± 0.5 | 0.450 | {cells[0]} | 1 of 2 | {cells[1]} | {cells[2]} |" in text
    assert "| b | none (q = 0) | 0.200 |" in text
    assert f"| all 2 families together | | | {summarize._diff_cell(np.array([0.2, 0.0, 0.0, 0.1]))} |" in text
    with pytest.raises(ValueError, match="'b' has 0 default tables"):
        summarize.one_fix(fix, None, first)
    # the belief-driven rivals under the same prior, and each strategy's lift from it
    riv = table({"a": [0.5, 0.4]}, {"a": [["x"], ["y"]]}, rivals={("a", "pandora"): [0.7, 0.6]})
    riv["settings"]["strategies"] = ["q_cvu", "pandora"]
    riv["summary"]["a"]["q_cvu"]["unsafe_mean"] = 0.0
    riv["summary"]["a"]["pandora"] = {"net_utility_mean": 0.65, "unsafe_mean": 0.0,
                                      "minus_q_cvu": {"mean": 0.2, "ci95": [0.2, 0.2]}}
    text = "\n".join(summarize.one_fix(fix, riv, first, None, held))
    assert "| a | 0.450 | 0.00 | pandora +0.200; 0.00 |" in text
    lifts = [summarize._diff(float(np.mean(v)), *summarize.common.t_interval(np.array(v)))
             for v in ([0.2, 0.0], [0.1, 0.2])]
    assert f"| a | {lifts[0]} | {lifts[1]} |" in text


def test_the_method_fix_section_pairs_the_rule_with_both_priors_and_the_rivals_under_the_same_one():
    def table(values, paths, priors=None, rivals=None, strategies=("q_cvu",)):
        rows = [{"family": f, "world": w, "strategy": "q_cvu", "net_utility": v, "path": paths[f][w]}
                for f, vs in values.items() for w, v in enumerate(vs)]
        rows += [{"family": f, "world": w, "strategy": s, "net_utility": v, "path": []}
                 for (f, s), vs in (rivals or {}).items() for w, v in enumerate(vs)]
        summary = {f: {"q_cvu": {"net_utility_mean": float(np.mean(vs))}} for f, vs in values.items()}
        settings = {"team_priors": priors or {}, "strategies": list(strategies)}
        return {"machine": {"cores": 2, "backend": "cpu"}, "settings": settings, "summary": summary, "rows": rows}

    data = table({"a": [0.5, 0.4]}, {"a": [["x"], ["y"]]}, priors={"a": {"method_fix_probs": {"FT": 0.3, "DR": 0.05}}})
    one_q = table({"a": [0.4, 0.4]}, {"a": [["x"], ["x"]]})
    default = table({"a": [0.3, 0.5], "b": [0.1, 0.1]}, {"a": [["y"], ["y"]], "b": [["y"], ["y"]]})
    text = "\n".join(summarize.method_fix(data, None, one_q, None, default))
    assert "## One fix per campaign, its probability by method" in text and "history-fix-method" in text
    cells = [summarize._diff_cell(np.array(x)) for x in ([0.2, -0.1], [0.1, 0.0])]
    assert f"| a | DR 0.05, FT 0.30 | 0.450 | {cells[0]} | {cells[1]} | 1 of 2 |" in text
    rivals = table({}, {}, rivals={("a", "pandora"): [0.6, 0.2], ("b", "pandora"): [0.1, 0.4],
                                   ("c", "pandora"): [0.1, 0.3]}, strategies=("pandora",))
    rivals["summary"] = {f: {"pandora": {"net_utility_mean": 0.2}} for f in "abc"}
    # b: one q for all, the one-fix table's prior, so its rule; c: a prior the one-fix table did not run
    rivals["settings"]["team_priors"] = {"b": {"fix_prob": 0.1, "method_fix_probs": {}},
                                         "c": {"fix_prob": 0.2, "method_fix_probs": {}}}
    one_q["rows"] += [{"family": "b", "world": w, "strategy": "q_cvu", "net_utility": v, "path": []}
                      for w, v in enumerate([0.2, 0.2])]
    one_q["settings"]["team_priors"] = {"b": {"fix_prob": 0.1}, "c": {"fix_prob": 0.1}}
    text = "\n".join(summarize.method_fix(data, rivals, one_q, None, default))
    assert f"| a | DR 0.05, FT 0.30 | {summarize._diff_cell(np.array([0.1, -0.2]))} |" in text
    assert f"| b | one for all | {summarize._diff_cell(np.array([0.1, 0.4]) - 0.2)} |" in text
    assert "| c |" not in text
    # the rule under this prior against the default one where its campaigns are known (a, and b by the one-q table)
    a, b = summarize._diff(0.05, *summarize.common.t_interval(np.array([0.2, -0.1]))), summarize._diff(0.1, 0.1, 0.1)
    pooled = summarize._diff_cell(np.array([0.2, -0.1, 0.1, 0.1]))
    assert f"in the 2 families where its campaigns under it are known: a {a}, b {b}; all together {pooled}." in text


def test_the_method_fix_section_puts_every_strategy_against_the_rule_and_checks_the_plain_ones_rerun():
    def row(family, world, strategy, net, unsafe=0):
        return {"family": family, "world": world, "strategy": strategy, "net_utility": net, "final_J": net,
                "unsafe": unsafe, "probe_unsafe": 0, "rounds": 2, "spent": {"real": 0.0, "compute": 0.1, "eng": 0.1},
                "seconds": 1.0, "path": [strategy]}

    def table(rows, strategies, priors=None):
        return {"machine": {"cores": 2, "backend": "cpu"}, "rows": rows,
                "settings": {"strategies": list(strategies), "team_priors": priors or {}, "worlds": 3},
                "summary": {f: {} for f in {r["family"] for r in rows}}}

    rule = [0.50, 0.60, 0.70]
    data = table([row("a", w, "q_cvu", v) for w, v in enumerate(rule)], ["q_cvu"],
                 priors={"a": {"method_fix_probs": {"FT": 0.3}}})
    data["summary"]["a"]["q_cvu"] = {"net_utility_mean": 0.6}
    rivals = table([row("a", w, "pandora", v - d) for w, (v, d) in enumerate(zip(rule, (0.10, 0.11, 0.10)))]
                   + [row("a", w, "mv_greedy", v + d) for w, (v, d) in enumerate(zip(rule, (0.1, -0.1, 0.05)))],
                   ["pandora", "mv_greedy"])
    rivals["summary"]["a"] = {"pandora": {}, "mv_greedy": {}}
    default = table([row("a", w, s, v, unsafe) for w in range(3) for s, v, unsafe in
                     (("q_cvu", 0.4, 0), ("round_robin", 0.9, 3), ("dr_only", 0.2, 0), ("oracle_safe", 0.95, 0))],
                    ["q_cvu", "round_robin", "dr_only", "oracle_safe"])
    plain = table([row("a", 0, "round_robin", 0.9, 3), row("a", 1, "dr_only", 0.2), row("a", 2, "dr_only", 0.25)],
                  ["round_robin", "dr_only"])
    one_q = table([row("a", w, "q_cvu", 0.5) for w in range(3)], ["q_cvu"])
    text = "\n".join(summarize.method_fix(data, rivals, one_q, plain, default))
    assert "2 of 3 campaigns are those of the default tables" in text  # world 2's dr_only differs
    # round_robin is ahead but with unsafe episodes; mv_greedy is level; pandora and dr_only are below
    assert "| a | 0.600 | 0.00 | round_robin +0.300; 3.00 | mv_greedy +0.017 |" in text
    best = np.mean([v + d for v, d in zip(rule, (0.1, -0.1, 0.05))])  # the best with no more unsafe episodes
    assert f"{(0.6 - best) / (0.95 - best):.0%} (from mv_greedy) |" in text


def test_the_fresh_families_section_reports_the_test_set_before_they_ran():
    def table(values):  # {family: [q_cvu net utility per world]}
        rows = [{"family": f, "world": w, "strategy": "q_cvu", "net_utility": v, "path": []}
                for f, vs in values.items() for w, v in enumerate(vs)]
        summary = {f: {"q_cvu": {k: float(np.mean(vs)) for k in ("net_utility_mean", "final_J_mean")}
                       | {"unsafe_mean": 0.0, "probe_unsafe_mean": 0.0, "rounds_mean": 2.0}} for f, vs in values.items()}
        settings = {"worlds": 3, "families": list(values), "rounds": 4, "gain_prior": "history-fix-method",
                    "team_priors": {}}
        return {"machine": {"cores": 2, "backend": "cpu"}, "settings": settings, "summary": summary, "rows": rows}

    data = table({"a": [0.5, 0.6, 0.7], "b": [0.2, 0.3, 0.4]})
    text = "\n".join(summarize.worlds_fresh(data, table({"a": [0.4, 0.5, 0.6], "b": [0.2, 0.35, 0.4]})))
    assert "after the team prior's default changed" in text and "**a**" in text and "**b**" in text
    cell = summarize._diff_cell(np.array([0.1, 0.1, 0.1]))
    assert f"a {cell}" in text and "The test is met: it lost in neither." in text
    lost = "\n".join(summarize.worlds_fresh(data, table({"a": [0.6, 0.7, 0.8], "b": [0.2, 0.3, 0.4]})))
    assert "The test is not met: the rule lost in a." in lost


def test_the_rollout_margin_section_pairs_each_family_with_the_default_rule_s_table():
    def table(values, paths, **settings):  # {family: [q_cvu net utility per world]}, {family: [path per world]}
        rows = [{"family": f, "world": w, "strategy": "q_cvu", "net_utility": v, "path": paths[f][w]}
                for f, vs in values.items() for w, v in enumerate(vs)]
        summary = {f: {"q_cvu": {"net_utility_mean": float(np.mean(vs))}} for f, vs in values.items()}
        return {"machine": {"cores": 2, "backend": "cpu"}, "settings": settings, "summary": summary, "rows": rows}

    margin = table({"a": [0.3, 0.5], "b": [0.2, 0.2, 0.1]}, {"a": [["x"], ["y"]], "b": [["x"], ["x"], ["y"]]},
                   overrides={"rollout_margin": 1})
    first, held = table({"a": [0.1, 0.5]}, {"a": [["y"], ["y"]]}), table({"b": [0.2, 0.2, 0.2]}, {"b": [["x"]] * 3})
    text = "\n".join(summarize.rollout_margin(margin, None, None, first, held))
    assert "`rollout_margin=1` on every family" in text
    assert f"| a | 0.400 | {summarize._diff_cell(np.array([0.2, 0.0]))} | 1 of 2 |" in text
    assert f"| b | 0.167 | {summarize._diff_cell(np.array([0.0, 0.0, -0.1]))} | 1 of 3 |" in text
    assert summarize._diff_cell(np.array([0.2, 0.0, 0.0, 0.0, -0.1])) in text
    with pytest.raises(ValueError, match="'b' has 0 default tables"):
        summarize.rollout_margin(margin, None, None, first)
    # a margin run on some of the families says which
    some = table({"b": [0.1, 0.2, 0.2]}, {"b": [["y"], ["x"], ["x"]]}, overrides={"rollout_margin": 0.5})
    text = "\n".join(summarize.rollout_margin_half(some, None, None, first, held))
    assert "`rollout_margin=0.5` on b" in text and "worlds_rollout_margin_half.json" in text
    assert f"| these families together | | {summarize._diff_cell(np.array([-0.1, 0.0, 0.0]))} | |" in text
    # another option of the rule, with its own words and no DP table
    draws = table({"a": [0.1, 0.4]}, {"a": [["y"], ["x"]]}, overrides={"base_index": "draws"})
    text = "\n".join(summarize.base_index_draws(draws, first, held))
    assert '`base_index="draws"` on a' in text and "| family | q_cvu, draws | draws − default, 95% |" in text
    assert f"| a | 0.250 | {summarize._diff_cell(np.array([0.0, -0.1]))} | 1 of 2 |" in text
    # a diagnosis margin
    sure = table({"b": [0.2, 0.3, 0.2]}, {"b": [["x"], ["y"], ["x"]]}, overrides={"diagnosis_margin": 1})
    text = "\n".join(summarize.diagnosis_margin(sure, first, held))
    assert "`diagnosis_margin=1` on b" in text and "leads the stop's by more than 1 Monte-Carlo" in text
    assert f"| b | 0.233 | {summarize._diff_cell(np.array([0.0, 0.1, 0.0]))} | 1 of 3 |" in text
    assert "It would be the default only if no family lost" in text
    # the rule without the margin, once the margin is the campaign's default
    before = table({"b": [0.2, 0.1, 0.2]}, {"b": [["x"], ["y"], ["x"]]}, overrides={"diagnosis_margin": 0})
    text = "\n".join(summarize.diagnosis_margin(before, first, held))
    assert "the rule without its margin, `diagnosis_margin=0` on b" in text and "It would be the default" not in text
    assert f"| b | 0.167 | {summarize._diff_cell(np.array([0.0, -0.1, 0.0]))} | 1 of 3 |" in text
    assert "| family | q_cvu, no margin | no margin − default, 95% |" in text


def test_the_sized_hierarchy_section_pairs_the_rule_with_the_default_prior_s_table_of_each_family():
    def table(values, priors=None):
        rows = [{"family": f, "world": w, "strategy": "q_cvu", "net_utility": v, "path": [str(v)]}
                for f, vs in values.items() for w, v in enumerate(vs)]
        summary = {f: {"q_cvu": {"net_utility_mean": float(np.mean(vs))}} for f, vs in values.items()}
        return {"machine": {"cores": 2, "backend": "cpu"}, "settings": {"team_priors": priors or {}},
                "summary": summary, "rows": rows}

    sized = table({"a": [0.5, 0.4], "b": [0.3, 0.3], "c": [0.2, 0.6]})
    method_fix = table({"a": [0.3, 0.4]})  # a: each method its own fix probability
    one_q = table({"b": [0.1, 0.2]}, priors={"b": {"fix_prob": 0.1}})  # b: one for all, the one-q table's prior
    rivals = table({}, priors={"a": {"method_fix_probs": {"FT": 0.3}}, "b": {"fix_prob": 0.1, "method_fix_probs": {}}})
    fresh = table({"c": [0.2, 0.5]})
    check = {"machine": {"cores": 2, "backend": "cpu"},
             "results": [{"family": "a", "true_gain": 0.02, "priors": {
                 "history-fix-method": {"coverage": 0.99, "gain_expected": 0.08},
                 "history-fix-method-hierarchy": {"coverage": 0.9, "gain_expected": 0.03}}}]}
    text = "\n".join(summarize.one_fix_hierarchy(sized, check, method_fix, rivals, one_q, fresh))
    cell = summarize._diff_cell
    assert f"| a | 0.020 | 99%, 0.080 | 90%, 0.030 | 0.450 | {cell(np.array([0.2, 0.0]))} | 1 of 2 |" in text
    assert f"| b | — | — | — | 0.300 | {cell(np.array([0.2, 0.1]))} | 2 of 2 |" in text
    assert f"| c | — | — | — | 0.400 | {cell(np.array([0.0, 0.1]))} | 1 of 2 |" in text
    assert f"| all families together | | | | | {cell(np.array([0.2, 0.0, 0.2, 0.1, 0.0, 0.1]))} | |" in text


def _worlds_row(family, world, strategy, net):
    return {"family": family, "world": world, "strategy": strategy, "net_utility": net, "final_J": net,
            "unsafe": 0, "probe_unsafe": 0, "rounds": 2, "spent": {"real": 0.0, "compute": 1.0, "eng": 1.0},
            "seconds": 1.0, "path": [str(net)], "start_J": 0.3 + 0.01 * world}


def _worlds_table(values, priors=None, **settings):
    """A worlds table from {(family, strategy): [net utility per world]}."""
    import bench_worlds

    rows = [_worlds_row(f, w, s, v) for (f, s), vs in values.items() for w, v in enumerate(vs)]
    families = dict.fromkeys(f for f, _ in values)
    summary = {f: bench_worlds.summarize([r for r in rows if r["family"] == f],
                                         tuple(dict.fromkeys(s for g, s in values if g == f))) for f in families}
    strategies = list(dict.fromkeys(s for _, s in values))
    return {"machine": {"cores": 2, "backend": "cpu"},
            "settings": {"team_priors": priors or {}, "strategies": strategies, **settings},
            "summary": summary, "rows": rows}


def test_the_fix_per_method_section_pairs_the_rule_and_its_rivals_with_the_default_prior_s_tables():
    table = _worlds_table
    method = {"fix_prob": 0.2, "fix_loc": 1.0, "fix_scale": 0.5, "fix_unit": "method"}
    per_method = table({("b", "q_cvu"): [0.5, 0.4], ("k", "q_cvu"): [0.6, 0.3]}, priors={"b": method, "k": method})
    rivals = table({("b", "mv_greedy"): [0.4, 0.4], ("k", "mv_greedy"): [0.5, 0.5]})
    kin = table({("k", "q_cvu"): [0.4, 0.3], ("k", "mv_greedy"): [0.3, 0.2], ("k", "oracle_safe"): [0.9, 0.9]})
    one_q = table({("b", "q_cvu"): [0.3, 0.3]}, priors={"b": {"fix_prob": 0.1}})  # b: one q for all
    method_fix = table({("a", "q_cvu"): [0.1, 0.1]})
    method_fix_rivals = table({("b", "mv_greedy"): [0.2, 0.3]}, priors={"b": {"fix_prob": 0.1, "method_fix_probs": {}}})
    check = {"machine": {"cores": 2, "backend": "cpu"},
             "results": [{"family": f, "priors": {"history-fix-per-method": {"fitted": p}}}
                         for f, p in (("b", method), ("k", method), ("c", {"fix_prob": 0.1, "fix_unit": "candidate"}))]}
    held_out = table({("b", "q_cvu"): [0.3, 0.3], ("b", "oracle_safe"): [0.8, 0.9]})
    text = "\n".join(summarize.fix_per_method(per_method, rivals, kin, check, method_fix, method_fix_rivals, one_q,
                                              held_out))
    cell = summarize._diff_cell
    assert "a fix per method in b, k; one fix per campaign (the default team prior itself, so the same campaigns) " \
           "in the other 1" in text
    assert f"| b | method, 0.2 per method, 1 ± 0.5 | 0.450 | {cell(np.array([0.2, 0.1]))} | 2 of 2 |" in text
    assert f"| k | method, 0.2 per method, 1 ± 0.5 | 0.450 | {cell(np.array([0.2, 0.0]))} | 1 of 2 |" in text
    assert f"| these families together | | | {cell(np.array([0.2, 0.1, 0.2, 0.0]))} | |" in text
    # the rivals under the same prior against the rule, and (in brackets) against themselves under the default
    assert f"| b | {cell(np.array([-0.1, 0.0]))} (+0.150) |" in text
    assert f"| k | {cell(np.array([-0.1, 0.2]))} (+0.250) |" in text
    assert "Every strategy on `kin`" in text and "| k | 0.350 | 0.00 |" in text
    # every strategy under the prior: its rule and rivals, the plain strategies from each family's default table
    every = text[text.index("Every strategy against the rule under this prior"):text.index("Every strategy on `kin`")]
    # stopping at once (net utility the start's J, 0.30 and 0.31) is a rival too
    assert "| b | 0.450 | 0.00 | none | mv_greedy -0.050, stop_at_once -0.145 | " in every and "(from mv_greedy)" in every
    assert "| k | 0.450 | 0.00 | none | mv_greedy +0.050, stop_at_once -0.145 | " in every


def test_the_ten_teams_section_pairs_each_rival_over_the_teams_and_under_the_one_history():
    table = _worlds_table
    # two teams: worlds 0 and 2 are team 0's, 1 and 3 team 1's
    data = table({("s", "q_cvu"): [0.5, 0.4, 0.5, 0.4], ("s", "q_beta0"): [0.4, 0.5, 0.4, 0.5],
                  ("s", "oracle_safe"): [0.9, 0.9, 0.9, 0.9]}, teams=2)
    lookahead = table({("r", "q_cvu"): [0.5, 0.5, 0.6, 0.4], ("r", "q_beta0"): [0.4, 0.4, 0.4, 0.4]}, teams=2)
    per_method = table({("b", "q_cvu"): [0.5]})
    method_fix = table({("r", "q_cvu"): [0.6, 0.6]})
    method_fix_rivals = table({("s", "q_beta0"): [0.3, 0.3], ("r", "q_beta0"): [0.5, 0.4]},
                              priors={"s": {"fix_prob": 0.1, "method_fix_probs": {}}})
    one_q = table({("s", "q_cvu"): [0.4, 0.4]}, priors={"s": {"fix_prob": 0.1}})
    text = "\n".join(summarize.teams(data, lookahead, per_method, None, None, method_fix, method_fix_rivals, one_q))
    cell = summarize._diff_cell
    assert "## Ten teams" in text and summarize.COMMANDS["worlds_teams"] in text
    # over the teams from the table itself; under the one history from the default tables; q_beta0 ahead in team 1
    assert (f"| s | q_beta0 | {cell(np.array([-0.1, 0.1, -0.1, 0.1]))} | {cell(np.array([-0.1, -0.1]))} | "
            "1 of 2 |") in text
    assert (f"| r | 0.500 | {cell(np.array([-0.1, -0.1, -0.2, 0.0]))} | {cell(np.array([-0.1, -0.2]))} | "
            "0 of 2 |") in text
    assert "Every strategy against the rule" in text and "| s | 0.450 | 0.00 |" in text
    assert "method's mean shrunk" not in text
    # what trying gained over stopping at once: net utility minus the start's J, by world
    gained = [0.5 - 0.3, 0.4 - 0.31, 0.5 - 0.32, 0.4 - 0.33]  # the rows' starts: 0.3 + 0.01 per world
    assert f"| s | q_cvu | {cell(np.array(gained))} |" in text
    assert "gains over stopping at once with an interval" not in text  # no pandora in s to read it by
    # with the shrunk prior's table: its rule against the first table's, paired by world
    shrunk = table({("s", "q_cvu"): [0.6, 0.4, 0.6, 0.5], ("s", "q_beta0"): [0.5, 0.5, 0.5, 0.5],
                    ("s", "oracle_safe"): [0.9, 0.9, 0.9, 0.9]}, teams=2)
    text = "\n".join(summarize.teams(data, lookahead, per_method, None, None, method_fix, method_fix_rivals, one_q,
                                     shrunk))
    assert summarize.COMMANDS["worlds_teams_shrunk"] in text
    section = text.split("method's mean shrunk")[1]
    assert "| s | 0.525 | 0.00 |" in section and section.rstrip().endswith(f"{cell(np.array([0.1, 0.0, 0.1, 0.1]))} |")


def test_the_hierarchy_section_pairs_the_rule_with_the_own_means_prior_and_with_stopping_at_once():
    table, cell = _worlds_table, summarize._diff_cell
    data = table({("a", "q_cvu"): [0.5, 0.6, 0.7], ("b", "q_cvu"): [0.2, 0.2, 0.2]})
    default = table({("a", "q_cvu"): [0.4, 0.5, 0.6]})
    lookahead = table({("b", "q_cvu"): [0.3, 0.35, 0.3]})  # b's default rule comes from a later table
    rivals = table({("c", "q_cvu"): [0.5, 0.5], ("c", "mv_greedy"): [0.4, 0.6]})
    teams_table = table({("c", "q_cvu"): [0.4, 0.4]})
    text = "\n".join(summarize.teams_hierarchy(data, default, rivals, teams_table, lookahead))
    start = np.array([0.30, 0.31, 0.32])  # _worlds_row's start J
    assert (f"| a | 0.600 | {cell(np.full(3, 0.1))} | {cell(np.array([0.5, 0.6, 0.7]) - start)} | "
            f"{cell(np.array([0.4, 0.5, 0.6]) - start)} | 2.0 (2.0) |") in text
    assert f"| b | 0.200 | {cell(np.array([-0.1, -0.15, -0.1]))} |" in text
    assert "| c | 0.500 | 0.00 | none | mv_greedy +0.000" in text and f"{cell(np.full(2, 0.1))} |" in text
    assert ("Over these 3 families the rule under this prior is below itself under the own means with an interval "
            "that excludes 0 in b, and above it in a, c.") in text
