"""The library's XLA options on a CPU: only those the installed XLA accepts are passed, and the
programs that compile with them."""

import importlib
from types import MappingProxyType

import jax
import pytest

from bayes_s2r import compiling as compiled


def test_an_option_this_xla_rejects_is_left_out(monkeypatch):
    class Lowered:
        def compile(self, compiler_options):
            if "xla_cpu_use_fusion_emitters" in compiler_options:  # what jax 0.11 answers
                raise jax.errors.JaxRuntimeError("INVALID_ARGUMENT: No such compile option")
            return self

    class Jitted:
        def lower(self, *args):
            return Lowered()

    monkeypatch.setattr(compiled.jax, "jit", lambda fn: Jitted())
    compiled._accepted_cpu_options.cache_clear()
    try:
        accepted = compiled._accepted_cpu_options()
    finally:
        compiled._accepted_cpu_options.cache_clear()
    assert dict(accepted) == {"xla_backend_optimization_level": 1}


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the options apply on a CPU only")
def test_the_accepted_options_compile():
    options = compiled.compiler_options()
    assert set(options) <= set(compiled._CPU_COMPILER_OPTIONS)
    assert jax.jit(lambda x: x * 2).lower(1.0).compile(compiler_options=options)(3.0) == 6.0
    assert isinstance(compiled._accepted_cpu_options(), MappingProxyType)


def test_a_lazy_jit_compiles_with_the_options_built_at_its_first_call(monkeypatch):
    options = compiled.compiler_options()  # its probe compiles before jax.jit is watched
    seen, jit = [], compiled.jax.jit
    monkeypatch.setattr(compiled.jax, "jit", lambda fn, **kw: seen.append(kw) or jit(fn, **kw))
    times = compiled.LazyJit(lambda x, n: x * n, static_argnames=("n",))
    assert seen == []  # nothing built when defined: the backend may not have started yet
    assert float(times(2.0, n=3)) == 6.0 and float(times(1.0, n=3)) == 3.0
    assert seen == [{"compiler_options": options, "static_argnames": ("n",)}]
    assert times._cache_size() == 1  # the jitted function's own attributes


def test_a_lazy_jit_runs_inside_other_transformations():
    """Only a top-level jit takes compiler options: inside jit, grad, scan or vmap the same
    function runs through a plain jit, with the same values."""
    square = compiled.LazyJit(lambda x, n: x**n, static_argnames=("n",))
    x = jax.numpy.float32(3.0)
    assert float(jax.jit(lambda y: square(y, n=2))(x)) == 9.0
    assert float(jax.grad(lambda y: square(y, n=2))(x)) == 6.0
    total, _ = jax.lax.scan(lambda c, y: (c + square(y, n=2), None), 0.0, jax.numpy.arange(3.0))
    assert float(total) == 5.0
    assert jax.vmap(lambda y: square(y, n=2))(jax.numpy.arange(3.0)).tolist() == [0.0, 1.0, 4.0]
    assert float(square(x, n=2)) == 9.0 and square._cache_size() == 1


def test_the_look_ahead_and_episode_programs_compile_with_the_options():
    from bayes_s2r.decision import lookahead, rollout
    # the testbed's package exports functions named like some of its modules
    replay, sysid_task, task, train, episodes = (importlib.import_module(f"bayes_s2r.sim.{m}") for m in
                                                 ("replay", "sysid_task", "task", "train", "rollout"))

    programs = (lookahead.draw_outcomes, lookahead._lookahead_jit, lookahead._two_step_jit, rollout._rollout_jit,
                task._chunk_fn, episodes._chunk_fn, sysid_task._residuals, replay.residuals, replay.sse_population,
                train._perturb, train._update)
    assert all(isinstance(p, compiled.LazyJit) for p in programs)
