"""`from bayes_s2r import sim` prints nothing, and Brax's maintenance notice stays quiet after it."""

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          check=True)


def test_import_prints_nothing():
    out = _run("from bayes_s2r import sim")
    assert out.stdout == "" and out.stderr == ""


def test_loading_a_brax_model_after_import_prints_nothing_but_other_warnings_still_show():
    out = _run(
        "from bayes_s2r import sim\n"
        "import warnings, brax.envs\n"
        "brax.envs.get_environment('inverted_pendulum', backend='mjx')\n"
        "warnings.warn('a warning of the user')\n"
    )
    assert out.stdout == ""
    assert "not actively being maintained" not in out.stderr
    assert "a warning of the user" in out.stderr
