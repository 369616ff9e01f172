"""The examples in the decision package's docstrings run."""

import doctest
import importlib

import pytest

# The package re-exports `decide`, which shadows the module of the same name: import by path.
MODULES = ["bayes_s2r.decision.decide", "bayes_s2r.decision.transition"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
