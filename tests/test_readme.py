"""The README is a front door that works: its commands and Python run as written, in a new
shell at the repository root after `make demo`, and what it shows is what they print."""

import contextlib
import io
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)


def _blocks(path: Path) -> list[tuple[str, str]]:
    return BLOCK.findall(path.read_text())


def _exec(code: str, where: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, where, "exec"), {})  # noqa: S102  (the README is ours)
    return out.getvalue()


def test_the_readme_is_short_and_starts_with_the_two_commands():
    text = README.read_text()
    lines = text.splitlines()
    assert len(lines) <= 150 and max(len(line) for line in lines) <= 200
    lang, first = _blocks(README)[0]
    assert lang == "sh" and "make demo" in first and "make test" in first
    for link in re.findall(r"\]\(([^)#\s]+)\)", text):
        assert (ROOT / link).exists(), link


def test_quick_start_prints_what_the_readme_says():
    code = next(c for lang, c in _blocks(README) if lang == "python")
    expected = re.search(r"print\(decision\.best.*#\s*(.+)", code).group(1).strip()
    assert _exec(code, str(README)).splitlines()[0] == expected


def test_results_summary_quotes_the_results_page():
    summary = README.read_text().split("## Results")[1].split("\n## ")[0]
    page = (ROOT / "docs" / "results.md").read_text()
    for number in re.findall(r"\d+(?:\.\d+)?%?", summary.replace("−", "-")):
        if number not in ("12", "100"):  # the settings, spelled in the page's commands
            assert number in page, number


def _shell_env() -> dict:
    """A new shell's environment: the virtual environment is not active."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    venv = str(ROOT / ".venv")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(venv))
    return env


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "activate").exists(), reason="needs the .venv of `make`")
def test_every_block_runs_as_written(tmp_path, monkeypatch):
    # the checkout as a user sees it after `make demo`
    for name in (".venv", "bayes_s2r", "docs"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    prelude, shown, printed = "", None, []
    for i, (lang, code) in enumerate(_blocks(README)):
        where = f"{README} block {i}"
        if lang == "sh" and "make demo" not in code:
            # as in one terminal: what an earlier block activated holds for the later ones
            proc = subprocess.run(["bash", "-e", "-c", prelude + code], cwd=tmp_path, env=_shell_env(),
                                  check=False, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, f"{where}\n{code}\n{proc.stdout}\n{proc.stderr}"
            printed.append(proc.stdout)
            if "source .venv/bin/activate" in code:
                prelude = "source .venv/bin/activate\n"
        elif lang == "python":
            _exec(code, where)
        elif lang == "text":
            shown = code
    # the output shown is the output printed: the choice and the table's columns
    decide_out = next(out for out in printed if "chose " in out)
    shown_lines, real_lines = shown.splitlines(), decide_out.splitlines()
    choice = real_lines.index(next(line for line in real_lines if line.startswith("chose ")))
    assert shown_lines[0].split("(")[0] == real_lines[choice].split("(")[0]
    assert shown_lines[1].split() == real_lines[choice + 1].split()
    # a partial --budget takes the rest from the candidates file; prior and report wrote their files
    decision = json.loads((tmp_path / "decision.json").read_text())
    assert decision["budget"] == {"real": 8.0, "compute": 100.0, "eng": 40.0}
    assert (tmp_path / "prior.json").is_file() and (tmp_path / "my-report" / "index.html").is_file()


def test_the_format_examples_parse(tmp_path):
    from bayes_s2r.evidence.io import load_candidates, read_csv, read_json

    blocks = {lang: code for lang, code in _blocks(ROOT / "docs" / "formats.md")}
    for lang, read in (("csv", read_csv), ("json", read_json)):
        path = tmp_path / f"trials.{lang}"
        path.write_text(blocks[lang])
        assert read(path)[0]
    path = tmp_path / "candidates.toml"
    path.write_text(blocks["toml"])
    assert [c.name for c in load_candidates(path)] == ["dr_wide", "ft_real"]


def test_the_team_prior_example_runs(monkeypatch):
    monkeypatch.chdir(ROOT)
    blocks = [c for lang, c in _blocks(ROOT / "docs" / "decide.md") if lang == "python"]
    code = next(c for c in blocks if "fit_gain_prior" in c)
    printed = _exec(code, "docs/decide.md")
    assert printed.startswith("team gain prior from 15 past effects")
    assert "\nprior predictive check on 15 past effects: " in printed
    for other in blocks:  # the page's other examples run too
        if other is not code:
            _exec(other, "docs/decide.md")
