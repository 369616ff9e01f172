"""The random-world generator does what its table says, and the benchmarks run small."""

import json

import bench_planner
import bench_prior_check
import bench_worlds
import numpy as np
import pytest
import worlds as W

import bayes_s2r as bs


@pytest.mark.parametrize("family", sorted(W.ALL_FAMILIES))
def test_a_world_is_a_function_of_its_family_and_seed(family):
    a, b = W.draw_world(W.ALL_FAMILIES[family], 3), W.draw_world(W.ALL_FAMILIES[family], 3)
    assert a == b
    assert a != W.draw_world(W.ALL_FAMILIES[family], 4)
    names = {c.name for c in a.candidates}
    assert set(a.lift) <= names and all(c.observed_safety in names for c in a.candidates if c.observed_safety)


def test_families_draw_what_they_describe():
    assert not set(W.HELD_OUT) & set(W.FAMILIES)  # "all" runs only the families the defaults were chosen on
    needle = [W.draw_world(W.FAMILIES["needle"], s) for s in range(40)]
    assert all(sum(v >= 0.6 for v in w.lift.values()) == 1 for w in needle)  # exactly one fix
    small = [W.draw_world(W.FAMILIES["small"], s) for s in range(40)]
    assert all(max(w.lift.values()) <= 0.2 for w in small)
    robot = [W.draw_world(W.FAMILIES["robot"], s) for s in range(60)]
    fix_on_robot = np.mean([max(w.lift, key=w.lift.get).startswith("ft") for w in robot])
    assert 0.5 < fix_on_robot < 0.95
    assert any(rate > 0.05 for w in robot for rate in w.unsafe_rate.values())  # some truly unsafe
    wide = [W.draw_world(W.HELD_OUT["wide"], s) for s in range(40)]
    assert all(len(w.lift) == 8 for w in wide)
    assert {sum(v >= 0.3 for v in w.lift.values()) for w in wide} == {0, 1, 2}  # 0-2 fixes
    assert all(0.1 <= w.start_J <= 0.7 for w in wide)
    late = [W.draw_world(W.HELD_OUT["late"], s) for s in range(40)]
    assert all(0.6 <= w.start_J <= 0.9 and sum(v >= 0.4 for v in w.lift.values()) <= 1 for w in late)
    mixed = [W.draw_world(W.HELD_OUT["mixed"], s) for s in range(40)]
    assert all(1 <= sum(v >= 0.2 for v in w.lift.values()) for w in mixed) and any(w.interaction for w in mixed)
    failing = [W.draw_world(W.HELD_OUT["failing"], s) for s in range(40)]
    assert all(w.start_J <= 0.3 and sum(c.name.startswith("pilot_") for c in w.candidates) == 4 for w in failing)
    # siblings: a method works for all of its candidates or for none
    siblings = [W.draw_world(W.HELD_OUT["siblings"], s) for s in range(60)]
    for w in siblings:
        for m in ("dr", "si", "da"):
            fixed = {v >= 0.3 for k, v in w.lift.items() if k.startswith(m)}
            assert len(fixed) == 1, (w.seed, m, w.lift)
    assert {sum(v >= 0.3 for v in w.lift.values()) for w in siblings} >= {0, 2, 3}
    rivals = [W.draw_world(W.HELD_OUT["rivals"], s) for s in range(200)]
    assert all(sum(v >= 0.5 for v in w.lift.values()) == 1 for w in rivals)  # exactly one fix
    # a DR fix 0.7 + 0.3 · 3/6 = 85% of the time (sd of the share 0.025 over 200 worlds)
    assert 0.79 < np.mean([max(w.lift, key=w.lift.get).startswith("dr") for w in rivals]) < 0.91


def test_true_gains_follow_headroom_lineage_and_alternatives():
    world = W.draw_world(W.FAMILIES["easy"], 0)
    name = max(world.lift, key=world.lift.get)
    J = 0.4
    assert world.true_gain(name, J, ()) == pytest.approx(world.lift[name] * (1 - J))
    assert world.true_gain(name, J, (name,)) == pytest.approx(world.repeat[name] * world.lift[name] * (1 - J))
    alt = W.draw_world(W.FAMILIES["pandora"], 0)
    best = max(alt.lift, key=alt.lift.get)
    first = alt.true_gain(best, alt.start_J, ())
    # an alternative is trained from the start policy: from a better policy it gains less
    assert alt.true_gain(best, alt.start_J + 0.1, ("x",)) == pytest.approx(first - 0.1)


