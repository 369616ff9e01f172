"""The `devices=` knob at the call sites: `decide`, rollouts, training, `--devices`."""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import bayes_s2r as bs
from bayes_s2r.errors import InputError


@pytest.fixture(scope="module")
def case():
    names = [f"a{i}" for i in range(4)]
    belief = bs.GainBelief.from_gaussian(names, [0.02, 0.05, 0.04, 0.03], [0.03] * 4, num_draws=1000, seed=2)
    cands = [bs.Candidate(n, "adaptation", "data", cost=bs.Cost(compute=0.1 * (i + 1)),
                          outcome=bs.BinomialPairedOutcome(episodes=40)) for i, n in enumerate(names)]
    kwargs = {"budget": bs.Budget(1, 10, 10), "weights": bs.ResourceWeights(), "cvu_samples": 64, "seed": 5}
    return belief, cands, kwargs


def test_decide_on_four_devices_matches_one(case):
    belief, cands, kw = case
    one = bs.decide(belief, cands, **kw)
    four = bs.decide(belief, cands, devices=4, **kw)
    assert four.best == one.best
    np.testing.assert_allclose(four.table["CVU"], one.table["CVU"], rtol=1e-4, atol=1e-6)
    assert np.ptp(np.asarray(one.table["CVU"], float)) > 0  # the look-ahead values differ by candidate


def test_decide_without_devices_stays_on_one_device(case, monkeypatch):
    # no ambient mesh: a call that names no devices never reaches the sharded look-ahead
    from bayes_s2r.decision import sharded

    belief, cands, kw = case
    monkeypatch.setattr(sharded, "sharded_lookahead", None)
    assert bs.decide(belief, cands, **kw).best is not None


def test_decide_rejects_bad_devices(case):
    belief, cands, kw = case
    with pytest.raises(InputError, match="devices"):
        bs.decide(belief, cands, devices=99, **kw)


def test_simulate_batch_on_devices_is_split_and_equal(world, policy, dr_spec):
    from bayes_s2r import sim

    key = jax.random.key(7)
    plain, xi = sim.rollout_dr(key, world, policy, dr_spec, 10)
    k_xi, k_run = jax.random.split(key)
    xi4 = sim.sample_params(k_xi, dr_spec, 10)
    split = sim.simulate_batch(k_run, world, policy, xi4, devices=4)
    assert len(split.score.sharding.device_set) == 4
    np.testing.assert_array_equal(np.asarray(xi4.mass_scale), np.asarray(xi.mass_scale))
    np.testing.assert_array_equal(np.asarray(split.steps_alive), np.asarray(plain.steps_alive))
    np.testing.assert_allclose(np.asarray(split.score), np.asarray(plain.score), rtol=1e-6)
    assert np.ptp(np.asarray(plain.steps_alive)) > 0  # the randomized episodes differ


def test_dr_training_on_devices_matches_one_device(world, policy, dr_spec):
    from bayes_s2r import sim

    config = sim.ESConfig(population=8, episodes=6, iterations=2)
    one = sim.train_es(jax.random.key(3), world, policy, spec=dr_spec, config=config)
    four = sim.train_es(jax.random.key(3), world, policy, spec=dr_spec, config=config, devices=4)
    np.testing.assert_allclose(four.fitness, one.fitness, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(four.policy.weights), np.asarray(one.policy.weights), rtol=1e-5)


def test_cli_devices_option_makes_host_devices():
    code = ("import sys; from bayes_s2r.cli import app; import jax\n"
            "from bayes_s2r.cli_root import root_devices\n"
            "import typer\n"
            "@app.command('probe-devices')\n"
            "def _probe(ctx: typer.Context):\n"
            "    print(jax.device_count(), root_devices(ctx))\n"
            "app(['--devices', '3', 'probe-devices'], standalone_mode=False)\n")
    # the host-device count is the subject; the suite's compile flags stay, so values match
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f)
    env = {**os.environ, "XLA_FLAGS": flags}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "3"]
