"""One process of the two-process test: join on loopback, run a sharded batch function, report.

Run as `python dist_multihost_worker.py PORT NUM_PROCESSES PROCESS_ID OUT_JSON`. Each process has
two CPU devices; the batch is split over the devices of both processes.
"""

import json
import sys


def main(port: int, num_processes: int, process_id: int, out: str) -> None:
    from bayes_s2r.distributed import configure_host_devices, initialize_multihost

    configure_host_devices(2)
    address = f"127.0.0.1:{port}"
    info = initialize_multihost(address, num_processes, process_id, bind_address=address, timeout_s=200)

    import jax
    import jax.numpy as jnp
    import numpy as np
    from dist_batch_fn import BATCH, batch_inputs, episodes

    from bayes_s2r.distributed import (
        gather,
        place_batch,
        place_replicated,
        sharded_call,
        shutdown_multihost,
    )

    x0, keys = batch_inputs()
    decay = jnp.float32(0.9)
    final = sharded_call(episodes, (x0, keys), decay)
    values = gather(final)
    # The same batch placed by hand: the untrimmed output stays split over both processes.
    placed = place_batch((x0, keys))
    raw = episodes(placed.tree, place_replicated(decay, placed.mesh))
    spans = sorted({d.process_index for d in raw.sharding.device_set})
    local_rows = sum(s.data.shape[0] for s in raw.addressable_shards)
    total = float(gather(jax.jit(jnp.sum)(raw[: placed.length])))
    with open(out, "w") as f:
        json.dump({"info": info._asdict(), "values": np.asarray(values).tolist(), "total": total,
                   "batch": BATCH, "spans_processes": spans,
                   "local_rows": local_rows, "spec": str(raw.sharding.spec)}, f)
    shutdown_multihost()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
