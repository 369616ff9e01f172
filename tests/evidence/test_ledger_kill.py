"""A process killed with SIGKILL in the middle of an import leaves the ledger as it was."""

from __future__ import annotations

import importlib.resources
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import SensitivityTrial

from .strategies import raw_content

EXAMPLE_CSV = importlib.resources.files("bayes_s2r") / "examples" / "ledger.csv"
ROWS, PAUSE_AFTER = 3000, 2000

# The child imports a large CSV. Its per-row insert is wrapped so that, after PAUSE_AFTER
# rows written inside the import's transaction, it reports how many rows its own
# connection sees and sleeps until killed. A tiny page cache makes SQLite spill the
# uncommitted pages into the WAL file, so the kill leaves uncommitted frames on disk.
CHILD = textwrap.dedent(f"""
    import importlib.util, sys, time, types

    # The evidence subpackage needs neither JAX nor the rest of bayes_s2r: load it under a
    # bare parent package, so the child starts in a second instead of importing JAX.
    spec = importlib.util.find_spec("bayes_s2r")
    parent = types.ModuleType("bayes_s2r")
    parent.__path__ = list(spec.submodule_search_locations)
    sys.modules["bayes_s2r"] = parent
    from bayes_s2r.evidence import ledger as mod
    assert "jax" not in sys.modules

    ledger_path, csv_path, marker = sys.argv[1:4]
    insert, written = mod.Ledger._insert, [0]

    def insert_then_pause(self, record, text):
        new = insert(self, record, text)
        written[0] += 1
        if written[0] == {PAUSE_AFTER}:
            seen = self._db().execute("SELECT COUNT(*) FROM records").fetchone()[0]
            with open(marker + ".tmp", "w") as f:
                f.write(str(seen))
            import os
            os.replace(marker + ".tmp", marker)
            time.sleep(600)
        return new

    mod.Ledger._insert = insert_then_pause
    ledger = mod.Ledger(ledger_path, create=False)
    ledger._db().execute("PRAGMA cache_size=8")
    ledger.import_csv(csv_path)
    sys.exit("the import finished: the child was not killed")
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_during_import_leaves_ledger_unchanged(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        ledger.import_csv(EXAMPLE_CSV)
        ledger.set_meta("round", 2)
    before = raw_content(str(path))
    big = tmp_path / "big.csv"
    big.write_text(
        "kind,direction,level,successes,episodes\n"
        + "".join(f"sensitivity_trial,latency,{i / ROWS!r},{i % 50},50\n" for i in range(ROWS))
    )
    marker, script = tmp_path / "paused", tmp_path / "child.py"
    script.write_text(CHILD)

    child = subprocess.Popen(
        [sys.executable, str(script), str(path), str(big), str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 300
        while not marker.exists():
            assert child.poll() is None, child.communicate()[0].decode()[-2000:]
            assert time.monotonic() < deadline, "the child never reached the pause"
            time.sleep(0.05)
        seen_inside = int(marker.read_text())
        # Premise: the rows were written inside the open transaction...
        assert seen_inside == len(before[0]) + PAUSE_AFTER
        # ...and another connection does not see them (WAL isolation).
        with Ledger(path, create=False) as reader:
            assert len(reader) == len(before[0])
        assert os.path.getsize(str(path) + "-wal") > 0  # uncommitted pages spilled to disk
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL

    assert raw_content(str(path)) == before
    with Ledger(path, create=False) as ledger:
        assert ledger._db().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert ledger.get_meta("round") == 2
        result = ledger.import_csv(big)  # the ledger is still usable: the import now completes
        assert result.added == ROWS and len(ledger) == len(before[0]) + ROWS
        assert ledger.records(SensitivityTrial)[-1] == SensitivityTrial(
            "latency", (ROWS - 1) / ROWS, (ROWS - 1) % 50, 50
        )
