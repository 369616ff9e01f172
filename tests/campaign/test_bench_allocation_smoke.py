"""The allocation benchmark runs with tiny arguments and prints the agreed schema."""

import argparse
import json

import bench_allocation
import common
import numpy as np
import pytest
from allocation_world import (
    INTERVENTIONS,
    SyntheticTable,
    TableExecutor,
    TrueTable,
    bench_candidates,
    history_records,
)
from scipy import stats

import bayes_s2r as bs


def test_smoke_prints_the_agreed_schema(tmp_path, capsys):
    out = tmp_path / "allocation.json"
    # the fit's steps and the look-ahead's samples fix what is compiled: the other runs of
    # this file use the same (50, 8), so their programs are compiled once
    result = bench_allocation.main(["--synthetic", "--seeds", "2", "--rounds", "2", "--svi-steps", "50",
                                    "--cvu-samples", "8", "--seed-start", "100",
                                    "--gain-prior", '{"candidate_scale": 2.0}', "--out", str(out)])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert set(printed) >= {"benchmark", "machine", "settings", "results"}
    assert printed["benchmark"] == "allocation"
    assert {"cores", "backend", "versions"} <= set(printed["machine"])
    rows = printed["results"]
    assert {r["strategy"] for r in rows} == set(bs.campaign.STRATEGY_IDS)
    keys = {"world", "strategy", "final_J_mean", "final_J_ci_low", "final_J_ci_high", "spent",
            "safety_violations", "deploy_pass_rate", "regret_vs_oracle", "regret_vs_oracle_safe",
            "net_utility_mean"}
    assert printed["settings"]["seed_start"] == 100
    assert printed["settings"]["gain_prior"] == {"candidate_scale": 2.0}
    for world in printed["summary"].values():
        assert {"beats_every_non_oracle", "beats_every_equally_safe", "net_utility_best_non_oracle"} <= set(world)
    over = printed["over_worlds"]
    assert set(over) == set(bs.campaign.STRATEGY_IDS)
    assert over["q_cvu"]["final_J_ci_low"] == over["q_cvu"]["final_J_ci_high"] == 0.0
    for o in over.values():
        assert o["final_J_ci_low"] <= o["final_J_ci_high"] and o["net_utility_ci_low"] <= o["net_utility_ci_high"]
    for r in rows:
        assert keys <= set(r)
        assert set(r["spent"]) == {"real", "compute", "eng"}
        assert r["final_J_ci_low"] <= r["final_J_ci_high"]
        assert 0.0 <= r["deploy_pass_rate"] <= 1.0
    for r in rows:
        # a flip probability only where the choice is the toolkit's decision
        first, later = r["flip_probability_first"], r["flip_probability_later"]
        if r["strategy"] in bench_allocation.TOOLKIT_RULES:
            assert 0.0 <= first <= 1.0 and (later is None or 0.0 <= later <= 1.0)
        else:
            assert first is None and later is None
        if r["strategy"] == "q_cvu":
            assert r["final_J_ci_low"] == r["final_J_ci_high"] == 0.0
        if r["strategy"] == "oracle":
            assert r["regret_vs_oracle"] == 0.0
        if r["strategy"] == "oracle_safe":
            assert r["regret_vs_oracle_safe"] == 0.0


def test_a_history_prior_is_fitted_per_world_from_the_other_worlds_and_reaches_the_campaigns(monkeypatch):
    seen = []
    real_config = bench_allocation._config

    def spy(args, seed, prior):
        seen.append(prior)
        return real_config(args, seed, prior)

    monkeypatch.setattr(bench_allocation, "_config", spy)
    result = bench_allocation.main(["--synthetic", "--seeds", "1", "--rounds", "1", "--svi-steps", "50",
                                    "--cvu-samples", "8", "--strategies", "q_cvu", "--gain-prior", "history"])
    fits = result["settings"]["gain_prior"]["per_world"]
    assert set(fits) == {"syn_a", "syn_b"}
    for world, fit in fits.items():
        other = next(w for w in fits if w != world)
        past = history_records(SyntheticTable(bench_allocation.SYNTHETIC), other, bench_candidates(48),
                               episodes=48, seed=bench_allocation.HISTORY_SEED)
        expected = bs.fit_gain_prior([past]).prior
        assert fit["prior"] == {"candidate_scale": expected.candidate_scale, "candidate_df": expected.candidate_df,
                                "gain_loc": expected.gain_loc}
        assert fit["effects"] == len(past) == 5
        assert fit["prior"] in seen  # the campaigns of that world were configured with it


