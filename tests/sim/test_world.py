"""Worlds, cards, parameters and DR distributions (no compiled rollouts needed)."""

import jax
import numpy as np
import pytest

from bayes_s2r.errors import InputError


def test_cards_ship_and_load(sim):
    names = sim.list_cards()
    assert {"sim_nominal", "real_latency", "real_dynamics", "real_obs_bias", "real_combo"} <= set(names)
    assert sim.load_card("sim_nominal").params == sim.nominal_params()
    lat = sim.load_card("real_latency")
    assert lat.kind == "real" and lat.params.latency == 2.0
    dyn = sim.load_card("real_dynamics").params
    assert (dyn.mass_scale, dyn.damping_scale, dyn.gear_scale) == (1.3, 0.7, 0.8)
    combo = sim.load_card("real_combo").params
    assert combo.latency == 1.0 and combo.mass_scale == 1.2


def test_card_from_path_and_bad_cards(sim, tmp_path):
    good = tmp_path / "w.toml"
    good.write_text('name = "w"\nkind = "real"\n[params]\ngear_scale = 0.5\n')
    assert sim.load_card(good).params.gear_scale == 0.5
    bad = tmp_path / "bad.toml"
    bad.write_text('[params]\nfriction = 0.5\n')
    with pytest.raises(InputError, match="friction"):
        sim.load_card(bad)
    with pytest.raises(InputError, match="card"):
        sim.load_card("no_such_card")


@pytest.mark.parametrize("field,value", [("mass_scale", 0.0), ("latency", 1.5), ("latency", 9),
                                         ("obs_noise", -0.1), ("control_period", float("nan"))])
def test_params_validation_names_the_field(sim, field, value):
    with pytest.raises(InputError, match=field):
        sim.params_from_mapping({field: value})


def test_with_params_is_pure(sim, world):
    heavier = world.with_params(mass_scale=1.5)
    assert heavier.params.mass_scale == 1.5 and world.params.mass_scale == 1.0
    assert world.sys.link.inertia.mass[1] == heavier.sys.link.inertia.mass[1]  # base system untouched


def test_apply_params_edits_the_system(sim, world):
    p = sim.nominal_params()._replace(mass_scale=2.0, damping_scale=0.5, gear_scale=0.8, control_period=0.08)
    edited = sim.apply_params(world.sys, p, world.n_frames, world.pole_link)
    base = world.sys
    np.testing.assert_allclose(edited.link.inertia.mass, base.link.inertia.mass * np.array([1.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(edited.link.inertia.i[1], base.link.inertia.i[1] * 2.0, rtol=1e-6)
    np.testing.assert_allclose(edited.dof.damping, base.dof.damping * 0.5, rtol=1e-6)
    np.testing.assert_allclose(edited.actuator.gear, base.actuator.gear * 0.8, rtol=1e-6)
    assert float(edited.opt.timestep) == pytest.approx(0.04)


def test_perturb_levels(sim):
    p = sim.nominal_params()
    assert sim.perturb(p, "latency", 1.0).latency == 2.0
    assert sim.perturb(p, "mass", 1.0).mass_scale == pytest.approx(1.3)
    assert sim.perturb(p, "damping", 1.0).damping_scale == pytest.approx(0.7)
    assert sim.perturb(p, "gear", 0.5).gear_scale == pytest.approx(0.9)
    with pytest.raises(InputError, match="direction"):
        sim.perturb(p, "friction", 1.0)


def test_dr_sampling_matches_its_definition(sim):
    spec = sim.DRSpec.create(width={"mass_scale": 0.3, "latency": 2, "obs_noise": 0.01},
                             normal={"obs_noise": True})
    xi = sim.sample_params(jax.random.key(0), spec, 20000)
    m, lat = np.asarray(xi.mass_scale), np.asarray(xi.latency)
    assert m.min() >= 0.7 and m.max() <= 1.3 and abs(m.mean() - 1.0) < 0.01
    assert abs(m.std() - 0.3 / np.sqrt(3)) < 0.01  # uniform(1 ± 0.3)
    counts = np.bincount(lat.astype(int), minlength=6)
    assert set(np.unique(lat)) == {0.0, 1.0, 2.0}
    np.testing.assert_allclose(counts[:3] / lat.size, 1 / 3, atol=0.02)
    noise = np.asarray(xi.obs_noise)
    assert noise.min() >= 0.0
    assert np.all(np.asarray(xi.gear_scale) == 1.0)  # width 0: fixed
    again = sim.sample_params(jax.random.key(0), spec, 20000)
    np.testing.assert_array_equal(np.asarray(again.latency), lat)  # the key decides
    with pytest.raises(InputError, match="dr.width.mass_scale"):
        sim.DRSpec.create(width={"mass_scale": -1.0})


def test_interface_mismatch_is_refused(sim, world):
    from bayes_s2r.vocab import check_shared_interface

    check_shared_interface(world.interface, sim.load_card("real_latency").interface)
    faster = sim.World(name="r", params=world.params._replace(control_period=0.02), kind="real")
    with pytest.raises(InputError, match="control_hz"):
        check_shared_interface(world.interface, faster.interface)
