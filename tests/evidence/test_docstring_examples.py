"""The examples in the evidence and vocabulary docstrings run and show what they claim."""

from __future__ import annotations

import doctest

import pytest

import bayes_s2r.evidence.io
import bayes_s2r.evidence.ledger
import bayes_s2r.evidence.records
import bayes_s2r.vocab


@pytest.mark.parametrize(
    "module",
    [bayes_s2r.evidence.ledger, bayes_s2r.evidence.io, bayes_s2r.evidence.records, bayes_s2r.vocab],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if module is not bayes_s2r.evidence.records:  # records has no examples yet
        assert result.attempted > 0
