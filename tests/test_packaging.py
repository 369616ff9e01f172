"""pyproject.toml in the forms current setuptools builds without a warning."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_license_is_an_spdx_string():
    # the table form `{ text = ... }` is deprecated by setuptools 77
    assert isinstance(CONFIG["project"]["license"], str)
    assert any(r.startswith("setuptools>=") and int(r.split(">=")[1].split(".")[0]) >= 77
               for r in CONFIG["build-system"]["requires"])


def test_every_folder_with_data_files_is_a_listed_package():
    setup = CONFIG["tool"]["setuptools"]
    packages = set(setup["packages"])
    data = setup["package-data"]
    for folder in (ROOT / "bayes_s2r").rglob("*"):
        if not folder.is_dir() or folder.name == "__pycache__":
            continue
        files = [f for f in folder.iterdir() if f.is_file() and f.suffix not in (".py", ".pyc")]
        if files:
            name = ".".join(folder.relative_to(ROOT).parts)
            assert name in packages and name in data, name
    assert set(data) <= packages