def test_bench_worlds_runs_small():
    out = bench_worlds.main(["--families", "needle", "--worlds", "1", "--strategies", "q_cvu,mv_greedy,oracle_safe",
                             "--rounds", "2", "--gain-prior", "library"])
    summary = out["summary"]["needle"]
    assert {"q_cvu", "mv_greedy", "oracle_safe"} <= set(summary)
    assert "minus_q_cvu" in summary["mv_greedy"] and "_gap" in summary
    assert len(out["rows"]) == 3 and all(r["rounds"] >= 1 for r in out["rows"])
    assert all(0.0 <= r["final_J"] <= 1.0 for r in out["rows"])


def _row(world: int, strategy: str, net: float, start_J: float, unsafe: float = 0.0) -> dict:
    return {"world": world, "strategy": strategy, "net_utility": net, "final_J": net, "unsafe": unsafe,
            "probe_unsafe": 0.0, "rounds": 2, "spent": {"real": 0.1, "compute": 0.0, "eng": 0.0}, "seconds": 0.0,
            "start_J": start_J}


def test_stopping_at_once_is_a_rival_whose_net_utility_is_the_start_s_J():
    starts = [0.5, 0.6, 0.7]
    rows = [_row(w, s, start + lift, start) for w, start in enumerate(starts)
            for s, lift in (("q_cvu", -0.02 * (w + 1)), ("mv_greedy", -0.05), ("oracle_safe", 0.1))]
    summary = bench_worlds.summarize(rows, ("q_cvu", "mv_greedy", "oracle_safe"))
    stop = summary[bench_worlds.STOP]
    assert stop["net_utility_mean"] == pytest.approx(0.6) and stop["final_J_mean"] == pytest.approx(0.6)
    assert stop["unsafe_mean"] == 0.0 and stop["rounds_mean"] == 0.0
    assert stop["minus_q_cvu"]["mean"] == pytest.approx(0.04)
    # it beats mv_greedy here, so the gap closed is measured from it: (q − stop) / (oracle − stop)
    assert summary["_gap"]["best_rival"] == bench_worlds.STOP
    assert summary["_gap"]["gap_closed"] == pytest.approx(-0.04 / 0.1)
    # rows recorded without the start's J make no such row
    assert bench_worlds.STOP not in bench_worlds.summarize([{k: v for k, v in r.items() if k != "start_J"}
                                                            for r in rows], ("q_cvu", "mv_greedy", "oracle_safe"))


def test_bench_worlds_passes_decide_options_to_every_campaign():
    """--decide reaches the campaigns' DecideConfig (a rejected option says so) and the settings."""
    args = ["--families", "needle", "--worlds", "1", "--strategies", "q_cvu", "--rounds", "1", "--gain-prior", "library"]
    out = bench_worlds.main([*args, "--decide", '{"rollout_margin": 1.5, "base_index": "draws"}'])
    assert out["settings"]["overrides"] == {"rollout_margin": 1.5, "base_index": "draws"}
    with pytest.raises(bs.InputError, match="base_index"):
        bench_worlds.main([*args, "--decide", '{"base_index": "exact"}'])


def test_bench_planner_runs_small():
    out = bench_planner.main(["--draws", "1000", "--samples", "16", "--repeats", "1", "--horizon", "2"])
    assert [r["continuation"] for r in out["results"]] == ["g0", "rollout"]
    assert all(r["warm_median_s"] > 0 for r in out["results"])


