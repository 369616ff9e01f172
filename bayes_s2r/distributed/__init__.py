"""Multi-device and multi-host scaling with JAX's own sharding (no other framework).

- `configure_host_devices(n)`: n CPU devices (sets XLA_FLAGS before JAX starts).
- `batch_mesh`, and `devices=` on every sharded function: which devices. Devices are always
  passed explicitly; nothing reroutes a call that was not given them.
- The users of these helpers live with their computations: `bayes_s2r.sim.sharded`
  (`sharded_rollout`, `sharded_rollout_dr`, `sharded_simulate_batch`; `devices=` on
  `simulate_batch`, `train_es`, `train_cem`) and `bayes_s2r.decision.sharded`
  (`sharded_lookahead`; `devices=` on `decide`). This package imports neither.
- `chain_method_for(num_chains)`: "parallel" MCMC chains when there are enough devices.
- `initialize_multihost(...)`: several processes/hosts (jax.distributed), then the same code;
  `place_batch`, `sharded_call`, `gather` for any batch function.
"""

import importlib

# Names load their module on first use (PEP 562): `devices` and `multihost` import JAX only
# inside their functions, so `configure_host_devices` can run before JAX starts.
_LAZY = {
    **dict.fromkeys(["BATCH_AXIS", "DeviceInfo", "batch_mesh", "chain_method_for",
                     "configure_host_devices", "device_info"], "devices"),
    **dict.fromkeys(["CPU_COLLECTIVES", "initialize_multihost", "shutdown_multihost"], "multihost"),
    **dict.fromkeys(["Placed", "batch_length", "gather", "place_batch", "place_replicated", "put_global",
                     "sharded_call", "unpad"], "placement"),
}

__all__ = [
    "BATCH_AXIS",
    "CPU_COLLECTIVES",
    "DeviceInfo",
    "Placed",
    "batch_length",
    "batch_mesh",
    "chain_method_for",
    "configure_host_devices",
    "device_info",
    "gather",
    "initialize_multihost",
    "place_batch",
    "place_replicated",
    "put_global",
    "sharded_call",
    "shutdown_multihost",
    "unpad",
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
