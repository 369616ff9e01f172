"""The command line keeps JAX's compiled functions between runs unless told otherwise."""

from pathlib import Path

from bayes_s2r.cli import use_compile_cache


def test_default_folder_under_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    env = {}
    assert use_compile_cache(env) == str(tmp_path / ".cache" / "bayes_s2r" / "jax")
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / ".cache" / "bayes_s2r" / "jax")
    assert float(env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]) < 1.0  # small programs too


def test_users_own_cache_setting_wins_and_off_turns_it_off(tmp_path):
    mine = {"JAX_COMPILATION_CACHE_DIR": "/somewhere"}
    assert use_compile_cache(mine) == "/somewhere" and mine == {"JAX_COMPILATION_CACHE_DIR": "/somewhere"}
    off = {"BAYES_S2R_COMPILE_CACHE": "off"}
    assert use_compile_cache(off) is None and "JAX_COMPILATION_CACHE_DIR" not in off
    folder = {"BAYES_S2R_COMPILE_CACHE": str(tmp_path)}
    assert use_compile_cache(folder) == str(tmp_path) == folder["JAX_COMPILATION_CACHE_DIR"]


def test_the_users_cache_home_is_followed(monkeypatch, tmp_path):
    monkeypatch.setattr(Path, "home", lambda: tmp_path / "home")
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert use_compile_cache(env) == str(tmp_path / "xdg" / "bayes_s2r" / "jax")
    relative = {"XDG_CACHE_HOME": "not/absolute"}  # the XDG rule: a relative path is ignored
    assert use_compile_cache(relative) == str(tmp_path / "home" / ".cache" / "bayes_s2r" / "jax")


def test_the_root_help_names_the_setting():
    from typer.testing import CliRunner

    from bayes_s2r.cli import app

    out = CliRunner().invoke(app, ["--help"], terminal_width=200)
    assert out.exit_code == 0 and "BAYES_S2R_COMPILE_CACHE" in out.output
