"""Test-wide set-up. XLA flags must be set before jax is first imported."""

import os
import subprocess
import sys
from pathlib import Path

# Four host devices: lets parallel MCMC chains and the sharding tests run on a CPU.
HOST_DEVICES = "--xla_force_host_platform_device_count=4"
# The suite spends most of its time in XLA's CPU compiler. The library compiles its own programs
# with LLVM at level 1 and XLA's loop emitters (`bayes_s2r.compiling`); these flags do the same
# for every other program (eager operations, Brax's PPO, the subprocess tests). With them for
# all programs the compile-heavy tests took 158 s instead of 247 s, none ran slower; level 0
# halves compiles but slows the physics tests twofold. XLA aborts on a flag it does not know
# (newer releases drop the emitters' switch), so each is kept only if a bare XLA starts with it.
FAST_COMPILE = ("--xla_backend_optimization_level=1", "--xla_cpu_use_fusion_emitters=false")


def _known_to_xla(flag: str) -> bool:
    env = {**os.environ, "XLA_FLAGS": flag}
    try:
        probe = subprocess.run([sys.executable, "-c", "import jax; jax.devices()"], env=env, capture_output=True,
                               check=False, timeout=120)
    except subprocess.TimeoutExpired:  # a flag is an option: without it the suite is only slower
        return False
    return probe.returncode == 0


# Set once, in the first process; xdist workers and the subprocesses of the notebook, README
# and CLI tests inherit it. A user's own XLA_FLAGS is kept as given.
if "XLA_FLAGS" not in os.environ:
    os.environ["XLA_FLAGS"] = " ".join([HOST_DEVICES, *(f for f in FAST_COMPILE if _known_to_xla(f))])
os.environ.setdefault("MPLBACKEND", "Agg")

# Benchmark scripts import their shared `common` module as a sibling, as they do when run.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
