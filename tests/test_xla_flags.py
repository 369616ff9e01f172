"""The suite's compile flags are kept only when this XLA knows them (it aborts on others)."""

import importlib.util
from pathlib import Path

# imported by path: each test folder has a module of the same name
_spec = importlib.util.spec_from_file_location("suite_conftest", Path(__file__).with_name("conftest.py"))
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)


def test_a_flag_xla_does_not_know_is_left_out():
    assert not conftest._known_to_xla("--xla_no_such_flag_anywhere=1")
    assert conftest._known_to_xla(conftest.HOST_DEVICES)

