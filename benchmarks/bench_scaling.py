"""Throughput against the number of devices: sharded DR rollouts and the sharded look-ahead.

Each device count runs in its own process, because the number of CPU devices is fixed when
JAX starts (`XLA_FLAGS=--xla_force_host_platform_device_count=N`). Every row reports warm
env-steps per second of `sharded_rollout_dr`, the warm time of `sharded_lookahead`, their
compile times, and the largest absolute difference of the results (episode scores and CVU)
from the one-device run of the same backend. When a GPU is visible (`--gpu auto`), rows for
1, 2, 4, ... GPUs follow.

    python benchmarks/bench_scaling.py --devices 1,2,4 --out scaling.json

Prints one JSON object {"benchmark": "scaling", "machine", "settings", "results", "notes"}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata

FORCE = "--xla_force_host_platform_device_count"


def _parse_devices(text: str) -> list[int]:
    try:
        counts = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise SystemExit(f"--devices={text!r}: expected whole numbers separated by commas") from None
    if not counts or counts[0] < 1:
        raise SystemExit(f"--devices={text!r}: expected whole numbers >= 1")
    return sorted({1, *counts})  # the one-device run is the reference


def _args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--devices", default="1,2,4", help="CPU device counts (1 is always included)")
    p.add_argument("--envs", type=int, default=256, help="environments (episodes) per rollout call")
    p.add_argument("--horizon", type=int, default=100, help="control steps per episode")
    p.add_argument("--repeats", type=int, default=3, help="timed calls after the compiling one")
    p.add_argument("--draws", type=int, default=4000, help="posterior draws in the look-ahead")
    p.add_argument("--candidates", type=int, default=16, help="candidates in the look-ahead")
    p.add_argument("--outcomes", type=int, default=256, help="simulated outcomes per candidate")
    p.add_argument("--gpu", choices=("auto", "off"), default="auto", help="also run GPU rows if any")
    p.add_argument("--timeout", type=int, default=1800, help="seconds allowed per device count")
    p.add_argument("--jobs", type=int, default=1,
                   help="device counts run at once (> 1 distorts the timings: for smoke runs)")
    p.add_argument("--out", default=None, help="also write the JSON to this file")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)  # "cpu:N" or "gpu:N"
    args = p.parse_args(argv)
    for name in ("envs", "horizon", "repeats", "draws", "candidates", "outcomes", "timeout", "jobs"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name}={getattr(args, name)}: expected a whole number >= 1")
    return args


# ----------------------------------------------------------------------------- one device count

def _timed(fn, repeats: int):
    """(first call's seconds incl. compile, median of `repeats` further calls, first output)."""
    import jax

    t = time.perf_counter()
    first = jax.block_until_ready(fn(0))
    compile_s = time.perf_counter() - t
    times = []
    for r in range(1, repeats + 1):
        t = time.perf_counter()
        jax.block_until_ready(fn(r))
        times.append(time.perf_counter() - t)
    return compile_s, statistics.median(times), first


def _lookahead_problem(args):
    import numpy as np

    import bayes_s2r as bs
    from bayes_s2r.decision.config import DecideConfig
    from bayes_s2r.decision.problem import build_problem

    m = args.candidates
    names = [f"a{i}" for i in range(m)]
    belief = bs.GainBelief.from_gaussian(names, np.linspace(0.01, 0.08, m), [0.03] * m,
                                         num_draws=args.draws, seed=1)
    cands = [bs.Candidate(n, "adaptation", "data", cost=bs.Cost(compute=0.05 * (i + 1)),
                          outcome=bs.BinomialPairedOutcome(episodes=50)) for i, n in enumerate(names)]
    cands.append(bs.Candidate("probe", "diagnosis", "data", cost=bs.Cost(eng=0.01), observes=names[-1],
                              outcome=bs.GaussianOutcome(noise_sd=0.02)))
    config = DecideConfig.make(cvu_samples=args.outcomes, seed=0, allow_bad_belief=True)
    problem = build_problem(belief, cands, bs.Budget(2, 20, 20), bs.ResourceWeights(), risk=None,
                            config=config, reference=None, current_J=None, done=())
    return problem, config


def _child(args) -> dict:
    backend, devices = args.child.split(":")
    devices = int(devices)
    from bayes_s2r.distributed import configure_host_devices

    if backend == "cpu":
        configure_host_devices(devices)
    import jax
    import jax.numpy as jnp
    import numpy as np

    from bayes_s2r.decision.sharded import draw_mesh, sharded_lookahead
    from bayes_s2r.distributed import gather
    from bayes_s2r.sim.params import DRSpec
    from bayes_s2r.sim.rollout import LinearPolicy
    from bayes_s2r.sim.sharded import sharded_rollout_dr
    from bayes_s2r.sim.world import Protocol, make_world

    devs = jax.devices(backend)[:devices]
    if len(devs) < devices:
        raise SystemExit(f"{backend}: {len(devs)} devices < {devices}")
    world = make_world(protocol=Protocol(horizon=args.horizon))
    policy = LinearPolicy(jnp.array([0.3, 2.0, 0.3, 0.4], jnp.float32), jnp.array(0.0, jnp.float32))
    spec = DRSpec.from_levels({"mass": 1.0, "damping": 1.0, "gear": 1.0, "latency": 1.0, "obs_noise": 1.0})

    def rollouts(r):
        return sharded_rollout_dr(jax.random.key(r), world, policy, spec, args.envs, devices=devs)[0]

    r_compile, r_warm, stats = _timed(rollouts, args.repeats)
    problem, config = _lookahead_problem(args)

    def look(r):
        return sharded_lookahead(problem, config._replace(seed=r), devices=devs).cvu

    l_compile, l_warm, cvu = _timed(look, args.repeats)
    return {
        "backend": backend, "devices": devices, "device_kind": devs[0].device_kind,
        "lookahead_devices": draw_mesh(args.draws, devs).size,
        "steps_per_s": args.envs * args.horizon / r_warm, "rollout_s": r_warm,
        "rollout_compile_s": r_compile, "lookahead_s": l_warm, "lookahead_compile_s": l_compile,
        "_score": np.asarray(gather(stats.score), np.float64).tolist(),
        "_cvu": np.asarray(cvu, np.float64).tolist(),
    }


# ----------------------------------------------------------------------------- driver

def _run_child(args, backend: str, devices: int) -> dict:
    env = dict(os.environ)
    flags = " ".join(f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(FORCE))
    if backend == "cpu":
        env["XLA_FLAGS"] = f"{flags} {FORCE}={devices}".strip()
        env["JAX_PLATFORMS"] = "cpu"
    else:
        env["XLA_FLAGS"] = flags
        env.pop("JAX_PLATFORMS", None)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", f"{backend}:{devices}"]
    for name in ("envs", "horizon", "repeats", "draws", "candidates", "outcomes"):
        cmd += [f"--{name}", str(getattr(args, name))]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"backend": backend, "devices": devices, "error": f"timed out after {args.timeout} s"}
    if done.returncode != 0:
        return {"backend": backend, "devices": devices, "error": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _gpu_count(timeout: int) -> int:
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    code = "import jax\ntry:\n print(len(jax.devices('gpu')))\nexcept RuntimeError:\n print(0)"
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             timeout=timeout, check=False)
        return int(out.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return 0


def _compare(rows: list[dict]) -> None:
    import numpy as np

    reference = {r["backend"]: r for r in rows if r.get("devices") == 1 and "error" not in r}
    for r in rows:
        ref = reference.get(r["backend"])
        if "error" in r or ref is None:
            continue
        d_roll = float(np.max(np.abs(np.subtract(r["_score"], ref["_score"]))))
        d_look = float(np.max(np.abs(np.subtract(r["_cvu"], ref["_cvu"]))))
        r.update(rollout_max_abs_diff=d_roll, lookahead_max_abs_diff=d_look,
                 max_abs_diff_vs_single=max(d_roll, d_look),
                 rollout_speedup=r["steps_per_s"] / ref["steps_per_s"],
                 lookahead_speedup=ref["lookahead_s"] / r["lookahead_s"])
    for r in rows:
        r.pop("_score", None)
        r.pop("_cvu", None)


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for pkg in ("jax", "jaxlib", "numpyro", "brax", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def main(argv=None) -> dict | None:
    args = _args(argv)
    if args.child:
        print(json.dumps(_child(args)))
        return None
    counts = _parse_devices(args.devices)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(lambda d: _run_child(args, "cpu", d), counts))
    gpus = _gpu_count(min(args.timeout, 300)) if args.gpu == "auto" else 0
    d = 1
    while gpus and d <= gpus:
        rows.append(_run_child(args, "gpu", d))
        d *= 2
    _compare(rows)
    result = {
        "benchmark": "scaling",
        "machine": {"cores": os.cpu_count(), "backend": "gpu" if gpus else "cpu", "gpus": gpus,
                    "platform": platform.platform(), "versions": _versions()},
        "settings": {"devices": counts, "envs": args.envs, "horizon": args.horizon,
                     "repeats": args.repeats, "draws": args.draws, "candidates": args.candidates,
                     "outcomes": args.outcomes, "jobs": args.jobs, "rollout": "sharded_rollout_dr, generalized pipeline",
                     "timing": "median of the warm calls; *_compile_s is the first call"},
        "results": rows,
        "notes": [
            (f"Forced host devices share this machine's {os.cpu_count()} cores: a CPU row with more "
             "devices than cores shows no speed-up, and XLA's own CPU threads already use the cores "
             "with one device. The CPU rows check that sharding is correct and cheap, not fast."),
            ("max_abs_diff_vs_single: rollouts must match the one-device run exactly (same key, same "
             "episodes); the look-ahead may differ by the order of floating-point sums over draws."),
            ("On one device simulate_batch runs chunks of 256 episodes; on d > 1 devices the batch "
             "runs as one call of d x (next power of two >= envs/d) episodes (chunk_for)."),
        ],
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return result


if __name__ == "__main__":
    main()
