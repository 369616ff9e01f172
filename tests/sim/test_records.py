"""Every experiment's records go into the ledger and the beliefs fit them."""

import jax


def test_records_enter_the_ledger_and_fit(sim, world, nominal, sweep_result, tmp_path, compiled):
    import bayes_s2r as bs

    robot = sim.RealRobot("real_latency")
    paired = sim.paired_eval(jax.random.key(0), robot, nominal, nominal, 8, candidate_name="ft")
    td = sim.transfer_delta(jax.random.key(1), world, robot, nominal, 8)
    ft = sim.run_intervention(jax.random.key(2), "real_finetune", {"episodes": 8, "population": 8},
                              nominal, world, robot, name="ft")
    records = [*sweep_result.trials, paired.record, td.record, *ft.records]
    ledger = bs.Ledger(tmp_path / "ledger.sqlite")
    for r in records:
        ledger.add(r)
    stored = ledger.records()
    assert {r.id for r in stored} == {r.id for r in records}

    belief = bs.fit_sensitivity(ledger, num_warmup=50, num_samples=50, num_chains=1)
    assert belief.ranking().index[0] == "latency"
    cand = bs.Candidate("ft", "adaptation", "optimization", method="FT", touches_robot=True)
    risk = bs.fit_exec_risk(ledger, [cand])
    assert 0.0 < risk.ucb("ft", 0.05) <= 1.0
