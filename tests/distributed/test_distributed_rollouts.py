"""Sharded rollouts return exactly the single-device episodes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_s2r.distributed import gather
from bayes_s2r.errors import InputError
from bayes_s2r.sim.params import broadcast_params
from bayes_s2r.sim.rollout import LinearPolicy, _chunk_fn, rollout, rollout_dr, simulate_batch
from bayes_s2r.sim.sharded import sharded_rollout, sharded_rollout_dr, sharded_simulate_batch

EPISODES = 6  # not a multiple of 4: the sharded batch is padded, then cut back


def _assert_same(got, want):
    for name, g, w in zip(want._fields, gather(got), gather(want)):
        np.testing.assert_array_equal(g, w, err_msg=name)


def test_sharded_rollout_dr_equals_rollout_dr(world, policy, dr_spec):
    key = jax.random.key(5)
    want, want_xi = rollout_dr(key, world, policy, dr_spec, EPISODES)
    got, got_xi = sharded_rollout_dr(key, world, policy, dr_spec, EPISODES, devices=4)
    assert got.score.shape == (EPISODES,)
    _assert_same(got_xi, want_xi)
    _assert_same(got, want)
    assert len(set(np.asarray(want.score).tolist())) == EPISODES  # the episodes do differ


def test_sharded_rollout_equals_rollout_and_compiles_once(world, policy):
    key = jax.random.key(9)
    want = rollout(key, world, policy, EPISODES, world.params._replace(latency=1.0))
    got = sharded_rollout(key, world, policy, EPISODES, world.params._replace(latency=1.0), devices=4)
    _assert_same(got, want)
    compiled = _chunk_fn._cache_size()
    again = sharded_rollout(jax.random.key(10), world, policy, EPISODES, devices=4)
    jax.block_until_ready(again)
    assert _chunk_fn._cache_size() == compiled  # a new key or ξ reuses the compiled sharded function


def test_sharded_simulate_batch_with_batched_policies_init_and_excitation(world, policy):
    n, horizon = EPISODES, world.protocol.horizon
    k_pol, k_init, k_exc, k_run = jax.random.split(jax.random.key(2), 4)
    pols = LinearPolicy(policy.weights + 0.2 * jax.random.normal(k_pol, (n, 4)), jnp.zeros(n))
    init = (world.sys.init_q + 0.03 * jax.random.normal(k_init, (n, 2)), jnp.zeros((n, 2)))
    exc = 0.1 * jax.random.normal(k_exc, (n, horizon))
    params = broadcast_params(world.params, n)
    want = simulate_batch(k_run, world, pols, params, init=init, excitation=exc)
    got = sharded_simulate_batch(k_run, world, pols, params, init=init, excitation=exc, devices=4)
    _assert_same(got, want)


def test_sharded_rollouts_reject_bad_input(world, policy, dr_spec):
    key = jax.random.key(0)
    with pytest.raises(InputError, match="episodes"):
        sharded_rollout(key, world, policy, 0)
    with pytest.raises(InputError, match="spec"):
        sharded_rollout_dr(key, world, policy, {"mass": 1.0}, 4)
    with pytest.raises(InputError, match="params"):
        sharded_simulate_batch(key, world, policy, {"mass_scale": np.ones(3)})
    with pytest.raises(InputError, match="excitation"):
        sharded_simulate_batch(key, world, policy, broadcast_params(world.params, 3),
                               excitation=np.zeros((3, 2)))
    with pytest.raises(InputError, match="devices"):
        sharded_rollout(key, world, policy, 4, devices=jax.device_count() + 1)
