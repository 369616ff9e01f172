"""No hidden module-level state in the computing packages: their globals are constants.

A mutable container at module level (a counter, a cache, a registry, a context variable) is
state that calls share without saying so; constants are tuples, frozensets or read-only
mappings (`types.MappingProxyType`). Caches of compiled functions live in `functools.lru_cache`.
"""

from __future__ import annotations

import collections
import contextvars
import importlib
import pkgutil

import pytest

PACKAGES = ("bayes_s2r.decision", "bayes_s2r.belief", "bayes_s2r.sim")
MUTABLE = (dict, list, set, bytearray, collections.deque, contextvars.ContextVar)


def _modules(package: str) -> list[str]:
    pkg = importlib.import_module(package)
    return [package] + [m.name for m in pkgutil.walk_packages(pkg.__path__, f"{package}.")]


@pytest.mark.parametrize("name", [m for p in PACKAGES for m in _modules(p)])
def test_module_globals_are_constants(name):
    module = importlib.import_module(name)
    mutable = {k: type(v).__name__ for k, v in vars(module).items()
               if not k.startswith("__") and isinstance(v, MUTABLE)}
    assert mutable == {}


def test_the_check_sees_a_mutable_global():
    assert isinstance(collections.Counter(), MUTABLE) and not isinstance((), MUTABLE)
