"""What every benchmark shares: the machine it ran on and how its JSON is written.

Each script prints one JSON object {"benchmark": NAME, "machine": {...}, "settings": {...},
"results": [...]} and also writes it to a file with `--out`.
"""

from __future__ import annotations

import json
import os
import platform


def machine() -> dict:
    """Cores, JAX backend and devices, library versions and load: what a reader needs to compare."""
    import importlib.metadata as md

    import jax

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count()
    versions = {}
    for name in ("jax", "jaxlib", "numpyro", "brax", "mujoco", "optax", "arviz", "numpy"):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return {"cores": cores, "cpu_count": os.cpu_count(), "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.devices()], "python": platform.python_version(),
            "platform": platform.platform(), "versions": versions, "load_avg": list(os.getloadavg())}


def emit(result: dict, out: str | None) -> dict:
    """Print the result as JSON and, when `out` is given, write the same text to that file."""
    text = json.dumps(result, indent=2)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    return result
