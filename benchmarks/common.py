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


def gap_closed(q: dict, pool: list[dict], oracle: dict | None, digits: int | None = 3) -> float | None:
    """Share of the gap from the best strategy in `pool` to `oracle` that q closes, rounded to
    `digits` (None: not rounded); None when there is no pool, no oracle, or the oracle is not
    above the pool's best."""
    if not pool or oracle is None:
        return None
    best = max(r["final_J_mean"] for r in pool)
    denom = oracle["final_J_mean"] - best
    if denom < 0.01:
        return None
    share = (q["final_J_mean"] - best) / denom
    return share if digits is None else round(share, digits)
