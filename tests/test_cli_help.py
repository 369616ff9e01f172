"""Every `--help` of the command line prints its help texts as written, brackets included."""

import re
import subprocess
import sys

import typer
from typer.testing import CliRunner

from bayes_s2r.cli import app, main  # noqa: F401  (main registers every command)


def _commands():
    import bayes_s2r.cli_campaign
    import bayes_s2r.cli_decide  # noqa: F401

    root = typer.main.get_command(app)
    todo = [((), root)]
    while todo:
        path, cmd = todo.pop()
        yield path, cmd
        if hasattr(cmd, "commands"):  # a group
            todo += [((*path, name), sub) for name, sub in cmd.commands.items()]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_help_keeps_its_bracketed_text():
    runner = CliRunner()
    seen = 0
    for path, cmd in _commands():
        out = runner.invoke(app, [*path, "--help"], terminal_width=100)
        assert out.exit_code == 0, (path, out.output)
        shown = _flat(out.output)
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        for text in texts:
            for piece in re.findall(r"\[[^\]]*\]", text):
                seen += 1
                assert _flat(piece) in shown, (path, piece)
    assert seen >= 3  # the decide options name [budget], [weights] and E[max(gain, 0)]


def test_python_dash_m_runs_the_command_line():
    out = subprocess.run([sys.executable, "-m", "bayes_s2r", "--help"], check=False,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "decide" in out.stdout and "ledger" in out.stdout
