"""The closed loop on a synthetic world with known answers: rounds, stopping, resume."""

import itertools
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from campaign_fixtures import synthetic_candidates, synthetic_config, synthetic_world

import bayes_s2r as bs
from bayes_s2r.evidence import DecisionRecord, RealizedCost

FAST_FIT = {"svi_steps": 400}


def _run(path, **changes):
    cfg = synthetic_config(fit_options=FAST_FIT, **changes)
    ledger = bs.Ledger(path)
    executor = bs.SyntheticExecutor(synthetic_world())
    bs.start_campaign(ledger, synthetic_candidates(), cfg, executor)
    reports = []
    state = bs.run_campaign(ledger, executor, on_round=reports.append)
    return ledger, state, reports


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("loop") / "c.sqlite")


def test_campaign_stops_with_a_deployment_check(finished):
    ledger, state, reports = finished
    assert state.status == "stopped"
    deployment = ledger.get_meta("deployment")
    assert deployment["policy"] == state.policy
    assert deployment["passes"] == (deployment["ucb_unsafe"] <= deployment["alpha_deploy"])
    assert len(ledger.records(bs.DeploymentEval)) == 1
    assert reports[-1].deployment == deployment


def test_every_round_is_recorded_and_the_budget_only_shrinks(finished):
    ledger, state, reports = finished
    decisions = ledger.records(DecisionRecord)
    assert [d.round for d in decisions] == list(range(len(decisions)))
    costs = ledger.records(RealizedCost)
    executed = [d for d in decisions if d.chosen is not None]
    assert len(costs) == len(executed)
    spent = sum((bs.Cost(c.real, c.compute, c.eng) for c in costs), bs.Cost())
    assert state.budget == synthetic_config().budget.spend(spent)
    budgets = [r.state.budget.as_array() for r in reports]
    assert all((a >= b).all() for a, b in itertools.pairwise(budgets))


def test_believed_and_realized_gains_are_kept_apart(finished):
    ledger, _, _ = finished
    for d in ledger.records(DecisionRecord):
        if d.chosen is None:
            continue
        row = next(r for r in d.payload()["table"] if r["name"] == d.chosen)
        chosen = next(c for c in synthetic_candidates() if c.name == d.chosen)
        evals = [p for p in ledger.records(bs.PairedEval) if p.round == d.round]
        if chosen.role == "adaptation":
            assert len(evals) == 1 and evals[0].candidate == d.chosen
            assert row["mu_dJ"] != evals[0].delta_hat  # the belief is not the measurement


def test_a_non_repeatable_candidate_runs_once(tmp_path):
    # three rounds, as `finished`: the look-ahead's horizons are compiled already. si_once is
    # free here and runs first; the two rounds after it may not run it again
    ledger, _state, _ = _run(tmp_path / "c.sqlite",
                            weights=bs.ResourceWeights(real=0.0, compute=0.02, eng=0.0))
    chosen = [d.chosen for d in ledger.records(DecisionRecord)]
    assert chosen.count("si_once") <= 1


_CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    import bayes_s2r as bs
    from campaign_fixtures import synthetic_candidates, synthetic_config, synthetic_world

    class Slow(bs.SyntheticExecutor):
        def execute(self, key, candidate, *, round, **kw):
            if round == 1:
                print("IN_ROUND_1", flush=True)
                time.sleep(600)
            return super().execute(key, candidate, round=round, **kw)

    ledger = bs.Ledger({path!r})
    executor = Slow(synthetic_world())
    bs.start_campaign(ledger, synthetic_candidates(), synthetic_config(fit_options={fit!r}), executor)
    bs.run_campaign(ledger, executor)