def test_bench_worlds_resumes_from_its_rows_and_merges_parts(tmp_path):
    args = ["--families", "needle", "--strategies", "mv_greedy,oracle_safe", "--rounds", "1", "--gain-prior", "library"]
    rows = tmp_path / "rows.jsonl"
    first = bench_worlds.main([*args, "--worlds", "1", "--rows", str(rows)])
    assert len(rows.read_text().splitlines()) == 2
    both = bench_worlds.main([*args, "--worlds", "2", "--rows", str(rows)])  # world 0 read back, world 1 run
    # the recorded command reproduces the table: where its rows were kept is not part of it
    assert both["settings"]["command"] == "python benchmarks/bench_worlds.py " + " ".join([*args, "--worlds", "2"])
    assert len(rows.read_text().splitlines()) == 4
    assert both["rows"][:2] == first["rows"]
    # a strategy added later runs alone on the kept worlds, and the rows come in the table's order
    more = ["--families", "needle", "--strategies", "mv_greedy,round_robin,oracle_safe", "--rounds", "1",
            "--gain-prior", "library", "--worlds", "2", "--rows", str(rows)]
    added = bench_worlds.main(more)
    assert len(rows.read_text().splitlines()) == 6
    assert [(r["world"], r["strategy"]) for r in added["rows"]] == [
        (w, s) for w in (0, 1) for s in ("mv_greedy", "round_robin", "oracle_safe")]
    assert [r for r in added["rows"] if r["strategy"] != "round_robin"] == both["rows"]
    alone = bench_worlds.main([*more[:6], "--gain-prior", "library", "--worlds", "1"])["rows"][1]
    assert {**added["rows"][1], "seconds": 0} == {**alone, "seconds": 0}  # as if run with the others
    second = bench_worlds.main([*args, "--worlds", "1", "--first-world", "1"])
    parts = [tmp_path / "a.json", tmp_path / "b.json"]
    for path, result in zip(parts, (first, second), strict=True):
        path.write_text(json.dumps(result))
    merged = bench_worlds.main(["--merge", *map(str, parts)])
    def untimed(summary):
        return {s: {k: v for k, v in row.items() if k != "seconds_mean"} for s, row in summary["needle"].items()}

    assert untimed(merged["summary"]) == untimed(both["summary"]) and merged["settings"]["worlds"] == 2
    assert [p["first_world"] for p in merged["settings"]["parts"]] == [0, 1]
    # a part may carry a note (--note) and an unknown run time: the note stays with its part
    noted = bench_worlds.main([*args, "--worlds", "1", "--rows", str(rows), "--note", "rerun over kept rows"])
    assert noted["rows"] == first["rows"] and "--note" not in noted["settings"]["command"]
    noted = {**noted, "settings": {**noted["settings"], "wall_seconds": None}}
    parts[0].write_text(json.dumps(noted))
    merged = bench_worlds.main(["--merge", *map(str, parts)])
    assert merged["settings"]["parts"][0]["note"] == "rerun over kept rows" and "note" not in merged["settings"]
    assert merged["settings"]["wall_seconds"] is None
    parts[0].write_text(json.dumps(first))
    # a family re-run on the same worlds replaces it; a partial overlap is refused
    again = bench_worlds.main(["--merge", str(parts[0]), str(parts[0])])
    assert again["rows"] == first["rows"] and again["settings"]["parts"][1]["replaces"] == ["needle"]
    overlap = tmp_path / "c.json"
    overlap.write_text(json.dumps(bench_worlds.main(["--merge", *map(str, parts)])))
    with pytest.raises(SystemExit, match="more than one part"):
        bench_worlds.main(["--merge", str(overlap), str(parts[0])])


