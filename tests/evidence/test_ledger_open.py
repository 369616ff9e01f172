"""Opening a ledger: processes creating one new file at once, and a quiet interpreter exit."""

from __future__ import annotations

import multiprocessing
import sqlite3
import subprocess
import sys

from bayes_s2r.evidence.ledger import SCHEMA_VERSION, Ledger
from bayes_s2r.evidence.records import PairedEval


def _open_and_add(path, start, results):
    start.wait()
    try:
        with Ledger(path, timeout=10.0) as ledger:
            ledger.add(PairedEval("dr", 1, 2, 1, 2))
        results.put("ok")
    except Exception as e:  # noqa: BLE001 (reported to the parent)
        results.put(f"{type(e).__name__}: {e}")


def test_processes_creating_the_same_new_ledger_at_once_all_succeed(tmp_path):
    # A fork server that has imported the ledger once: children start fast, and none is
    # forked from this process, whose JAX threads make fork() unsafe.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["bayes_s2r.evidence.ledger", __name__])
    failures = []
    for trial in range(20):
        path = str(tmp_path / f"new{trial}.sqlite")
        start, results = ctx.Barrier(3), ctx.Queue()
        procs = [ctx.Process(target=_open_and_add, args=(path, start, results)) for _ in range(3)]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        failures += [o for o in outcomes if o != "ok"]
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
            assert conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 1
        finally:
            conn.close()
    assert failures == []


def test_interpreter_exit_after_opening_a_ledger_prints_nothing(tmp_path):
    # A ledger left open in a module global is finalized while the interpreter tears
    # down modules; nothing may be printed then.
    code = (
        "import bayes_s2r\n"
        "from bayes_s2r.evidence.ledger import Ledger\n"
        "import jax.numpy as jnp\n"
        f"ledger = Ledger({str(tmp_path / 'l.sqlite')!r})\n"
        "kept = [Ledger(':memory:')]\n"
        "jnp.zeros(2).block_until_ready()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0
    assert out.stderr == ""
