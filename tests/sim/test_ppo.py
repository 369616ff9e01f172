"""Brax's PPO trains through `train_ppo` on the pinned JAX (a few real training steps)."""

import jax
import numpy as np
import pytest

from bayes_s2r.errors import InputError


def test_ppo_trains_and_returns_a_usable_policy():
    from brax import envs

    from bayes_s2r.sim.ppo import PPOConfig, train_ppo

    # Brax's own trainer-test environment: the trainer's programs, without a physics pipeline
    # to compile (what is checked here is the trainer on this JAX, not an environment)
    env = envs.get_environment("fast")
    # num_timesteps > 0, so the trainer reaches the replicated training state (the line that
    # fails on this JAX without the fix); tiny sizes keep it to one short training epoch.
    config = PPOConfig(num_timesteps=64, episode_length=16, num_envs=4, unroll_length=4, batch_size=4,
                       num_minibatches=2, num_updates_per_batch=1, num_evals=1, num_eval_envs=4,
                       extra={"run_evals": False})
    result = train_ppo(jax.random.key(0), env, config)
    assert result.progress and result.progress[-1][0] >= 64
    state = env.reset(jax.random.key(1))
    action, _ = jax.jit(result.inference_fn)(state.obs, jax.random.key(2))
    assert action.shape == (env.action_size,) and np.all(np.isfinite(np.asarray(action)))
    assert np.all(np.abs(np.asarray(action)) <= 1.0)
    assert not hasattr(jax, "device_put_replicated")  # the compatibility function does not leak


def test_replicated_copies_and_config_errors():
    from bayes_s2r.sim.ppo import PPOConfig, device_put_replicated, train_ppo

    out = device_put_replicated({"w": np.arange(3.0)}, jax.local_devices()[:1])
    assert out["w"].shape == (1, 3)
    np.testing.assert_array_equal(np.asarray(out["w"][0]), np.arange(3.0))
    with pytest.raises(InputError, match="ppo.num_timesteps"):
        train_ppo(jax.random.key(0), None, PPOConfig(num_timesteps=0))
    with pytest.raises(InputError, match="ppo.num_envs"):
        train_ppo(jax.random.key(0), None, PPOConfig(num_envs=3, batch_size=4, num_minibatches=2))
