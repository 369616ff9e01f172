"""The README's Results section is generated from the benchmark JSON files and matches them."""

import json
from pathlib import Path

import summarize

ROOT = Path(__file__).resolve().parent.parent


def test_summary_reports_the_measured_numbers(tmp_path):
    # a results folder holding only the decision benchmark: the section shows exactly that file
    row = {"case": "main", "candidates": 32, "draws": 4000, "outcomes": 256, "cvu_s": 0.0684,
           "speedup_vs_reference": 36.9, "cvu_over_floor": 3.1, "decide_warm_s": 0.0709, "compile_s": 3.35}
    data = {"benchmark": "decide", "machine": {"cores": 2, "backend": "cpu", "load_avg": [0.5, 0, 0]},
            "settings": {}, "results": [row]}
    (tmp_path / "decide.json").write_text(json.dumps(data))
    text = summarize.summarize(tmp_path)
    assert "### Decision engine" in text and "### Fitting" not in text
    assert "| 32 × 4000 × 256 | 68 ms | 37× faster | 3.1× | 71 ms | 3.4 s |" in text
    assert "load average 0.5" in text


def test_readme_results_section_is_the_generated_one():
    readme = (ROOT / "README.md").read_text()
    section = summarize.RESULTS_SECTION.search(readme).group(0)
    assert section.strip() == summarize.summarize(ROOT / "benchmarks" / "results").strip()
