"""Shared fixtures for the decision tests: small problems, and numerical tests run both jitted
and under `jax.disable_jit`. An eager `decide` costs seconds of per-operation compiles, so
behaviour tests that only repeat a path already compared jitted-and-not (the look-ahead
against its reference, the rollout, the two-step look-ahead) run jitted only."""

import contextlib
import importlib.util
import pathlib

import jax
import pytest

import bayes_s2r as bs

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(params=["jit", "nojit"])
def jit_mode(request):
    """Run the body jitted and with jax.disable_jit()."""
    ctx = jax.disable_jit() if request.param == "nojit" else contextlib.nullcontext()
    with ctx:
        yield request.param


@pytest.fixture(scope="session")
def bench_module():
    """benchmarks/bench_decide.py, imported by path (its reference is the independent check)."""
    spec = importlib.util.spec_from_file_location("bench_decide", ROOT / "benchmarks" / "bench_decide.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def toy():
    """The article's toy: three adaptations, λ = (3, 0.1, 1)."""
    names = ["si_refit", "dr_wide", "ft_real"]
    belief = bs.GainBelief.from_gaussian(names, [0.06, 0.12, 0.03], [0.01, 0.01, 0.01], num_draws=2000)
    cands = [
        bs.Candidate("si_refit", "adaptation", "model", cost=bs.Cost(compute=0.1)),  # C = 0.01
        bs.Candidate("dr_wide", "adaptation", "data", cost=bs.Cost(compute=0.5)),  # C = 0.05
        bs.Candidate("ft_real", "adaptation", "optimization", cost=bs.Cost(real=0.02)),  # C = 0.06
    ]
    return belief, cands, bs.Budget(real=5, compute=50, eng=20), bs.ResourceWeights(3.0, 0.1, 1.0)