def test_a_one_fix_history_prior_is_the_one_the_prior_command_fits_with_each_methods_own_mean(tmp_path):
    from typer.testing import CliRunner

    import bayes_s2r.cli_decide  # noqa: F401  (registers the prior command on the app)
    from bayes_s2r.cli import app
    from bayes_s2r.evidence.io import dump_candidates, write_json

    # the campaigns that run under it: tests/test_bench_summary.py (the one-fix companion table)
    table = SyntheticTable(bench_allocation.SYNTHETIC)
    fits = bench_allocation.history_priors(table, list(bench_allocation.SYNTHETIC), argparse.Namespace(eval_episodes=48),
                                           one_fix=True)
    candidates = bench_candidates(48)
    dump_candidates([c for c in candidates if c.role == "adaptation"], tmp_path / "candidates.toml")
    for world, fit in fits.items():
        other = next(w for w in fits if w != world)
        past = history_records(table, other, candidates, episodes=48, seed=bench_allocation.HISTORY_SEED)
        write_json(past, tmp_path / f"{other}.json")
        printed = CliRunner().invoke(app, ["prior", str(tmp_path / f"{other}.json"), "--own-means", "--no-hierarchy",
                                           "--candidates", str(tmp_path / "candidates.toml"), "--json"])
        assert printed.exit_code == 0, printed.output
        expected = json.loads(printed.stdout)["prior"]  # the per-method fields as (name, value) pairs
        expected.update({k: dict(expected[k]) for k in ("method_locs", "method_fix_probs")})
        assert fit["prior"] == {k: expected[k] for k in fit["prior"]}
        assert set(fit["prior"]) >= {"fix_prob", "fix_loc", "fix_scale", "method_fix_probs", "method_locs", "fix_unit"}


def test_over_the_worlds_pairs_each_seed_s_world_mean_against_the_rule():
    def row(world, strategy, finals):
        return {"world": world, "strategy": strategy, "final_J_by_seed": finals, "safety_violations": 1.0,
                "net_utility_by_seed": [f - 0.1 for f in finals]}

    rows = [row("a", "q_cvu", [1.0, 0.0, 1.0]), row("b", "q_cvu", [0.0, 0.0, 1.0]),
            row("a", "mv_greedy", [0.0, 0.0, 1.0]), row("b", "mv_greedy", [0.0, 1.0, 0.0])]
    over = common.over_worlds(rows)
    # per seed: q_cvu 0.5, 0, 1; mv_greedy 0, 0.5, 0.5; differences −0.5, +0.5, −0.5
    d = np.array([-0.5, 0.5, -0.5])
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    m = over["mv_greedy"]
    assert m["final_J_mean"] == pytest.approx(1 / 3, abs=1e-4)
    assert (m["final_J_ci_low"], m["final_J_ci_high"]) == pytest.approx((d.mean() - half, d.mean() + half), abs=1e-4)
    assert m["net_utility_mean"] == pytest.approx(1 / 3 - 0.1, abs=1e-4)
    assert m["safety_violations"] == 2.0 and over["q_cvu"]["final_J_ci_low"] == 0.0


def test_table_lookups_share_sim_only_lineages_and_use_the_cache(tmp_path):
    table = TrueTable(tmp_path, train_iterations=1, eval_episodes=8)
    theta = [0.0, 1.0, 0.5, 0.2, 0.0]
    build = {"theta": theta, "cost": [0.0, 0.01, 2.0], "real_episodes": 0, "unsafe": 0, "wall_s": 0.0}
    table.data["policies"] = {"sim": {"dr_latency": build}, "w": {"ft_real": {**build, "real_episodes": 64,
                                                                               "unsafe": 32}}}
    table.data["evals"] = {"w": {"": {"J": 0.2, "unsafe_rate": 0.1}, "dr_latency": {"J": 0.9, "unsafe_rate": 0.0},
                                 "ft_real": {"J": 0.5, "unsafe_rate": 0.0}}}
    table._save()
    again = TrueTable(tmp_path, train_iterations=1, eval_episodes=8)  # same settings: same file
    ex = TableExecutor(again, "w", eval_episodes=40)
    cands = {c.name: c for c in bench_candidates(40)}
    assert set(cands) == set(INTERVENTIONS)
    # the sensor alignment reads the robot without acting on it: not gated, but its policy
    # depends on the world it read; running it twice would shift the input twice
    da = cands["da_obs"]
    assert not da.touches_robot and not da.repeatable and da.cost.real > cands["dr_latency"].cost.real
    assert TrueTable._scope("w", "dr_latency>da_obs") == "w" and TrueTable._scope("w", "dr_latency") == "sim"
    import jax

    run = ex.execute(jax.random.key(0), cands["ft_real"], round=0, policy="pi0", memory={})
    pe, eo = run.records
    assert (pe.episodes_treated, eo.executions) == (40, 64) and 0 < eo.unsafe < 64
    assert run.memory == {"lineage": {"pi1": "ft_real"}}
    assert abs(run.cost.eng - 2.0) < 1e-12 and run.cost.real > 0
    assert again.computed == 0  # nothing recomputed: all from the cache


