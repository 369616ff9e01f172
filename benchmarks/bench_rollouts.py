"""Rollout throughput of the Brax testbed against a plain Python loop over `mujoco.mj_step`.

Prints one JSON object {"benchmark": "rollouts", "machine": ..., "settings": ..., "results": [...]}
with one row per batch size: env-steps/s of the vectorized rollouts (the shipped nominal policy
under domain randomization), env-steps/s of a Python loop over `mujoco.mj_step` on the same
MJCF model with the same policy and frames per control step (measured in the same run), their
ratio, and the compile time of the first call.

    python benchmarks/bench_rollouts.py                       # smoke size
    python benchmarks/bench_rollouts.py --envs 256 1024 4096 --steps 200 --chunk 1024 --out r.json

`--locomotion ant` (or hopper) adds rows for a locomotion task in the same run: Brax's MJX
environment under per-environment DR with an MLP policy, against `mujoco.rollout` over the
same model on all cores (`bench_locomotion.py`; on a CPU native MuJoCo is the floor to
approach, not a bar to pass).
"""

from __future__ import annotations

import argparse
import time

import common
import jax
import numpy as np


def _mujoco_loop(policy, n_envs: int, steps: int, n_frames: int, init_scale: float, seed: int) -> float:
    """Env-steps/s of a plain Python loop over `mujoco.mj_step` (one core)."""
    import mujoco
    from etils import epath

    model = mujoco.MjModel.from_xml_path(str(epath.resource_path("brax") / "envs/assets/inverted_pendulum.xml"))
    data = mujoco.MjData(model)
    w, b = np.asarray(policy.weights, np.float64), float(policy.bias)
    lo, hi = model.actuator_ctrlrange[0]
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for _ in range(n_envs):
        mujoco.mj_resetData(model, data)
        data.qpos[:] = rng.uniform(-init_scale, init_scale, model.nq)
        data.qvel[:] = rng.uniform(-init_scale, init_scale, model.nv)
        for _ in range(steps):
            obs = np.concatenate([data.qpos, data.qvel])
            a = min(max(float(w @ obs) + b, -1.0), 1.0)
            data.ctrl[0] = (a + 1.0) * (hi - lo) * 0.5 + lo
            for _ in range(n_frames):
                mujoco.mj_step(model, data)
    return n_envs * steps / (time.perf_counter() - start)


def run(envs: list[int], steps: int, chunk: int | None, repeats: int, mujoco_envs: int, seed: int) -> dict:
    from bayes_s2r import sim

    policy = sim.nominal_policy()
    world = sim.make_world(protocol=sim.Protocol(horizon=steps))
    spec = sim.DRSpec.from_levels({"mass": 1.0, "damping": 1.0, "gear": 1.0, "latency": 0.5})
    rows = []
    for n in envs:
        size = chunk or min(n, sim.CHUNK)
        key = jax.random.key(seed)
        params = sim.sample_params(key, spec, n)
        t0 = time.perf_counter()
        first = sim.simulate_batch(key, world, policy, params, chunk=size)
        jax.block_until_ready(first)
        t_first = time.perf_counter() - t0
        times = []
        for r in range(repeats):
            t0 = time.perf_counter()
            out = sim.simulate_batch(jax.random.key(seed + 1 + r), world, policy, params, chunk=size)
            jax.block_until_ready(out)
            times.append(time.perf_counter() - t0)
        run_s = min(times)
        sps = n * steps / run_s
        m = min(n, mujoco_envs)
        mj = _mujoco_loop(policy, m, steps, world.n_frames, world.protocol.init_scale, seed)
        rows.append({"envs": n, "chunk": size, "steps_per_s": round(sps, 1), "mujoco_loop_steps_per_s": round(mj, 1),
                     "mujoco_loop_envs": m, "ratio": round(sps / mj, 3),
                     "compile_s": round(max(t_first - run_s, 0.0), 2),
                     "success_rate": float(np.mean(np.asarray(out.success)))})
    machine = common.machine()
    settings = {"env": world.env, "backend": "generalized", "steps": steps, "chunk": chunk, "repeats": repeats,
                "mujoco_envs": mujoco_envs, "seed": seed, "dr": "mass, damping, gear at level 1, latency 0..1",
                "policy": "shipped nominal linear policy"}
    return {"benchmark": "rollouts", "machine": machine, "settings": settings, "results": rows}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[64], help="batch sizes, e.g. 256 1024 4096")
    parser.add_argument("--steps", type=int, default=50, help="control steps per episode")
    parser.add_argument("--chunk", type=int, default=None, help="episodes per compiled call (default min(envs, 256))")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--mujoco-envs", type=int, default=16, help="episodes for the mj_step loop")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--locomotion", default=None, choices=("ant", "hopper"),
                        help="also measure this locomotion task at the same batch sizes")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    result = run(args.envs, args.steps, args.chunk, args.repeats, args.mujoco_envs, args.seed)
    if args.locomotion:
        import os

        import bench_locomotion

        result["locomotion"] = bench_locomotion.measure(args.locomotion, args.envs, args.steps, args.repeats,
                                                        os.cpu_count())
    return common.emit(result, args.out)


if __name__ == "__main__":
    main()
