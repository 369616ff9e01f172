"""The notebooks run end to end: executed with nbclient in a fresh kernel, in a temporary
working directory, with the small settings that `BAYES_S2R_QUICK=1` selects.

The kernel is ipykernel in the Python running the tests (a temporary kernelspec names
`sys.executable`), so the notebooks see the same installation as the suite.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


KERNEL = "bayes-s2r-tests"


def _kernelspec(root: Path) -> dict:
    """A kernelspec named KERNEL under `root` that runs ipykernel in this interpreter.

    Pointing JUPYTER_PATH at it makes the choice of Python explicit: no user-level `python3`
    spec and no `python` on PATH can send the notebooks to another installation.
    """
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (bayes_s2r tests)", "language": "python",
    }))
    return {"JUPYTER_PATH": str(root)}


def run_notebook(name: str, workdir: Path, probe: str, monkeypatch) -> dict:
    """Execute notebooks/<name> in `workdir`, then a probe cell that prints one JSON object."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(probe))
    env = {"BAYES_S2R_QUICK": "1", "MPLBACKEND": "Agg", **_kernelspec(workdir / ".jupyter")}
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name=KERNEL, resources={"metadata": {"path": str(workdir)}},
    )
    for key, value in env.items():  # the kernel process inherits the test's environment
        monkeypatch.setenv(key, value)
    client.execute()
    # the kernel may send one print in several stream messages
    return json.loads("".join(o["text"] for o in nb.cells[-1].outputs if o.get("name") == "stdout"))


def test_notebooks_are_stored_without_outputs():
    for path in NOTEBOOKS.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), path.name
        assert nb.metadata["kernelspec"]["name"] == "python3"


QUICKSTART_PROBE = """
import json
row = decision.table.loc[decision.best] if decision.best is not None else None
print(json.dumps({
    "best": decision.best,
    "feasible": None if row is None else bool(row["feasible"]),
    "candidates": [c.name for c in candidates],
    "p_best_sum": float(decision.p_best.sum()),
    "flip": float(decision.flip_probability),
    "gains": list(gains.index),
    "hdi_ordered": bool((gains["hdi_low"] <= gains["hdi_high"]).all()),
    "ledger_file": ledger_path.exists(),
}))
"""


def test_quickstart(tmp_path, monkeypatch):
    out = run_notebook("quickstart.ipynb", tmp_path, QUICKSTART_PROBE, monkeypatch)
    assert out["best"] in out["candidates"] and out["feasible"] is True
    assert out["p_best_sum"] == pytest.approx(1.0)
    assert 0.0 <= out["flip"] <= 1.0
    assert {"dr_narrow", "dr_wide", "ft_real"} <= set(out["gains"]) and out["hdi_ordered"]
    assert out["ledger_file"] and (tmp_path / "quickstart.sqlite").exists()


CLOSED_LOOP_PROBE = """
import json
import bayes_s2r as bs
with bs.Ledger(ledger_path) as led:
    final = bs.load_state(led)
    decisions = led.records("decision")
print(json.dumps({
    "status": final.status,
    "rounds": len(final.history),
    "chosen": [h.chosen for h in final.history],
    "candidates": [c.name for c in candidates],
    "decisions": len(decisions),
    "within_budget": all(getattr(final.budget, r) >= 0 for r in ("real", "compute", "eng")),
    "deployment": sorted(deployment),
    "page": str(page),
    "figures": figures,
}))
"""


def test_closed_loop(tmp_path, monkeypatch):
    out = run_notebook("closed_loop.ipynb", tmp_path, CLOSED_LOOP_PROBE, monkeypatch)
    assert out["status"] == "stopped" and 1 <= out["rounds"] <= 3
    assert out["decisions"] == out["rounds"]
    assert all(c is None or c in out["candidates"] for c in out["chosen"])
    assert out["within_budget"]
    assert {"passes", "ucb_unsafe", "alpha_deploy"} <= set(out["deployment"])
    page = tmp_path / "closed_loop_report" / "index.html"
    assert page.exists() and out["page"].endswith("index.html")
    assert out["figures"] and all((page.parent / f).stat().st_size > 0 for f in out["figures"])
    assert (tmp_path / "closed_loop.sqlite").exists()
