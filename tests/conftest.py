"""Test-wide set-up. XLA flags must be set before jax is first imported."""

import os

# Four host devices: lets parallel MCMC chains and the sharding tests run on a CPU.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
os.environ.setdefault("MPLBACKEND", "Agg")

import sys
from pathlib import Path

# Benchmark scripts import their shared `common` module as a sibling, as they do when run.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
