"""`hdi_bounds` gives ArviZ's highest-density interval; a belief's summary needs no ArviZ."""

import warnings

import numpy as np
import pytest

from bayes_s2r.belief.posterior import GainBelief, hdi_bounds
from bayes_s2r.errors import InputError


def _arviz_hdi(column, prob):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az
    return az.hdi(column, hdi_prob=prob)


@pytest.mark.parametrize("prob", [0.5, 0.9, 0.94, 0.999])
@pytest.mark.parametrize("n", [2, 3, 101, 4000])
def test_matches_arviz_column_by_column(prob, n):
    rng = np.random.default_rng(n)
    draws = np.column_stack([rng.normal(size=n), rng.gamma(2.0, size=n), rng.integers(0, 3, n) / 2.0,
                             np.r_[rng.normal(-3, 0.2, n // 2), rng.normal(3, 1, n - n // 2)]])
    got = hdi_bounds(draws, prob)
    want = np.stack([_arviz_hdi(draws[:, j], prob) for j in range(draws.shape[1])])
    np.testing.assert_array_equal(got, want)


def test_known_answer_and_bad_input():
    assert hdi_bounds(np.array([[0.0], [1.0], [2.0], [10.0]]), 0.5).tolist() == [[0.0, 2.0]]
    with pytest.raises(InputError, match="hdi_prob"):
        hdi_bounds(np.zeros((4, 1)), 1.0)
    with pytest.raises(InputError, match="draws"):
        hdi_bounds(np.zeros(4), 0.9)


def test_summary_of_a_stored_belief_needs_no_arviz(monkeypatch):
    from bayes_s2r.belief import posterior

    def refuse():
        raise AssertionError("arviz was needed")

    monkeypatch.setattr(posterior, "_arviz", refuse)
    b = GainBelief(["a", "b"], [[0.0, 0.0], [0.1, 0.1], [0.5, -0.1]], diagnostics={"ok": True})
    s = b.summary(0.5)
    assert s.loc["a", "hdi_low"] == 0.0 and s.loc["a", "hdi_high"] == 0.1


def test_arviz_still_reachable_as_az():
    from bayes_s2r.belief import posterior

    assert posterior.az.hdi is not None
    b = GainBelief.from_gaussian(["a", "b"], [0.1, 0.0], [0.05, 0.02], num_draws=400)
    assert list(b.to_inference_data().posterior["gain"].coords["candidate"].values) == ["a", "b"]
