"""How long the command line takes to report a typo: a malformed candidates TOML, an unknown
role in it, a bad --budget, an unknown --utility, and a plain `--help` for reference.

Each case runs the command in a new process (`python -m bayes_s2r ...`), as a user's shell
does, and is timed from start to exit; the median of `--repeats` runs is reported with the
exit code (2 for bad input) and the first line of stderr. Target: under 1 s each.

    python benchmarks/bench_cli_errors.py [--repeats 3] [--out FILE]

Prints one JSON object {"benchmark": "cli_errors", "machine", "settings", "results"}.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

import common


def cases(folder: Path) -> dict[str, list[str]]:
    example = str(resources.files("bayes_s2r") / "examples" / "candidates.toml")
    bad = folder / "bad.toml"
    bad.write_text("[budget\nreal = 1\n")
    role = folder / "role.toml"
    role.write_text(Path(example).read_text().replace('role = "adaptation"', 'role = "adapt"', 1))
    ledger = str(folder / "evidence.sqlite")
    return {
        "help": ["--help"],
        "bad_toml": ["decide", "--ledger", ledger, "--candidates", str(bad)],
        "bad_role": ["decide", "--ledger", ledger, "--candidates", str(role)],
        "bad_budget": ["decide", "--ledger", ledger, "--candidates", example, "--budget", "real=8,gpu=1"],
        "bad_utility": ["decide", "--ledger", ledger, "--candidates", example, "--utility", "maximum"],
    }


def run(args: list[str]) -> tuple[float, int, str]:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "bayes_s2r", *args], check=False, capture_output=True,
                         text=True, timeout=300)
    wall = time.perf_counter() - started
    return wall, out.returncode, (out.stderr.strip().splitlines() or [""])[0]


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in cases(Path(tmp)).items():
            runs = [run(cmd) for _ in range(args.repeats)]
            results.append({"case": name, "median_s": statistics.median(r[0] for r in runs),
                            "runs_s": [round(r[0], 3) for r in runs], "exit_code": runs[-1][1],
                            "stderr": runs[-1][2]})
    return common.emit({"benchmark": "cli_errors", "machine": common.machine(),
                        "settings": {"repeats": args.repeats}, "results": results}, args.out)


if __name__ == "__main__":
    main()
