"""Which devices a computation runs on: host-device count, a 1-D batch mesh, a `devices=` knob.

JAX decides the device set once, when its backend starts (the first array or the first
`jax.devices()` call). On a CPU the number of devices is a flag read at that moment:
`XLA_FLAGS=--xla_force_host_platform_device_count=N` (or `jax_num_cpu_devices`). Forced host
devices share the machine's cores: they let sharded code run and be tested on a laptop, not
go faster than the cores allow. On GPUs and TPUs the devices are the accelerators.

Every sharded function takes `devices=` (there is no ambient default: a function splits its
batch only over the devices it is given):

- ``None``: every device JAX sees (across all processes after `jax.distributed.initialize`);
- an int ``n``: the first ``n`` devices of `jax.devices()`;
- a sequence of `jax.Device`, or a `jax.sharding.Mesh` with one axis.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from bayes_s2r.errors import InputError, require_int

__all__ = [
    "BATCH_AXIS",
    "DeviceInfo",
    "batch_mesh",
    "chain_method_for",
    "configure_host_devices",
    "device_info",
]

#: Name of the one mesh axis the batch (environments, draws) is split along.
BATCH_AXIS = "batch"

_FLAG = "--xla_force_host_platform_device_count"


def _backend_started() -> bool:
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def configure_host_devices(n: int) -> int:
    """Ask for `n` CPU devices; call before JAX starts its backend.

    Sets ``--xla_force_host_platform_device_count=n`` in `XLA_FLAGS` (replacing any earlier
    value, so subprocesses inherit it) and `jax_num_cpu_devices`. Importing jax or
    bayes_s2r does not start the backend; creating the first array does. Once started, the
    device count is fixed: asking for no more devices than JAX has is accepted, asking
    for more raises.

    Args:
        n: number of host (CPU) devices, >= 1.

    Returns:
        The number of CPU devices JAX will use (or uses, when already started).

    Raises:
        InputError: `n` is not a whole number >= 1, or the backend already runs with fewer
            than `n` CPU devices.

    Example:
        >>> configure_host_devices(1) >= 1
        True
    """
    n = require_int("n", n, 1)
    import jax

    if _backend_started():
        try:
            have = len(jax.devices("cpu"))
        except RuntimeError:  # no CPU backend (JAX_PLATFORMS excludes it)
            have = 0
        if have < n:
            raise InputError(
                "n", n,
                f"at most {have} host devices: JAX's backend already started with {have}; call "
                f"configure_host_devices({n}) (or set XLA_FLAGS={_FLAG}={n}) before the first "
                "jax array is created, e.g. at the top of the script or in a fresh process")
        return have
    flags = re.sub(rf"{_FLAG}=\S*", "", os.environ.get("XLA_FLAGS", "")).split()
    os.environ["XLA_FLAGS"] = " ".join([*flags, f"{_FLAG}={n}"])
    jax.config.update("jax_num_cpu_devices", n)
    return n


class DeviceInfo(NamedTuple):
    """What JAX sees (starts the backend).

    Attributes:
        backend: default backend ("cpu", "gpu", "tpu").
        device_count: devices over all processes.
        local_device_count: devices of this process.
        process_index, process_count: this process's index and the number of processes.
        device_kind: kind of the first device (e.g. "cpu", "NVIDIA H100").
    """

    backend: str
    device_count: int
    local_device_count: int
    process_index: int
    process_count: int
    device_kind: str


def device_info() -> DeviceInfo:
    """The devices and processes JAX sees now."""
    import jax

    return DeviceInfo(jax.default_backend(), jax.device_count(), jax.local_device_count(),
                      jax.process_index(), jax.process_count(), jax.devices()[0].device_kind)


def _mesh_of(devs: Sequence[Any]):
    import numpy as np
    from jax.sharding import AxisType, Mesh

    # Auto axes: jit propagates the batch sharding of the inputs through the computation
    # (GSPMD); arrays made inside (keys, zeros) need no sharding annotations.
    return Mesh(np.asarray(list(devs), dtype=object), (BATCH_AXIS,), axis_types=(AxisType.Auto,))


def batch_mesh(devices: Any = None):
    """A one-axis mesh (axis `BATCH_AXIS`) over the chosen devices.

    Args:
        devices: None, an int, a sequence of devices or a one-axis Mesh (see module doc).

    Returns:
        `jax.sharding.Mesh`.

    Raises:
        InputError: more devices asked for than JAX has, or a malformed value.

    Example:
        >>> batch_mesh(1).size
        1
    """
    import jax
    from jax.sharding import Mesh

    if devices is None:
        return _mesh_of(jax.devices())
    if isinstance(devices, Mesh):
        if devices.axis_names != (BATCH_AXIS,):
            raise InputError("devices", devices.axis_names, f"a mesh with the one axis {BATCH_AXIS!r}")
        return devices
    if isinstance(devices, int) and not isinstance(devices, bool):
        have = jax.device_count()
        if not 1 <= devices <= have:
            hint = (f"; on a CPU call configure_host_devices({devices}) before JAX starts or set "
                    f"XLA_FLAGS={_FLAG}={devices}") if devices > have else ""
            raise InputError("devices", devices, f"a whole number in 1..{have} (JAX sees {have}){hint}")
        return _mesh_of(jax.devices()[:devices])
    if isinstance(devices, Sequence) and not isinstance(devices, str) and devices and all(
            isinstance(d, jax.Device) for d in devices):
        if len(set(devices)) != len(devices):
            raise InputError("devices", devices, "distinct devices")
        return _mesh_of(devices)
    raise InputError("devices", devices, "None, a whole number of devices, a list of jax devices or a Mesh")


def chain_method_for(num_chains: int) -> str:
    """NumPyro's `chain_method` for `num_chains` chains on this process's devices.

    "parallel" (one chain per device, `jax.pmap`) when the process has at least `num_chains`
    local devices, else "sequential". Pass it to `fit_gains(..., chain_method=...)`.

    Example:
        >>> chain_method_for(1)
        'sequential'
    """
    import jax

    num_chains = require_int("num_chains", num_chains, 1)
    return "parallel" if num_chains > 1 and jax.local_device_count() >= num_chains else "sequential"
