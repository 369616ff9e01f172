"""Several hosts: start JAX's distributed runtime, then run the same code on every process.

`jax.distributed.initialize(coordinator_address, num_processes, process_id)` joins the
processes; afterwards `jax.devices()` lists the devices of every process and a mesh over
them spans all hosts. The sharded functions of `bayes_s2r.distributed` then work unchanged:
every process calls them with the same arguments, each fills the shards of its own
devices, and `gather` returns the global result on every process.

Settings come from the arguments or from the environment:

- `JAX_COORDINATOR_ADDRESS` (host:port of process 0; read by JAX itself),
- `JAX_NUM_PROCESSES`, `JAX_PROCESS_ID` (read here when the arguments are None),
- `JAX_LOCAL_DEVICE_IDS`, `JAX_COORDINATOR_BIND_ADDRESS` (read by JAX itself),
- on managed clusters (Slurm, Open MPI, Kubernetes, Cloud TPU) JAX detects all of them.

On CPUs the cross-process collectives are Gloo over TCP (`jax_cpu_collectives_implementation`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from bayes_s2r.distributed.devices import DeviceInfo, _backend_started, device_info
from bayes_s2r.errors import InputError, require_int

__all__ = ["CPU_COLLECTIVES", "initialize_multihost", "shutdown_multihost"]

#: Cross-process collective implementations JAX offers on CPUs.
CPU_COLLECTIVES = ("gloo", "mpi")


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise InputError(name, raw, "a whole number (environment variable)") from None


def initialize_multihost(coordinator_address: str | None = None, num_processes: int | None = None,
                         process_id: int | None = None, *,
                         local_device_ids: int | Sequence[int] | None = None,
                         cpu_collectives: str = "gloo", timeout_s: int = 300,
                         bind_address: str | None = None) -> DeviceInfo:
    """Join this process to a multi-process JAX run (call once, before any JAX array exists).

    Args:
        coordinator_address: "host:port" of process 0 (None: `JAX_COORDINATOR_ADDRESS` or
            cluster detection).
        num_processes: number of processes (None: `JAX_NUM_PROCESSES` or cluster detection).
        process_id: this process's index in 0..num_processes-1 (None: `JAX_PROCESS_ID` or
            cluster detection).
        local_device_ids: accelerators this process uses (None: all it sees).
        cpu_collectives: "gloo" or "mpi", for computations on CPU devices.
        timeout_s: how long to wait for every process to join.
        bind_address: address the coordinator listens on (None: every interface on the
            coordinator's port; "127.0.0.1:port" for a single machine).

    Returns:
        `DeviceInfo` of the joined run (device_count spans every process).

    Raises:
        InputError: a malformed setting, or JAX's backend already started in this process.
    """
    import jax

    if num_processes is None:
        num_processes = _env_int("JAX_NUM_PROCESSES")
    if process_id is None:
        process_id = _env_int("JAX_PROCESS_ID")
    if coordinator_address is not None and (not isinstance(coordinator_address, str)
                                            or ":" not in coordinator_address):
        raise InputError("coordinator_address", coordinator_address, "'host:port'")
    if num_processes is not None:
        require_int("num_processes", num_processes, 1)
    if process_id is not None:
        require_int("process_id", process_id, 0, None if num_processes is None else num_processes - 1)
    if cpu_collectives not in CPU_COLLECTIVES:
        raise InputError("cpu_collectives", cpu_collectives, f"one of {CPU_COLLECTIVES}")
    require_int("timeout_s", timeout_s, 1)
    if jax.distributed.is_initialized():
        raise InputError("initialize_multihost", "called twice", "one call per process")
    if _backend_started():
        raise InputError("initialize_multihost", "called after JAX started its backend",
                         "a call before the first jax array is created")

    jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    kwargs: dict[str, Any] = {"initialization_timeout": timeout_s}
    if bind_address is not None:
        kwargs["coordinator_bind_address"] = bind_address
    jax.distributed.initialize(coordinator_address, num_processes, process_id,
                               local_device_ids=local_device_ids, **kwargs)
    return device_info()


def shutdown_multihost() -> None:
    """Leave the multi-process run (every process calls it; a no-op when not joined)."""
    import jax

    if jax.distributed.is_initialized():
        jax.distributed.shutdown()