def test_a_pilot_measures_the_gain_without_deploying_and_the_run_reuses_its_policy():
    import jax
    from allocation_world import SyntheticTable

    table = SyntheticTable({"w": {"dr_latency": 0.9, "da_obs": 0.0}}, start_J=0.1)
    ex = TableExecutor(table, "w", eval_episodes=48)
    cands = {c.name: c for c in bench_candidates(48, pilot_episodes=12)}
    pilots = {n for n, c in cands.items() if c.role == "diagnosis"}
    assert pilots == {"pilot_dr_dynamics", "pilot_dr_latency", "pilot_da_obs"}  # not the robot-acting ones
    pilot, full = cands["pilot_dr_latency"], cands["dr_latency"]
    assert pilot.observes == "dr_latency" and not pilot.touches_robot and pilot.outcome.episodes == 12
    assert pilot.cost.real < full.cost.real and pilot.cost.eng == full.cost.eng
    run = ex.execute(jax.random.key(0), pilot, round=0, policy="pi0", memory={})
    (pe,) = run.records
    assert (pe.candidate, pe.episodes_treated, pe.episodes_control, pe.policy) == ("dr_latency", 12, 12, "pi0")
    assert pe.successes_treated > pe.successes_control  # J 0.91 against 0.1
    assert run.policy is None and run.memory == {"built": ["dr_latency"]}
    assert run.cost.eng == 2.0  # the pilot built π^m
    memory = dict(run.memory)
    again = ex.execute(jax.random.key(1), full, round=1, policy="pi0", memory=memory)
    assert again.policy == "pi2" and again.memory["lineage"] == {"pi2": "dr_latency"}
    assert again.cost.eng == 0.0 and again.cost.compute == 0.0  # built already: only the evaluation
    assert abs(again.cost.real - 2 * 48 * 28 / 3600) < 1e-9
    fresh = ex.execute(jax.random.key(1), full, round=1, policy="pi0", memory={})
    assert fresh.cost.eng == 2.0
    with pytest.raises(bs.InputError, match="pilot_episodes"):
        bench_candidates(48, pilot_episodes=-1)


def test_the_starting_policy_can_come_with_its_deployment_record(capsys):
    import jax  # noqa: F401  (the executor draws its counts from a jax key)
    from allocation_world import SyntheticTable

    ex = TableExecutor(SyntheticTable({"w": {"dr_latency": 0.9}}, start_J=0.1), "w")
    rec = ex.deployment_record(40, seed=3)
    assert isinstance(rec, bs.DeploymentEval) and (rec.policy, rec.episodes, rec.round) == ("pi0", 40, 0)
    assert rec == ex.deployment_record(40, seed=3) and rec.successes < 20  # J 0.1: same seed, same record
    result = bench_allocation.main(["--synthetic", "--worlds", "syn_a", "--seeds", "1", "--rounds", "3",
                                    "--strategies", "q_cvu", "--svi-steps", "50", "--cvu-samples", "8",
                                    "--baseline-episodes", "24", "--lookahead-depth", "2", "--continuation", "g0"])
    capsys.readouterr()
    assert result["settings"]["baseline_episodes"] == 24 and result["settings"]["lookahead_depth"] == 2
    (row,) = result["results"]
    assert row["strategy"] == "q_cvu" and 0.0 <= row["final_J_mean"] <= 1.0


def test_a_run_of_the_rule_alone_reuses_the_other_rows(tmp_path):
    """`--reuse`: the rule run alone, the other strategies' rows taken from a table with the same
    settings, makes the table a full run makes; a table with other settings is refused."""
    args = ["--synthetic", "--worlds", "syn_a", "--seeds", "3", "--rounds", "1", "--svi-steps", "50",
            "--cvu-samples", "8", "--gain-prior", "{}"]
    full = bench_allocation.main([*args, "--strategies", "q_cvu,mv_greedy,oracle_safe", "--out", str(tmp_path / "f.json")])
    part = bench_allocation.main([*args, "--strategies", "q_cvu", "--reuse", str(tmp_path / "f.json")])
    assert part["results"] == full["results"] and part["over_worlds"] == full["over_worlds"]
    assert part["settings"]["strategies"] == ["q_cvu", "mv_greedy", "oracle_safe"]
    with pytest.raises(SystemExit, match="rounds"):
        other = [*args[:args.index("--rounds") + 1], "2", *args[args.index("--rounds") + 2:]]
        bench_allocation.main([*other, "--strategies", "q_cvu", "--reuse", str(tmp_path / "f.json")])


def test_reuse_compares_a_fitted_team_prior_by_the_prior_it_chose():
    """The evidence ratio a fit reports beside its prior does not make two tables' campaigns
    differ; the prior it chose does."""
    fit = {"prior": {"candidate_scale": 4.0, "candidate_df": 2.0, "gain_loc": 0.3}, "effects": 20,
           "log_bayes_factor_vs_normal": 4.777}
    table = {"settings": {"rounds": 3, "gain_prior": {"fitted_from": "history", "per_world": {"w": fit}}}}
    moved = {"rounds": 3, "gain_prior": {"fitted_from": "history",
                                         "per_world": {"w": {**fit, "log_bayes_factor_vs_normal": 4.774}}}}
    bench_allocation.check_reuse(table, moved)
    other = {"rounds": 3, "gain_prior": {"fitted_from": "history",
                                         "per_world": {"w": {**fit, "prior": {**fit["prior"], "candidate_df": 3.0}}}}}
    with pytest.raises(SystemExit, match="gain_prior"):
        bench_allocation.check_reuse(table, other)
