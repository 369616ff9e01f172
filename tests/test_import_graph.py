"""The static import graph follows the data flow of DESIGN.md §4 and has no cycles.

Every module of `bayes_s2r` (and `models`, installed as `bayes_s2r.models`) is parsed with
`ast`, imports inside functions included: a lazy import that only defers JAX is fine, but it
must not point against the flow or close a cycle.
"""

from __future__ import annotations

import ast
import graphlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TREES = ((ROOT / "bayes_s2r", "bayes_s2r"), (ROOT / "models", "bayes_s2r.models"))

#: Each unit (a subpackage or a top-level module) may import only units of a lower rank:
#: evidence -> belief -> decision -> campaign -> (sim or robot); decision and sim share a rank,
#: so neither imports the other, and belief sits below decision.
RANK = {
    "bayes_s2r.errors": 0,
    "bayes_s2r.vocab": 1,
    "bayes_s2r.outcomes": 1,
    "bayes_s2r.compiling": 1,
    "bayes_s2r.models": 1,
    "bayes_s2r.distributed": 1,
    "bayes_s2r.evidence": 2,
    "bayes_s2r.belief": 3,
    "bayes_s2r.decision": 4,
    "bayes_s2r.sim": 4,
    "bayes_s2r.campaign": 5,
    "bayes_s2r.report": 5,
    "bayes_s2r.cli_root": 6,
    "bayes_s2r.cli_decide": 7,
    "bayes_s2r.cli_campaign": 8,
    "bayes_s2r.cli": 9,
    "bayes_s2r.__main__": 10,
    "bayes_s2r": 10,
}

#: Arrows still pointing the wrong way, each with what removes it. `cli_campaign` takes the
#: root `app` from `bayes_s2r.cli`, which imports it back to register its commands; importing
#: `app` from `bayes_s2r.cli_root` instead ends the cycle.
KNOWN: set[tuple[str, str]] = set()  # arrows against the flow still allowed (none)


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for base, name in TREES:
        for path in base.rglob("*.py"):
            parts = [name, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _target(name: str) -> str | None:
    """The known module `name` refers to (a name inside a module refers to the module)."""
    if name.startswith("models."):
        name = "bayes_s2r." + name
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: pathlib.Path) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            names = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        out |= {t for t in map(_target, names) if t is not None and t != module}
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _unit(module: str) -> str:
    if module.startswith("bayes_s2r.models"):
        return "bayes_s2r.models"
    return ".".join(module.split(".")[:2])


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph`, or None."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        return e.args[1]
    return None


def _without_known(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {t for t in ts if (_unit(m), _unit(t)) not in KNOWN} for m, ts in graph.items()}


def test_the_graph_sees_lazy_imports():
    # decide imports the sharded look-ahead inside a function; the parser must see it
    assert "bayes_s2r.decision.sharded" in GRAPH["bayes_s2r.decision.decide"]
    assert len(MODULES) > 50


def test_no_module_cycles():
    assert _cycle(_without_known(GRAPH)) is None


def test_no_package_cycles():
    units: dict[str, set[str]] = {}
    for m, targets in _without_known(GRAPH).items():
        units.setdefault(_unit(m), set()).update(_unit(t) for t in targets if _unit(t) != _unit(m))
    assert _cycle(units) is None


def test_every_unit_has_a_place_in_the_flow():
    assert {_unit(m) for m in MODULES} <= set(RANK)


@pytest.mark.parametrize("source, target", [
    ("bayes_s2r.decision", "bayes_s2r.sim"),
    ("bayes_s2r.belief", "bayes_s2r.decision"),
    ("bayes_s2r.evidence", "bayes_s2r.belief"),
    ("bayes_s2r.distributed", "bayes_s2r.decision"),
    ("bayes_s2r.distributed", "bayes_s2r.sim"),
])
def test_design_arrows_are_forbidden(source, target):
    assert RANK[target] >= RANK[source]


def test_imports_follow_the_data_flow():
    # `from bayes_s2r import __version__` is no arrow: Python runs a package's __init__
    # before any of its modules, and that __init__ imports only errors and vocab eagerly
    assert {_unit(t) for t in GRAPH["bayes_s2r"]} <= {"bayes_s2r.errors", "bayes_s2r.vocab"}
    wrong = sorted((m, t) for m, targets in GRAPH.items() for t in targets
                   if _unit(m) != _unit(t) and t != "bayes_s2r" and RANK[_unit(t)] >= RANK[_unit(m)]
                   and (_unit(m), _unit(t)) not in KNOWN)
    assert wrong == []


def test_known_exceptions_are_still_needed():
    # once an arrow is gone, its entry goes too
    for source, target in KNOWN:
        assert any(_unit(t) == target for m, ts in GRAPH.items() if _unit(m) == source for t in ts)
