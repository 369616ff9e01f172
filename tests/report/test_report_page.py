"""The report page: its files, its content, and how a real browser renders it."""

import html.parser
import re
import shutil

import numpy as np
import pytest
from PIL import Image

from bayes_s2r.errors import InputError
from bayes_s2r.report import make_report
from bayes_s2r.report.html import FIGURE_FILES

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class _Tags(html.parser.HTMLParser):
    """Collects the attributes of every tag by name."""

    def __init__(self):
        super().__init__()
        self.tags = {}

    def handle_starttag(self, tag, attrs):
        self.tags.setdefault(tag, []).append(dict(attrs))


def tags(text):
    p = _Tags()
    p.feed(text)
    return p.tags


def test_every_referenced_png_exists_and_is_valid(report_dir):
    page = (report_dir / "index.html").read_text()
    srcs = [t["src"] for t in tags(page)["img"]]
    assert sorted(srcs) == sorted(FIGURE_FILES)  # the synthetic campaign has data for all
    for src in srcs:
        assert "/" not in src and ":" not in src  # relative, inside the folder
        path = report_dir / src
        assert path.read_bytes()[:8] == PNG_MAGIC, src
        assert path.stat().st_size > 10_000, src
        with Image.open(path) as im:
            im.verify()
        with Image.open(path) as im:
            assert im.width >= 500 and im.height >= 250, (src, im.size)
            px = np.asarray(im.convert("L"), dtype=float)
            assert px.std() > 10, f"{src} looks blank"


def test_header_and_decisions_table(report_dir):
    page = (report_dir / "index.html").read_text()
    assert "pendulum-latency" in page
    assert "Stopped at round 3" in page and "economic stop" in page
    assert "Deployable" in page and "pi2" in page
    for label, start, spent, left in (("real robot-hours", "10", "3.4", "6.6"),
                                      ("compute hours", "200", "56.5", "143.5"),
                                      ("engineering hours", "40", "7.2", "32.8")):
        assert re.search(rf"<th>{label}</th><td>{start}</td><td>{spent}</td><td>{left}</td>", page)
    table = page.split('<table class="decisions">')[1].split("</table>")[0]
    assert table.count("<tr>") == 1 + 4  # header + one row per round
    assert '<span class="stop">stop</span>' in table and "economic" in table
    assert page.count("<details>") == 4
    assert page.count("<figcaption>") == len(FIGURE_FILES)


def test_page_is_self_contained(report_dir):
    page = (report_dir / "index.html").read_text()
    assert not re.search(r"https?://", page)
    found = tags(page)
    assert "link" not in found
    assert all("src" not in s for s in found.get("script", []))
    assert {p.name for p in report_dir.iterdir()} == {"index.html", *FIGURE_FILES}


def test_empty_ledger_still_makes_a_page(tmp_path):
    page = make_report([], tmp_path / "empty", posterior="summary")
    text = page.read_text()
    assert "No decisions" in text and "`bayes-s2r decide` records one" in text
    assert "img" not in tags(text)
    assert text.count("no data:") == len(FIGURE_FILES)


def test_missing_data_shows_a_note_not_an_empty_plot(campaign, tmp_path, monkeypatch):
    from bayes_s2r.evidence.records import DecisionRecord
    from bayes_s2r.report import beliefs

    records, meta = campaign
    cands = [{**c, "touches_robot": False} for c in meta["campaign"]["candidates"]]
    meta = {"campaign": {**meta["campaign"], "candidates": cands}}
    # decisions only, and without execution bounds, as a campaign that never touches a robot
    records = [DecisionRecord(r.round, r.chosen, r.stop_reason,
                              [{**row, "ucb_exec": None} for row in r.payload()["table"]],
                              r.seed, r.version, r.payload()["extra"])
               for r in records if isinstance(r, DecisionRecord)]

    def unavailable():
        raise ImportError("fit_gains", name="bayes_s2r.belief.fit")

    monkeypatch.setattr(beliefs, "_fit_gains", unavailable)
    out = tmp_path / "r"
    make_report(records, out, meta=meta)  # posterior="auto" falls back to the summaries
    text = (out / "index.html").read_text()
    assert "Shown instead of a refit: fit_gains unavailable (bayes_s2r.belief.fit)." in text
    assert "risk.png" not in text and not (out / "risk.png").exists()
    # each empty panel names the records that would fill it
    assert "needs ExecutionOutcome records of a robot-touching candidate, or a DeploymentEval" in text
    assert "needs a PairedEval of a chosen adaptation, with the round of the decision that chose it" in text
    assert "needs SensitivityTrial records of one policy at level 0 and at level 1" in text
    assert "Deployment not checked" in text
    drawn = {t["src"] for t in tags(text)["img"]}
    assert drawn == {"posterior.png", "decomposition.png", "stability.png", "budget.png"}
    assert drawn == {f for f in FIGURE_FILES if (out / f).exists()}


