"""Every `>>>` example in the package and its models runs and shows what it claims."""

from __future__ import annotations

import contextlib
import doctest
import importlib
import io
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TREES = ((ROOT / "bayes_s2r", "bayes_s2r"), (ROOT / "models", "bayes_s2r.models"))


def _modules_with_examples() -> list[str]:
    names = []
    for base, package in TREES:
        for path in sorted(base.rglob("*.py")):
            if ">>>" not in path.read_text():
                continue
            parts = [package, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(parts))
    return names


MODULES = _modules_with_examples()


def test_the_collector_finds_the_examples():
    assert {"bayes_s2r.errors", "bayes_s2r.outcomes", "bayes_s2r.decision.decide"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    # import by name: a package attribute may shadow its module (`bayes_s2r.decision.decide`)
    with contextlib.redirect_stdout(io.StringIO()):  # Brax prints optional-backend notices once
        module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
