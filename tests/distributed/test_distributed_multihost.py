"""Two processes on loopback join with jax.distributed and split one batch over both."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bayes_s2r.distributed import initialize_multihost
from bayes_s2r.errors import InputError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TIMEOUT_S = 240  # generous for a loaded 2-core machine; normally about 10 s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_compute_the_single_process_result(tmp_path):
    from dist_batch_fn import batch_inputs, episodes

    want = np.asarray(episodes(batch_inputs(), np.float32(0.9)))
    port = _free_port()
    # the host-device count is the subject; the suite's compile flags stay, so values match
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f)
    env = {**os.environ, "XLA_FLAGS": flags}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    outs = [tmp_path / f"process{i}.json" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, str(HERE / "dist_multihost_worker.py"), str(port), "2",
                               str(i), str(outs[i])], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=TIMEOUT_S)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log[-3000:]
    for i, out in enumerate(outs):
        res = json.loads(out.read_text())
        info = res["info"]
        assert (info["process_index"], info["process_count"]) == (i, 2)
        assert (info["device_count"], info["local_device_count"]) == (4, 2)
        assert res["spans_processes"] == [0, 1]  # the batch really was split over both
        assert res["local_rows"] == 6  # 10 padded to 12, 3 per device, 2 devices per process
        np.testing.assert_array_equal(np.asarray(res["values"], np.float32), want)
        assert res["total"] == pytest.approx(float(want.sum()), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("kwargs,field", [
    ({"coordinator_address": "localhost"}, "coordinator_address"),
    ({"num_processes": 0}, "num_processes"),
    ({"num_processes": 2, "process_id": 2}, "process_id"),
    ({"cpu_collectives": "nccl"}, "cpu_collectives"),
    ({"timeout_s": 0}, "timeout_s"),
])
def test_initialize_multihost_rejects_bad_settings(kwargs, field):
    with pytest.raises(InputError, match=field):
        initialize_multihost(**{"coordinator_address": "127.0.0.1:1", "num_processes": 1,
                                "process_id": 0, **kwargs})


def test_initialize_multihost_refuses_after_the_backend_started(monkeypatch):
    import jax

    jax.devices()
    monkeypatch.setenv("JAX_NUM_PROCESSES", "1")
    monkeypatch.setenv("JAX_PROCESS_ID", "0")
    with pytest.raises(InputError, match="before the first jax array"):
        initialize_multihost("127.0.0.1:1")
    monkeypatch.setenv("JAX_PROCESS_ID", "x")
    with pytest.raises(InputError, match="JAX_PROCESS_ID"):
        initialize_multihost("127.0.0.1:1")