def test_rerun_removes_figures_it_no_longer_draws(campaign, report_dir, tmp_path):
    _, meta = campaign
    out = tmp_path / "again"
    shutil.copytree(report_dir, out)
    make_report([], out, meta=meta, posterior="summary")
    # only the deployment check (kept in meta) is left to draw
    assert {f for f in FIGURE_FILES if (out / f).exists()} == {"risk.png"}


def test_bad_arguments_raise_input_error(campaign, tmp_path):
    with pytest.raises(InputError, match="posterior"):
        make_report(campaign, tmp_path, posterior="nuts")
    with pytest.raises(InputError, match="level"):
        make_report(campaign, tmp_path, level=95)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="out_dir"):
        make_report(campaign, tmp_path / "file", posterior="summary")


def test_auto_posterior_falls_back_to_stored_summary(campaign, monkeypatch):
    from bayes_s2r.report import beliefs
    from bayes_s2r.report.data import load_report_data

    def broken(*args, **kwargs):
        raise RuntimeError("no sampler today")

    monkeypatch.setattr(beliefs, "_fit_gains", lambda: broken)
    data = load_report_data(campaign)
    src = beliefs.report_belief(data, "auto")
    assert src.note == "refit failed (RuntimeError: no sampler today)"
    assert "round 3, normal approximation" in src.source
    assert src.belief.mean().to_dict() == pytest.approx(
        {"dr_wide": 0.0, "da_obs": 0.01, "ft_real": 0.02}, abs=0.003)
    with pytest.raises(RuntimeError, match="no sampler today"):
        beliefs.report_belief(data, "refit")


# ----------------------------------------------------------------------------- real browser

def _images_in_dom(dom):
    imgs = tags(dom).get("img", [])
    return {i["src"]: i.get("data-loaded") for i in imgs}


def test_browser_loads_every_figure(open_page, report_dir, tmp_path):
    dom = open_page(report_dir / "index.html", tmp_path / "profile", "--dump-dom")
    loaded = _images_in_dom(dom)
    assert sorted(loaded) == sorted(FIGURE_FILES)
    assert all(v == "1" for v in loaded.values()), loaded
    assert 'data-ready="1"' in dom


def test_browser_marks_a_missing_figure_as_broken(open_page, report_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(report_dir, copy)
    (copy / "risk.png").unlink()
    dom = open_page(copy / "index.html", tmp_path / "profile", "--dump-dom")
    loaded = _images_in_dom(dom)
    assert loaded.pop("risk.png") == "0"
    assert all(v == "1" for v in loaded.values()), loaded


def test_browser_screenshot_is_not_blank(open_page, report_dir, tmp_path):
    shot = tmp_path / "page.png"
    open_page(report_dir / "index.html", tmp_path / "profile",
                "--window-size=1200,2400", f"--screenshot={shot}")
    with Image.open(shot) as im:
        assert im.size == (1200, 2400)
        px = np.asarray(im.convert("L"), dtype=float)
    dark = (px < 200).mean()
    assert 0.02 < dark < 0.6, f"share of non-white pixels {dark:.3f}"
    assert px[: px.shape[0] // 2].std() > 20 and px[px.shape[0] // 2:].std() > 20


def test_missing_browser_fails_under_ci_and_skips_otherwise(browser_requirement, monkeypatch):
    monkeypatch.setattr("os.access", lambda *a, **k: False)
    monkeypatch.setattr("shutil.which", lambda *a, **k: None)
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="no Chromium found"):
        browser_requirement()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no Chromium found"):
        browser_requirement()
