"""notebooks/hopper.ipynb runs end to end (nbclient, fresh kernel of this interpreter) and its
experiments return ledger records. The hopper's MJX episode compiles once for the notebook (the
identification's replay once more); identification recovers the hidden values."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "hopper.ipynb"
KERNEL = "bayes-s2r-hopper-test"

PROBE = """
import json
from bayes_s2r.evidence.records import PairedEval, SensitivityTrial
from bayes_s2r.sim.task import _chunk_fn
print(json.dumps({
    "dr_episodes": int(stats.success.shape[0]),
    "draw_columns": int(draws.shape[1]),
    "latencies": sorted({int(x) for x in draws[:, 2].tolist()}),
    "trials": len(sweep.trials),
    "trial_records": all(isinstance(t, SensitivityTrial) for t in sweep.trials),
    "pairs": [(t.direction, t.pair_direction) for t in sweep.trials if t.pair_direction],
    "effects": len(sim.pair_effects(sweep.table)),
    "paired_record": isinstance(result.record, PairedEval),
    "paired_episodes": result.record.episodes_treated,
    "compiles": _chunk_fn._cache_size(),
    "si_box": si.interval(0.99),
    "si_latency": si.mean["latency"],
    "si_dr": si.to_dr().to_dict(),
}))
"""


def test_hopper_notebook(tmp_path, monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert sum(1 for src in code for line in src.splitlines() if line.strip()) <= 30
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    spec = tmp_path / ".jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (bayes_s2r tests)", "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / ".jupyter"))
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name=KERNEL,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    # the kernel may send one print in several stream messages
    got = json.loads("".join(o["text"] for o in nb.cells[-1].outputs if o.get("name") == "stdout"))
    assert got["dr_episodes"] == 16 and got["draw_columns"] == 4
    assert set(got["latencies"]) <= {0, 1, 2} and len(got["latencies"]) > 1  # DR draws latency per episode
    assert got["trials"] == 4 * 2 + 1 and got["trial_records"] and got["pairs"] == [["friction", "latency"]]
    assert got["effects"] == 1
    assert got["paired_record"] and got["paired_episodes"] == 16
    assert got["compiles"] == 1  # every experiment, and logging the "real" episodes, reused one compiled episode
    # identification on the logged episodes: the hidden friction 0.7, torso mass 1.2, latency 1
    box = got["si_box"]
    assert box["friction"][0] <= 0.7 <= box["friction"][1] and box["torso_mass"][0] <= 1.2 <= box["torso_mass"][1]
    assert box["friction"][1] - box["friction"][0] < 0.2 and got["si_latency"] == 1.0
    assert got["si_dr"]["torso_mass"]["normal"] and got["si_dr"]["latency"]["center"] == 1.0
    # nothing the notebook printed came from Brax's or MuJoCo's import notices
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "maintained" not in text and "warp" not in text
