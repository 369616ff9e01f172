"""Time to answer: `bayes-s2r decide` on the example ledger, each run in a new process.

Each repeat imports the example trials (`bayes_s2r/examples/ledger.csv`) into a new ledger and
gives the command an empty compile cache folder (BAYES_S2R_COMPILE_CACHE), then runs, as a
user's shell does (`python -m bayes_s2r decide ...`, timed from start to exit):

- cold: the first `decide`: nothing compiled, no fit stored in the ledger;
- warm: the same command again: compiled functions read from the cache, the fit reused
  from the ledger (the evidence has not changed);
- warm_refit: again with `--refit`: the compile cache alone, the posterior sampled again.

The medians over `--repeats` are reported, with the children's CPU time (on a loaded machine
the wall time also counts the waits for a core) and the 1-minute load average before each run.
Targets: cold under 10 s, warm under 3 s. For reference, `import_floor` times a new process
that only imports what `decide` imports (no ledger, no fit, no look-ahead): the part of a
warm run that is start-up.

    python benchmarks/bench_cli_decide.py [--repeats 3] [--out FILE] [-- DECIDE OPTIONS]

Prints one JSON object {"benchmark": "cli_decide", "machine", "settings", "results"}.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

import common

CASES = ("cold", "warm", "warm_refit")
TARGETS_S = {"cold": 10.0, "warm": 3.0}


#: What `decide` imports before it reads anything (see `import_floor` above).
IMPORTS = ("import bayes_s2r.cli, bayes_s2r.cli_decide, bayes_s2r.evidence.io, bayes_s2r.evidence.ledger, "
           "bayes_s2r.belief, bayes_s2r.decision, bayes_s2r.report.columns")


def _timed(cmd: list[str], env: dict) -> tuple[float, float, float, subprocess.CompletedProcess]:
    """(wall s, CPU s, load before, the finished process) of one new process."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[1:4]} exited with {out.returncode}: {out.stderr.strip()[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), load, out


def run(args: list[str], cache: Path) -> tuple[float, float, dict, float]:
    """Run `python -m bayes_s2r decide ... --json` once; (wall s, CPU s, its JSON answer, load)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env["BAYES_S2R_COMPILE_CACHE"] = str(cache)
    wall, cpu, load, out = _timed([sys.executable, "-m", "bayes_s2r", "decide", *args, "--json"], env)
    return wall, cpu, json.loads(out.stdout), load


def import_floor() -> tuple[float, float, dict, float]:
    """A new process that imports what `decide` imports and exits."""
    wall, cpu, load, _ = _timed([sys.executable, "-c", IMPORTS], dict(os.environ))
    return wall, cpu, {}, load


def one_repeat(folder: Path, extra: list[str]) -> dict[str, tuple[float, float, dict]]:
    """The three cases on a new ledger with an empty compile cache."""
    from bayes_s2r.evidence.ledger import Ledger

    examples = resources.files("bayes_s2r") / "examples"
    ledger = folder / "evidence.sqlite"
    with Ledger(ledger) as led:
        led.import_csv(str(examples / "ledger.csv"))
    args = ["--ledger", str(ledger), "--candidates", str(examples / "candidates.toml"), *extra]
    cache = folder / "jax-cache"
    cold = run(args, cache)
    warm = run(args, cache)
    refit = run([*args, "--refit"], cache)
    return {"cold": cold, "warm": warm, "warm_refit": refit, "import_floor": import_floor()}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=None)
    p.add_argument("decide_args", nargs="*", help="more `decide` options, after `--`")
    args = p.parse_args(argv)
    load_before = list(os.getloadavg())
    runs: dict[str, list] = {k: [] for k in (*CASES, "import_floor")}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            for case, value in one_repeat(Path(tmp), args.decide_args).items():
                runs[case].append(value)
    results = []
    for case in CASES:
        answers = runs[case]
        results.append({
            "case": case, **_medians(answers), "target_s": TARGETS_S.get(case),
            "fit_reused": [r[2].get("fit_reused") for r in answers], "best": answers[-1][2]["best"],
        })
    # the reused fit must answer what the fresh one did
    same = all(a[2]["table"] == b[2]["table"] for a, b in zip(runs["cold"], runs["warm"]))
    return common.emit({"benchmark": "cli_decide", "machine": common.machine(),
                        "settings": {"repeats": args.repeats, "decide_args": args.decide_args,
                                     "same_decision_warm_as_cold": same, "load_avg_before": load_before,
                                     "ml_dtypes": _version("ml_dtypes"),
                                     "import_floor": {"imports": IMPORTS, **_medians(runs["import_floor"])}},
                        "results": results}, args.out)


def _medians(runs: list) -> dict:
    walls = [r[0] for r in runs]
    return {"median_s": statistics.median(walls), "runs_s": [round(w, 3) for w in walls],
            "median_cpu_s": statistics.median(r[1] for r in runs),
            "runs_cpu_s": [round(r[1], 3) for r in runs], "load_1min": [round(r[3], 2) for r in runs]}


def _version(name: str) -> str | None:
    import importlib.metadata as md

    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
