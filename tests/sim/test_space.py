"""ParamSpace: model fields by name and index, DR draws, and the Brax randomization_fn."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax_task_fixtures import pendulum_env, pendulum_space

from bayes_s2r import sim
from bayes_s2r.errors import InputError


def test_model_fields_scale_and_offset_the_named_entries():
    base = pendulum_env().sys
    space = sim.ParamSpace([
        sim.ModelField("gear", "actuator_gear[:, 0]"),
        sim.ModelField("pole_mass", ("body_mass[pole]", "body_inertia[pole]")),
        sim.ModelField("com_z", "body_ipos[pole, 2]", mode="offset", unit=0.05),
        sim.SysFn("damping", lambda s, v: s.replace(dof_damping=s.dof_damping + v)),
    ])
    out = space.apply_model(base, jnp.array([0.5, 2.0, 0.1, 0.3]))
    assert np.allclose(out.actuator_gear[:, 0], 0.5 * base.actuator_gear[:, 0])
    assert np.allclose(out.actuator_gear[:, 1:], base.actuator_gear[:, 1:])
    assert np.allclose(out.body_mass, base.body_mass * np.array([1, 1, 2]))
    assert np.allclose(out.body_inertia[2], 2 * base.body_inertia[2])
    assert np.allclose(out.body_inertia[:2], base.body_inertia[:2])
    assert np.allclose(out.body_ipos[2, 2], base.body_ipos[2, 2] + 0.1)
    assert np.allclose(out.dof_damping, base.dof_damping + 0.3)
    # Brax's own pipelines (generalized, positional) read dotted fields
    brax_space = sim.ParamSpace([sim.ModelField("gear", "actuator.gear"),
                                 sim.ModelField("pole", "link.inertia.mass[1]", mode="offset")])
    edited = brax_space.apply_model(base, jnp.array([0.5, 0.25]))
    assert np.allclose(edited.actuator.gear, 0.5 * base.actuator.gear)
    assert np.allclose(edited.link.inertia.mass, base.link.inertia.mass + np.array([0.0, 0.25]))
    # the nominal values leave the model as it is
    same = space.apply_model(base, jnp.asarray(space.nominal))
    assert np.allclose(same.body_mass, base.body_mass) and np.allclose(same.actuator_gear, base.actuator_gear)


def test_levels_and_values_are_validated():
    space = pendulum_space()
    assert space.at_levels({"gear": 1.0, "latency": 1.5}).tolist() == [0.5, 1.0, 2.0, 0.0]
    with pytest.raises(InputError, match="values.latency"):
        space.values({"latency": 1.5})
    with pytest.raises(InputError, match="values.latency"):
        space.values({"latency": 4})
    with pytest.raises(InputError, match="levels.gear"):
        space.at_levels({"gear": 2.0})  # scale 0: below the valid range
    with pytest.raises(InputError, match="levels.friction"):
        space.at_levels({"friction": 1.0})
    with pytest.raises(InputError, match="space.directions"):
        sim.ParamSpace([sim.Latency(), sim.Latency("lag")])
    with pytest.raises(InputError, match="gear.path"):
        sim.ModelField("gear", "actuator_gear[:, ?]")
    with pytest.raises(InputError, match="gear.mode"):
        sim.ModelField("gear", "actuator_gear", mode="times")
    with pytest.raises(InputError, match="mass.path"):
        sim.ParamSpace([sim.ModelField("mass", "body_mass[nobody]")]).apply_model(pendulum_env().sys, jnp.ones(1))


def test_dr_draws_within_range_and_per_key():
    space = pendulum_space()
    dist = space.dr({"gear": 0.3, "latency": 1, "obs_noise": 0.02}, center={"latency": 1})
    a = np.asarray(dist.sample(jax.random.key(0), 4000))
    assert np.array_equal(a, np.asarray(dist.sample(jax.random.key(0), 4000)))
    assert not np.array_equal(a, np.asarray(dist.sample(jax.random.key(1), 4000)))
    assert a[:, 0].min() >= 0.7 - 1e-6 and a[:, 0].max() <= 1.3 + 1e-6
    assert abs(a[:, 0].mean() - 1.0) < 0.02
    assert np.all(a[:, 1] == 1.0)  # width 0: the center
    counts = np.bincount(a[:, 2].astype(int), minlength=4) / len(a)  # uniform over {0, 1, 2}
    assert np.allclose(counts, [1 / 3, 1 / 3, 1 / 3, 0], atol=0.03)
    assert a[:, 3].min() >= 0.0  # a noise level is never negative
    point = space.point({"latency": 2})
    assert np.all(np.asarray(point.sample(jax.random.key(5), 3)) == np.array([1.0, 1.0, 2.0, 0.0]))


def test_randomization_fn_resamples_per_key_and_batches_only_edited_fields():
    env = pendulum_env()
    space = pendulum_space()
    dist = space.dr({"gear": 0.4, "pole_mass": 0.5})
    randomize = space.randomization_fn(dist)
    keys = jax.random.split(jax.random.key(0), 5)
    sys_v, in_axes = randomize(env.sys, keys)
    assert sys_v.actuator_gear.shape == (5,) + env.sys.actuator_gear.shape
    assert in_axes.actuator_gear == 0 and in_axes.body_mass == 0 and in_axes.body_inertia == 0
    assert in_axes.dof_damping is None and sys_v.dof_damping.shape == env.sys.dof_damping.shape
    # each environment's model is the one its key draws
    values = np.asarray(jax.vmap(lambda k: dist.sample(k, 1)[0])(keys))
    assert np.allclose(sys_v.actuator_gear[:, 0, 0], values[:, 0] * env.sys.actuator_gear[0, 0])
    assert len(set(np.round(values[:, 0], 6))) == 5
    again, _ = randomize(env.sys, keys)
    other, _ = randomize(env.sys, jax.random.split(jax.random.key(1), 5))
    assert np.array_equal(again.actuator_gear, sys_v.actuator_gear)
    assert not np.allclose(other.actuator_gear, sys_v.actuator_gear)
    # raw uint32 keys, as older Brax code passes them, draw the same
    raw, _ = randomize(env.sys, jax.random.key_data(keys))
    assert np.array_equal(raw.actuator_gear, sys_v.actuator_gear)
    with pytest.raises(InputError, match="dist"):
        sim.ParamSpace([sim.Latency()]).randomization_fn(dist)


def test_randomization_fn_drives_brax_domain_randomization_wrapper():
    from brax.envs.wrappers.training import DomainRandomizationVmapWrapper

    env = pendulum_env()
    space = pendulum_space()
    keys = jax.random.split(jax.random.key(2), 3)
    fn = functools.partial(space.randomization_fn(space.dr({"gear": 0.5})), rng=keys)
    wrapped = DomainRandomizationVmapWrapper(env, fn)
    state = jax.jit(lambda r: wrapped.step(wrapped.reset(r), jnp.ones((3, 1))))(jax.random.split(jax.random.key(0), 3))
    # the same push under three gears moves the carts by three different amounts
    assert len(set(np.round(np.asarray(state.pipeline_state.qd[:, 0]), 6))) == 3


def test_observation_noise_and_bias_reach_only_their_channels():
    space = sim.ParamSpace([sim.ObsNoise("noise", channels=(0,)), sim.ObsBias("bias", channels=(1, 2)),
                            sim.ObsNoise("all")])
    obs = jnp.zeros(4)
    out = space.observe(obs, jnp.array([0.5, 0.1, 0.0]), jax.random.key(0))
    assert float(out[0]) != 0.0 and np.allclose(out[1:3], 0.1) and float(out[3]) == 0.0
    draws = jax.vmap(lambda k: space.observe(obs, jnp.array([0.5, 0.0, 0.0]), k))(jax.random.split(jax.random.key(1), 4000))
    assert abs(float(draws[:, 0].std()) - 0.5) < 0.03 and float(jnp.abs(draws[:, 1:]).max()) == 0.0
    same = space.observe(obs, jnp.array([0.5, 0.1, 0.0]), jax.random.key(0))
    assert np.array_equal(out, same)  # the noise follows the key
    everywhere = space.observe(obs, jnp.array([0.0, 0.0, 0.2]), jax.random.key(2))
    assert bool(jnp.all(everywhere != 0.0))
    with pytest.raises(InputError, match="noise.channels"):
        sim.ObsNoise("noise", channels=(-1,))
