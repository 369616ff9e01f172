"""The report's intervals against scipy's exact answers and Newcombe's published tables."""

import pytest
from scipy import stats

from bayes_s2r.errors import InputError
from bayes_s2r.report.intervals import (
    clopper_pearson_upper,
    newcombe_difference,
    wilson_interval,
)


@pytest.mark.parametrize("x,n", [(0, 10), (3, 10), (10, 10), (81, 263), (1, 2000)])
@pytest.mark.parametrize("level", [0.8, 0.9, 0.95])
def test_wilson_matches_scipy(x, n, level):
    ref = stats.binomtest(x, n).proportion_ci(confidence_level=level, method="wilson")
    iv = wilson_interval(x, n, level)
    assert iv.estimate == pytest.approx(x / n)
    assert iv.low == pytest.approx(ref.low, abs=1e-12)
    assert iv.high == pytest.approx(ref.high, abs=1e-12)


# Newcombe (1998), "Interval estimation for the difference between independent proportions",
# Statistics in Medicine 17, Table II, method 10 (score, no continuity correction).
NEWCOMBE_TABLE_II = [
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((0, 10, 0, 10), (-0.2775, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0)),
    ((10, 10, 0, 10), (0.6075, 1.0)),
]


@pytest.mark.parametrize("counts,expected", NEWCOMBE_TABLE_II)
def test_newcombe_matches_published_table(counts, expected):
    iv = newcombe_difference(*counts, level=0.95)
    assert iv.estimate == pytest.approx(counts[0] / counts[1] - counts[2] / counts[3])
    assert (round(iv.low, 4), round(iv.high, 4)) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("k,n", [(0, 1), (0, 59), (1, 20), (3, 71), (7, 7)])
@pytest.mark.parametrize("delta", [0.01, 0.05, 0.2])
def test_clopper_pearson_upper_is_exact(k, n, delta):
    u = clopper_pearson_upper(k, n, delta)
    ref = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * delta, method="exact").high
    assert u == pytest.approx(ref, abs=1e-10)
    if k < n:  # the defining tail equation P(Bin(n, u) <= k) = delta
        assert stats.binom.cdf(k, n, u) == pytest.approx(delta, rel=1e-8)


def test_clopper_pearson_upper_without_trials_is_one():
    assert clopper_pearson_upper(0, 0, 0.05) == 1.0


@pytest.mark.parametrize("call,field", [
    (lambda: wilson_interval(3, 0), "trials"),
    (lambda: wilson_interval(5, 3), "successes"),
    (lambda: wilson_interval(1, 3, level=1.0), "level"),
    (lambda: newcombe_difference(1, 3, -1, 3), "successes"),
    (lambda: clopper_pearson_upper(2, 1, 0.05), "events"),
    (lambda: clopper_pearson_upper(0, 5, 0.0), "delta"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(InputError, match=field):
        call()
