"""`make_report` replaces a report whole: drawn aside, then moved into place."""

from __future__ import annotations

import pytest

from bayes_s2r.evidence.records import ExecutionOutcome
from bayes_s2r.report import html as report_html
from bayes_s2r.report import make_report


def test_a_failed_write_leaves_the_previous_report_untouched(tmp_path, monkeypatch):
    page = make_report([ExecutionOutcome("ft", 10, 1)], tmp_path, posterior="summary")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert set(before) == {"index.html", "risk.png"}

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(report_html, "_header", broken)  # the page fails after every figure is drawn
    with pytest.raises(RuntimeError, match="disk full"):
        make_report([ExecutionOutcome("ft", 10, 9)], tmp_path, posterior="summary", title="another")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no staging folder left
    assert page.is_file()


def test_a_staging_folder_left_by_a_killed_write_is_cleared(tmp_path):
    left = tmp_path / ".report-staging-old"
    left.mkdir()
    (left / "posterior.png").write_bytes(b"half")
    make_report([], tmp_path, posterior="summary")
    assert not left.exists() and (tmp_path / "index.html").is_file()
