"""The examples in the distributed docstrings run and show what they claim."""

from __future__ import annotations

import contextlib
import doctest
import io

import pytest

import bayes_s2r.distributed.devices
import bayes_s2r.distributed.placement
import bayes_s2r.sim.sharded


@pytest.mark.parametrize("module", [bayes_s2r.distributed.devices, bayes_s2r.distributed.placement,
                                    bayes_s2r.sim.sharded], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    with contextlib.redirect_stdout(io.StringIO()):  # Brax prints optional-backend notices once
        import brax.generalized.pipeline
        import brax.io.mjcf  # noqa: F401
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
