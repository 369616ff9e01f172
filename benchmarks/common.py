"""What every benchmark shares: the machine it ran on, how its JSON is written, and the
paired statistics the allocation tables are read with.

Each script prints one JSON object {"benchmark": NAME, "machine": {...}, "settings": {...},
"results": [...]} and also writes it to a file with `--out`.
"""

from __future__ import annotations

import json
import math
import os
import platform

import numpy as np


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


def t_interval(d: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The `level` t-interval of the mean of `d` (a point when d has one value or no spread)."""
    from scipy import stats

    if d.size < 2 or np.allclose(d, d[0]):
        return float(d.mean()), float(d.mean())
    half = stats.t.ppf(0.5 + level / 2, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    return float(d.mean() - half), float(d.mean() + half)


def over_worlds(rows: list[dict]) -> dict:
    """Per strategy, the mean over the worlds of each seed's final J (and net utility), and
    the 95% paired interval over seeds of its difference to q_cvu's: a seed's campaigns in
    the different worlds are independent, so the world means are independent over seeds."""
    worlds = list(dict.fromkeys(r["world"] for r in rows))
    by = {(r["world"], r["strategy"]): r for r in rows}
    def world_mean(s, field):
        return np.mean([by[w, s][field] for w in worlds], axis=0)

    ref, net_ref = world_mean("q_cvu", "final_J_by_seed"), world_mean("q_cvu", "net_utility_by_seed")
    out = {}
    for s in dict.fromkeys(r["strategy"] for r in rows):
        if not all((w, s) in by for w in worlds):
            continue
        J, net = world_mean(s, "final_J_by_seed"), world_mean(s, "net_utility_by_seed")
        lo, hi = t_interval(J - ref)
        nlo, nhi = t_interval(net - net_ref)
        out[s] = {"final_J_mean": round(float(J.mean()), 4), "final_J_ci_low": round(lo, 4),
                  "final_J_ci_high": round(hi, 4), "net_utility_mean": round(float(net.mean()), 4),
                  "net_utility_ci_low": round(nlo, 4), "net_utility_ci_high": round(nhi, 4),
                  "safety_violations": round(float(sum(by[w, s]["safety_violations"] for w in worlds)), 3)}
    return out
