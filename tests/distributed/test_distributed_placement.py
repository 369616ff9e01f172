"""Placing batches on a mesh, the `devices=` knob and the host-device helpers."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_s2r.distributed import (
    BATCH_AXIS,
    batch_length,
    batch_mesh,
    chain_method_for,
    configure_host_devices,
    device_info,
    gather,
    place_batch,
    sharded_call,
)
from bayes_s2r.errors import InputError


@jax.jit
def _noisy_affine(batch, scale):
    x, keys = batch
    noise = jax.vmap(lambda k: jax.random.normal(k, (3,)))(keys)
    return x * scale + noise.sum(-1), noise


def _inputs(n):
    x = jnp.linspace(-1.0, 2.0, n)
    return x, jax.random.split(jax.random.key(11), n)


def test_place_batch_pads_to_a_multiple_and_shards_the_leading_axis():
    x = np.arange(10.0)
    placed = place_batch({"x": x, "y": np.ones((10, 2))}, devices=4)
    assert placed.length == 10 and placed.mesh.size == 4
    px = placed.tree["x"]
    assert px.shape == (12,) and placed.tree["y"].shape == (12, 2)
    assert px.sharding.spec == jax.sharding.PartitionSpec(BATCH_AXIS)
    assert {s.data.shape for s in px.addressable_shards} == {(3,)}
    np.testing.assert_array_equal(np.asarray(px), np.r_[x, 9.0, 9.0])  # padding repeats the last


@pytest.mark.parametrize("devices", [1, 2, 3, 4])
def test_sharded_call_equals_the_unsharded_call(devices):
    batch = _inputs(10)
    want = jax.tree.map(np.asarray, _noisy_affine(batch, jnp.float32(1.5)))
    got = sharded_call(_noisy_affine, batch, jnp.float32(1.5), devices=devices)
    assert got[0].shape == (10,) and got[1].shape == (10, 3)
    for g, w in zip(gather(got), want):
        np.testing.assert_array_equal(g, w)


def test_no_devices_means_every_device():
    assert batch_mesh().size == jax.device_count()
    out = sharded_call(_noisy_affine, _inputs(5), jnp.float32(1.0))
    assert len(out[0].sharding.device_set) == jax.device_count()


def test_devices_accepts_a_device_list_and_a_mesh():
    devs = jax.devices()[1:3]
    mesh = batch_mesh(devs)
    assert list(mesh.devices.flat) == devs
    assert batch_mesh(mesh) is mesh


@pytest.mark.parametrize("bad", [0, 99, -1, True, "all", [], 2.0])
def test_devices_rejects_bad_values(bad):
    with pytest.raises(InputError, match="devices"):
        batch_mesh(bad)


def test_devices_rejects_a_mesh_with_other_axes():
    other = jax.make_mesh((2,), ("x",), devices=jax.devices()[:2])
    with pytest.raises(InputError, match="batch"):
        batch_mesh(other)


def test_batch_length_needs_one_shared_leading_axis():
    assert batch_length((np.zeros(3), np.zeros((3, 2)))) == 3
    for bad in [(np.zeros(3), np.zeros(4)), np.float32(1.0), (), np.zeros((0, 2))]:
        with pytest.raises(InputError, match="batch"):
            batch_length(bad)


def test_configure_host_devices_after_the_backend_started():
    have = jax.device_count()
    assert configure_host_devices(2) == have  # fewer than present: accepted, nothing changes
    with pytest.raises(InputError, match="before the first jax array"):
        configure_host_devices(have + 4)
    for bad in [0, -2, 1.5, True]:
        with pytest.raises(InputError, match="n="):
            configure_host_devices(bad)


def test_device_info_and_chain_method():
    info = device_info()
    assert (info.backend, info.device_count, info.process_count) == ("cpu", jax.device_count(), 1)
    assert chain_method_for(1) == "sequential"
    assert chain_method_for(info.local_device_count) == "parallel"
    assert chain_method_for(info.local_device_count + 1) == "sequential"
    with pytest.raises(InputError, match="num_chains"):
        chain_method_for(0)
