"""The README's quick-start code runs and prints what its comment says."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_quick_start_prints_what_the_readme_says():
    code = re.search(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL).group(1)
    expected = re.search(r"print\(decision\.best.*#\s*(.+)", code).group(1).strip()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})  # noqa: S102  (the README is ours)
    assert out.getvalue().splitlines()[0] == expected
