"""The fits' XLA options: only those the installed XLA accepts are passed."""

from types import MappingProxyType

import jax
import pytest

from bayes_s2r.belief import compiled


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