def test_a_part_with_some_strategies_replaces_their_rows(tmp_path):
    """After a change to one strategy, a part re-running it on the same worlds replaces its
    rows and leaves the others'; it is refused on other worlds or with a strategy the table lacks."""
    args = ["--families", "needle", "--rounds", "1", "--gain-prior", "library", "--worlds", "1"]
    table = bench_worlds.main([*args, "--strategies", "mv_greedy,round_robin,oracle_safe"])
    part = bench_worlds.main([*args, "--strategies", "round_robin"])
    part["rows"][0]["net_utility"] += 1.0  # stands for a changed strategy's row
    paths = [tmp_path / "table.json", tmp_path / "part.json"]
    for path, result in zip(paths, (table, part), strict=True):
        path.write_text(json.dumps(result))
    merged = bench_worlds.main(["--merge", *map(str, paths)])
    rows = {r["strategy"]: r for r in merged["rows"]}
    assert rows["round_robin"]["net_utility"] == pytest.approx(table["summary"]["needle"]["round_robin"]
                                                               ["net_utility_mean"] + 1.0)
    assert rows["mv_greedy"] == next(r for r in table["rows"] if r["strategy"] == "mv_greedy")
    assert merged["settings"]["parts"][1]["strategies"] == ["round_robin"]
    assert merged["settings"]["strategies"] == table["settings"]["strategies"]
    other = bench_worlds.main([*args, "--strategies", "round_robin", "--first-world", "1"])
    paths[1].write_text(json.dumps(other))
    with pytest.raises(SystemExit, match="exactly the worlds"):
        bench_worlds.main(["--merge", *map(str, paths)])
    paths[1].write_text(json.dumps({**part, "settings": {**part["settings"], "strategies": ["thompson"]}}))
    with pytest.raises(SystemExit, match="not some of"):
        bench_worlds.main(["--merge", *map(str, paths)])


def test_a_strategy_id_names_the_look_ahead_depth():
    assert bench_worlds.strategy_settings("q_cvu") == ("q_cvu", {})
    assert bench_worlds.strategy_settings("q_cvu@g0") == ("q_cvu", {"continuation": "g0"})
    assert bench_worlds.strategy_settings("q_cvu@g0_depth2") == ("q_cvu", {"continuation": "g0", "lookahead_depth": 2})
    out = bench_worlds.main(["--families", "pilots", "--worlds", "1", "--rounds", "2", "--gain-prior", "library",
                             "--strategies", "q_cvu@g0_depth2"])
    assert [r["strategy"] for r in out["rows"]] == ["q_cvu@g0_depth2"]


def test_a_team_prior_with_its_hierarchy_sized_keeps_the_library_proportions():
    prior = W.team_prior(W.FAMILIES["small"], fit_location=True, scale_hierarchy=True)
    base = bs.GainPrior()
    k = prior["candidate_scale"] / base.candidate_scale
    assert prior["gain_scale"] == pytest.approx(base.gain_scale * k)
    assert prior["method_scale"] == pytest.approx(base.method_scale * k)
    assert prior["group_scale"] == pytest.approx(base.group_scale * k)
    assert set(W.team_prior(W.FAMILIES["small"])) == {"candidate_scale", "candidate_df"}
    world = W.draw_world(W.FAMILIES["small"], 0)
    config = W.campaign_config(world, max_rounds=1, seed=0, fit_options={"prior": prior})
    assert config.fit_options["prior"] == bs.GainPrior(**prior)  # the campaign's belief uses all of it


def test_the_team_prior_can_come_from_a_longer_history():
    out = bench_worlds.main(["--families", "pandora", "--worlds", "1", "--rounds", "1", "--strategies", "mv_greedy",
                             "--history-campaigns", "4"])
    assert out["settings"]["history_campaigns"] == 4
    assert out["settings"]["team_priors"]["pandora"] == W.team_prior(W.FAMILIES["pandora"], method_means=True,
                                                                     campaigns=4)
    assert len(W.history(W.FAMILIES["pandora"], 4)) == 4


def test_each_team_has_its_own_history_and_each_world_takes_one_teams_prior():
    family = W.FAMILIES["pandora"]
    first, again, other = W.history(family, 3), W.history(family, 3, team=0), W.history(family, 3, team=1)
    assert first == again and first != other and len(other) == 3
    with pytest.raises(ValueError, match="campaigns"):
        W.history(family, W.TEAM_STRIDE + 1)
    out = bench_worlds.main(["--families", "pandora", "--worlds", "2", "--rounds", "1", "--strategies", "mv_greedy",
                             "--history-campaigns", "3", "--teams", "2"])
    priors = out["settings"]["team_priors"]["pandora"]
    assert out["settings"]["teams"] == 2 and len(priors) == 2
    assert priors == [W.team_prior(family, method_means=True, campaigns=3, team=k) for k in (0, 1)]
    with pytest.raises(SystemExit):
        bench_worlds.main(["--families", "pandora", "--worlds", "1", "--teams", "2"])


