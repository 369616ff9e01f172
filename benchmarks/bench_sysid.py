"""Calibration of system identification: do its 90% intervals cover the truth 90% of the time?

For each task and repetition: draw a hidden truth (mass, damping and gear scales log-uniform
in exp(±spread), latency uniform in {0, 1}, sensor noise `--noise`), collect `--episodes`
excited episodes from it with the task's policy, identify, and check whether the central
`--level` interval of each scale contains the truth. Every covariance estimator of
`bayes_s2r.sim.sysid.COVARIANCES` is scored on the same fits. Prints one JSON object
{"benchmark": "sysid", "machine", "settings", "command", "results": [one row per task]} with,
per estimator and parameter, the coverage, its exact 95% binomial (Clopper-Pearson) interval
and the median relative interval width; plus the latency's hit rate and the median wall time.

    python benchmarks/bench_sysid.py                                   # smoke size
    python benchmarks/bench_sysid.py --reps 100 --out benchmarks/results/sysid.json
"""

from __future__ import annotations

import argparse
import sys
import time

import common
import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps

TASKS = ("inverted_pendulum", "reacher")


def _task(sim, env: str, horizon: int | None, backend: str = "generalized"):
    """(sim world, the policy that collects the data) of a task."""
    protocol = sim.Protocol(horizon=horizon or (200 if env == "inverted_pendulum" else 100))
    world = sim.make_world(env, protocol=protocol, backend=backend)
    if env == "inverted_pendulum":
        return world, sim.nominal_policy()
    kp, kd = 0.5, 0.1  # a proportional-derivative controller toward the target pose
    return world, sim.LinearPolicy(jnp.array([[-kp, 0.0, -kd, 0.0], [0.0, -kp, 0.0, -kd]]), jnp.zeros(2))


def _clopper_pearson(hits: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    a = (1 - conf) / 2
    low = 0.0 if hits == 0 else float(sps.beta.ppf(a, hits, n - hits + 1))
    high = 1.0 if hits == n else float(sps.beta.ppf(1 - a, hits + 1, n - hits))
    return low, high


def run_task(env: str, reps: int, episodes: int, noise: float, spread: float, excitation: float,
             level: float, seed: int, horizon: int | None = None, iterations: int = 30,
             backend: str = "generalized") -> dict:
    from bayes_s2r import sim
    from bayes_s2r.sim.sysid import COVARIANCES, FITTED, SIConfig, identify

    world, policy = _task(sim, env, horizon, backend)
    config = SIConfig(iterations=iterations, latencies=(0, 1, 2))
    covered = {c: {f: [] for f in FITTED} for c in COVARIANCES}
    width = {c: {f: [] for f in FITTED} for c in COVARIANCES}
    errors = {f: [] for f in FITTED}
    lat_hit, walls, key = [], [], jax.random.key(seed)
    for _ in range(reps):
        key, k_truth, k_lat, k_data, k_id = jax.random.split(key, 5)
        scales = np.exp(np.asarray(jax.random.uniform(k_truth, (3,), minval=-spread, maxval=spread)))
        truth = world.params._replace(**{f: float(v) for f, v in zip(FITTED, scales)},
                                      latency=float(jax.random.randint(k_lat, (), 0, 2)), obs_noise=noise)
        robot = sim.RealRobot(sim.World(name="hidden", env=env, params=truth, protocol=world.protocol, kind="real",
                                        backend=backend))
        data = robot.collect(k_data, policy, episodes, excitation=excitation)
        start = time.perf_counter()
        r = identify(k_id, world, data, policy, config)
        walls.append(time.perf_counter() - start)
        lat_hit.append(r.mean["latency"] == truth.latency)
        for f in FITTED:
            errors[f].append(np.log(r.mean[f] / getattr(truth, f)))
        for c in COVARIANCES:
            for f, (lo, hi) in r.interval(level, covariance=c).items():
                covered[c][f].append(lo <= getattr(truth, f) <= hi)
                width[c][f].append((hi - lo) / getattr(truth, f))
    coverage = {}
    for c in COVARIANCES:
        coverage[c] = {}
        for f in FITTED:
            hits = int(np.sum(covered[c][f]))
            coverage[c][f] = {"coverage": hits / reps, "ci95": [round(x, 3) for x in _clopper_pearson(hits, reps)],
                              "median_rel_width": float(np.median(width[c][f]))}
    return {"task": env, "horizon": world.protocol.horizon, "reps": reps, "coverage": coverage,
            "log_error_sd": {f: float(np.std(errors[f])) for f in FITTED},
            "log_error_mean": {f: float(np.mean(errors[f])) for f in FITTED},
            "latency_hit_rate": float(np.mean(lat_hit)), "median_wall_s": float(np.median(walls))}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--noise", type=float, default=0.005, help="sensor noise sd of the hidden worlds")
    parser.add_argument("--spread", type=float, default=0.25, help="truth's log-scales uniform in ±spread")
    parser.add_argument("--excitation", type=float, default=0.3)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--horizon", type=int, default=None, help="default: 200 (pendulum), 100 (reacher)")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="generalized", choices=("generalized", "mjx"),
                        help="physics of both the hidden and the identified world")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    results = [run_task(env, args.reps, args.episodes, args.noise, args.spread, args.excitation, args.level,
                        args.seed, args.horizon, args.iterations, args.backend) for env in args.tasks]
    command = "python benchmarks/bench_sysid.py " + " ".join(argv if argv is not None else sys.argv[1:])
    return common.emit({"benchmark": "sysid", "machine": common.machine(), "settings": settings,
                        "command": command.strip(), "results": results}, args.out)


if __name__ == "__main__":
    main()
