"""Report: the campaign's HTML page and its figures, made from the ledger alone.

The names below load on first use: the command line reads the table vocabulary
(`bayes_s2r.report.columns`) without paying for matplotlib.
"""

import importlib

_WHERE = {
    "ReportData": "data", "load_report_data": "data", "make_report": "html",
    "Interval": "intervals", "clopper_pearson_upper": "intervals",
    "newcombe_difference": "intervals", "wilson_interval": "intervals",
}

__all__ = [
    "Interval",
    "ReportData",
    "clopper_pearson_upper",
    "load_report_data",
    "make_report",
    "newcombe_difference",
    "wilson_interval",
]


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"bayes_s2r.report.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'bayes_s2r.report' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