def test_a_team_prior_with_shrunk_method_means_keeps_the_methods_apart():
    prior = W.team_prior(W.FAMILIES["robot"], method_shrinkage=True)
    means = prior["method_locs"]
    assert set(means) == {"DR", "SI", "DA", "FT"} and means["FT"] > means["DR"]
    own = W.team_prior(W.FAMILIES["robot"], method_means=True)["method_locs"]
    # nearer the one mean than each fitted on its own (those on a grid of steps 0.25 or more)
    assert all(abs(means[h] - 0.3) <= abs(own[h] - 0.3) + 0.05 for h in means)
    assert bs.GainPrior(**prior).method_locs


def test_a_team_prior_with_one_fix_per_campaign_where_the_family_has_one():
    prior = W.team_prior(W.ALL_FAMILIES["rivals"], method_means=True, one_fix=True)
    assert 0.1 <= prior["fix_prob"] < 1 / 6 and prior["fix_loc"] > 0  # six candidates, exactly one fix
    assert bs.GainPrior(**prior).fix_prob == prior["fix_prob"]
    assert "fix_prob" not in W.team_prior(W.ALL_FAMILIES["rivals"], method_means=True)


def test_worlds_run_in_blocks_of_one_family():
    order = bench_worlds.world_order(["a", "b"], range(5, 50))
    assert sorted(order) == sorted((f, s) for f in "ab" for s in range(5, 50))
    assert order[:20] == [("a", s) for s in range(5, 25)] and order[20:40] == [("b", s) for s in range(5, 25)]
    assert order[-5:] == [("b", s) for s in range(45, 50)]


def test_campaigns_can_start_with_the_starting_policys_deployment_record():
    args = ["--families", "needle", "--worlds", "1", "--rounds", "1", "--gain-prior", "library", "--strategies",
            "mv_greedy"]
    out = bench_worlds.main([*args, "--start-deployment-episodes", "50"])
    assert out["settings"]["overrides"] == {"start_deployment_episodes": 50}
    assert bench_worlds.main(args)["settings"]["overrides"] == {}


def test_the_prior_check_benchmark_runs_small(capsys):
    out = bench_prior_check.main(["--families", "late", "--priors", "history", "--worlds", "3", "--draws", "200"])
    (r,) = out["results"]
    assert r["family"] == "late" and set(r["priors"]) == {"history"}
    family = W.HELD_OUT["late"]
    methods = {c.name: c.method for c in W.draw_world(family, W.HISTORY_SEED).candidates if c.role == "adaptation"}
    check = bs.check_gain_prior(W.history(family), bs.GainPrior(**W.team_prior(family, method_means=True)),
                                methods=methods, draws=200)
    assert r["priors"]["history"]["coverage"] == round(check.coverage, 4) and check.effects == 72
    assert r["true_gain"] == round(bench_prior_check.true_first_gain(family, 3), 4)
    assert json.loads(capsys.readouterr().out)["benchmark"] == "prior_check"


def test_the_expectations_benchmark_sets_each_try_s_belief_against_what_it_brought():
    import bench_expectations

    out = bench_expectations.main(["--families", "small", "--worlds", "1", "--rounds", "2", "--gain-prior", "library"])
    rows, summary = out["rows"], out["results"]["small"]
    world = W.draw_world(W.FAMILIES["small"], 0)
    tries = [r for r in rows if "realized" in r]
    assert summary["decisions"] == len(rows) >= 1 and summary["tries"] == len(tries)
    first = rows[0]
    assert first["round"] == 0 and len(first["z"]) >= 1
    # this world's first decision tries an adaptation: the truth the world holds for it from the start
    assert first["true_gain"] == pytest.approx(world.true_gain(first["chosen"], world.start_J, ()))
    assert first["realized"] == (pytest.approx(first["true_gain"]) if first["adopted"] else 0.0)
    assert summary["realized"]["mean"] == pytest.approx(np.mean([r["realized"] for r in tries]))
    assert summary["realized_minus_price"]["mean"] == pytest.approx(np.mean([r["realized"] - r["price"] for r in tries]))
