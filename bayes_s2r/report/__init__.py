"""Report: the campaign's HTML page and its figures, made from the ledger alone."""

from bayes_s2r.report.data import ReportData, load_report_data
from bayes_s2r.report.html import make_report
from bayes_s2r.report.intervals import (
    Interval,
    clopper_pearson_upper,
    newcombe_difference,
    wilson_interval,
)

__all__ = [
    "Interval",
    "ReportData",
    "clopper_pearson_upper",
    "load_report_data",
    "make_report",
    "newcombe_difference",
    "wilson_interval",
]