""")


def test_kill_and_resume_gives_the_uninterrupted_result(tmp_path, finished):
    path = tmp_path / "killed.sqlite"
    code = _CHILD.format(tests=str(Path(__file__).parent), path=str(path), fit=FAST_FIT)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.time() + 600
        line = ""
        while "IN_ROUND_1" not in line and time.time() < deadline:
            line = child.stdout.readline()
            if not line and child.poll() is not None:
                break
        assert "IN_ROUND_1" in line, "the child never reached round 1"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    ledger = bs.Ledger(path)
    assert bs.load_state(ledger).round == 1  # round 0 committed, round 1 lost
    state = bs.resume_campaign(ledger, bs.SyntheticExecutor(synthetic_world()))
    reference, ref_state, _ = finished
    assert {r.id for r in ledger.records()} == {r.id for r in reference.records()}
    assert state.policy == ref_state.policy and state.budget == ref_state.budget
    assert ledger.get_meta("deployment") == reference.get_meta("deployment")


def test_an_adopted_policy_is_fitted_at_its_measured_level(finished):
    from bayes_s2r.campaign.loop import adoption_level

    ledger, state, reports = finished
    adoptions = ledger.get_meta("campaign.adoptions", {})
    for report in reports:
        if report.adopted:
            origin = adoptions[report.execution.policy]
            assert origin["candidate"] == report.decision.best
    # a state right after an adoption: its level is the treated arm of the adopting evaluation
    ev = [bs.PairedEval("dr", 45, 48, 0, 48, round=0, policy="pi0")]
    just = state._replace(policy="pi1", adoptions={"pi1": {"parent": "pi0", "candidate": "dr", "round": 0}})
    level = adoption_level(ev, just)
    assert (level.policy, level.successes, level.episodes) == ("pi1", 45, 48)
    # once pi1 has been evaluated as a control, its own measurements take over
    later = [*ev, bs.PairedEval("si", 40, 48, 44, 48, round=1, policy="pi1")]
    assert adoption_level(later, just) is None
    assert adoption_level(ev, state._replace(policy="pi0", adoptions={})) is None
    # and the fitted level follows the measurement, not the prior's 0.5
    belief, _ = bs.campaign.loop.fit_round_belief(ev, just._replace(candidates=tuple(
        bs.Candidate(n, "adaptation", "data", outcome=bs.BinomialPairedOutcome(48)) for n in ("dr", "si"))), seed=0)
    assert belief.extra["baseline"] > 0.8


def test_a_campaign_of_alternatives_prices_each_over_the_deployed_one(finished):
    """Under transition_rule="alternatives" every candidate is trained from the start policy:
    after one is deployed, the others are worth what they add over it."""
    _, state, _ = finished
    cands = tuple(bs.Candidate(n, "adaptation", "data", method="DR", outcome=bs.BinomialPairedOutcome(400))
                  for n in ("dr_1", "dr_2"))
    ev = [bs.PairedEval("dr_1", 300, 400, 160, 400, round=0, policy="pi0"),
          bs.PairedEval("dr_2", 170, 400, 290, 400, round=1, policy="pi1")]
    deployed = state._replace(policy="pi1", candidates=cands, adoptions={
        "pi1": {"parent": "pi0", "candidate": "dr_1", "round": 0}})
    alternatives = deployed._replace(config=synthetic_config(transition_rule="alternatives", fit_options=FAST_FIT))
    stacked, _ = bs.campaign.loop.fit_round_belief(ev, deployed, seed=0)
    belief, _ = bs.campaign.loop.fit_round_belief(ev, alternatives, seed=0)
    assert belief.extra["current_policy"] == "pi1"
    assert belief.extra["baseline"] > 0.7 and abs(belief.mean()["dr_1"]) < 1e-6
    # dr_2 from the start measured 170/400 against dr_1's 590/800: about −0.31 over dr_1
    assert -0.36 < belief.mean()["dr_2"] < -0.26
    # the headroom reading puts dr_2's gain on dr_1's policy, a difference of arms it never ran
    assert stacked.mean()["dr_2"] > belief.mean()["dr_2"] + 0.01


def test_a_two_step_look_ahead_runs_while_two_more_rounds_remain(tmp_path, monkeypatch):
    from bayes_s2r import decision

    depths = []
    real_decide = decision.decide

    def recording(*args, **kwargs):
        depths.append(kwargs["lookahead_depth"])
        return real_decide(*args, **kwargs)

    monkeypatch.setattr(decision, "decide", recording)
    _, state, _ = _run(tmp_path / "c.sqlite", max_rounds=4, lookahead_depth=2, continuation="g0", cvu_samples=16)
    # rounds 0 and 1 have two decisions after them; round 2 has one (the last round is terminal)
    assert len(depths) >= 3 and depths == [2, 2, 1, 1][: len(depths)]
    assert state.config.lookahead_depth == 2


def test_the_starting_policy_is_measured_before_the_first_decision_when_asked(tmp_path):
    from bayes_s2r.campaign import make_chooser
    from bayes_s2r.campaign.loop import run_round

    executor = bs.SyntheticExecutor(synthetic_world())
    start = executor.initial_policy()

    def first_round(name, episodes, before=()):
        ledger = bs.Ledger(tmp_path / f"{name}.sqlite")
        bs.start_campaign(ledger, synthetic_candidates(), synthetic_config(start_deployment_episodes=episodes),
                          executor)
        ledger.add_many(before)
        run_round(ledger, executor, chooser=make_chooser("round_robin"))
        decision = ledger.records(DecisionRecord)[0].payload()["extra"]
        return [r for r in ledger.records(bs.DeploymentEval) if r.policy == start], decision

    (evaluation,), decision = first_round("asked", 150)
    assert (evaluation.episodes, evaluation.round) == (150, 0)
    assert decision["current_J"] == evaluation.successes / 150 == pytest.approx(0.3, abs=0.12)
    assert first_round("again", 150)[0] == [evaluation]  # the same campaign seed, the same evaluation
    evaluations, decision = first_round("not_asked", 0)
    assert evaluations == [] and decision["current_J"] is None
    # a measurement already on record (the user's, or one committed before a crash) is not repeated
    own = bs.DeploymentEval(start, 60, 20, 0, round=0)
    evaluations, decision = first_round("recorded", 150, [own])
    assert [(r.episodes, r.successes) for r in evaluations] == [(60, 20)]
    with pytest.raises(bs.InputError) as err:
        synthetic_config(start_deployment_episodes=-1)
    assert err.value.field == "config.start_deployment_episodes"
