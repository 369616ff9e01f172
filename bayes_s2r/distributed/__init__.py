"""Multi-device and multi-host scaling with JAX's own sharding (no other framework).

- `configure_host_devices(n)`: n CPU devices (sets XLA_FLAGS before JAX starts).
- `batch_mesh`, `use_devices`, and `devices=` on every sharded function: which devices.
- `sharded_rollout`, `sharded_rollout_dr`, `sharded_simulate_batch`: the testbed's episode
  batch split over devices; same key, same episodes as the single-device functions.
- `sharded_lookahead`, `shard_lookahead_arrays`: the look-ahead with the posterior draws
  split over devices; equal to the single-device result up to reduction order.
- `chain_method_for(num_chains)`: "parallel" MCMC chains when there are enough devices.
- `initialize_multihost(...)`: several processes/hosts (jax.distributed), then the same code;
  `place_batch`, `sharded_call`, `gather` for any batch function.
"""

import importlib

# Names load their module on first use (PEP 562), so `decision` can ask for the active mesh
# (`devices`) without importing the testbed that `rollouts` needs.
_LAZY = {
    **dict.fromkeys(["BATCH_AXIS", "DeviceInfo", "active_mesh", "batch_mesh", "chain_method_for",
                     "configure_host_devices", "device_info", "use_devices"], "devices"),
    **dict.fromkeys(["draw_mesh", "shard_lookahead_arrays", "sharded_lookahead"], "lookahead"),
    **dict.fromkeys(["CPU_COLLECTIVES", "initialize_multihost", "shutdown_multihost"], "multihost"),
    **dict.fromkeys(["Placed", "batch_length", "gather", "place_batch", "place_replicated", "put_global",
                     "sharded_call", "unpad"], "placement"),
    **dict.fromkeys(["chunk_for", "sharded_rollout", "sharded_rollout_dr", "sharded_simulate_batch"],
                    "rollouts"),
}

__all__ = [
    "BATCH_AXIS",
    "CPU_COLLECTIVES",
    "DeviceInfo",
    "Placed",
    "active_mesh",
    "batch_length",
    "batch_mesh",
    "chain_method_for",
    "chunk_for",
    "configure_host_devices",
    "device_info",
    "draw_mesh",
    "gather",
    "initialize_multihost",
    "place_batch",
    "place_replicated",
    "put_global",
    "shard_lookahead_arrays",
    "sharded_call",
    "sharded_lookahead",
    "sharded_rollout",
    "sharded_rollout_dr",
    "sharded_simulate_batch",
    "shutdown_multihost",
    "unpad",
    "use_devices",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
