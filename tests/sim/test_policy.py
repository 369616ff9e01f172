"""Policies: any JAX apply(params, obs), the LinearPolicy adapter, Flax MLPs and Brax agents."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_s2r.errors import InputError
from bayes_s2r.sim import LinearPolicy, Policy, act, as_policy, policy_label
from bayes_s2r.sim.rollout import policy_id


def test_linear_policy_adapter_gives_the_same_actions():
    lp = LinearPolicy(jnp.array([0.5, -2.0, 0.3, 1.0]), jnp.array(0.1))
    pol = as_policy(lp)
    for obs in np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32):
        assert np.allclose(pol(obs), np.atleast_1d(act(lp, obs)), atol=1e-6)
    assert as_policy(pol) is pol
    assert policy_label(lp) == policy_id(lp)  # records keep the LinearPolicy's label


def test_multi_action_linear_policy():
    lp = LinearPolicy(jnp.ones((2, 4)), jnp.array([0.0, -0.5]))
    assert np.allclose(as_policy(lp)(jnp.full(4, 0.1)), [0.4, -0.1], atol=1e-6)


def test_flax_mlp_runs_and_equal_architectures_share_apply():
    a = Policy.mlp(jax.random.key(0), 11, 3, hidden=(16, 16))
    b = Policy.mlp(jax.random.key(1), 11, 3, hidden=(16, 16))
    obs = jnp.linspace(-1, 1, 11)
    ya, yb = a(obs), b(obs)
    assert ya.shape == (3,) and bool(jnp.all(jnp.abs(ya) <= 1.0))
    assert not np.allclose(ya, yb)  # different parameters, different actions
    assert a.apply is b.apply  # one compiled episode serves both
    assert a.label() != b.label() and a.label() == Policy.mlp(jax.random.key(0), 11, 3, (16, 16)).label()
    assert np.allclose(jax.jit(lambda p, o: a.apply(p, o))(a.params, obs), ya, atol=1e-6)


def test_brax_ppo_policy_matches_brax_inference():
    from brax.training.acme import running_statistics, specs
    from brax.training.agents.ppo import networks as ppo_networks

    net = ppo_networks.make_ppo_networks(5, 2, policy_hidden_layer_sizes=(8,), value_hidden_layer_sizes=(8,))
    normalizer = running_statistics.init_state(specs.Array((5,), jnp.dtype("float32")))
    params = (normalizer, net.policy_network.init(jax.random.key(0)), net.value_network.init(jax.random.key(1)))
    make_policy = ppo_networks.make_inference_fn(net)
    obs, key = jnp.array([0.1, -0.2, 0.3, 0.0, 1.0]), jax.random.key(3)
    expected = make_policy(params, True)(obs, key)[0]
    pol = Policy.from_brax(make_policy, params)
    assert pol.keyed and np.allclose(pol(obs, key), expected)
    assert pol.apply is Policy.from_brax(make_policy, params).apply
    fixed = Policy.from_brax_inference(make_policy(params, True))
    assert np.allclose(fixed(obs, key), expected)
    # the stochastic policy draws from the key it is given: same key, same action
    noisy = Policy.from_brax(make_policy, params, deterministic=False)
    assert np.allclose(noisy(obs, key), noisy(obs, key))
    assert not np.allclose(noisy(obs, key), noisy(obs, jax.random.key(4)))


def test_bad_policies_are_input_errors():
    with pytest.raises(InputError, match="policy"):
        as_policy(lambda obs: obs)
    with pytest.raises(InputError, match="policy.apply"):
        Policy("not a function")
    with pytest.raises(InputError, match="policy.weights"):
        Policy.linear(jnp.ones(3), jnp.ones(2))
    with pytest.raises(InputError, match="hidden"):
        Policy.mlp(jax.random.key(0), 4, 1, hidden=(0,))
