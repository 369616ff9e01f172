"""Locomotion rollouts: Brax's MJX `ant`/`hopper` under per-environment DR, against native MuJoCo.

Two rows per task, measured in the same run on the same model:
- `mjx_dr`: an MLP policy in closed loop, `lax.scan` over time and `vmap` over environments,
  each environment with its own friction and torso mass (Brax's
  `DomainRandomizationVmapWrapper`), one compiled call per batch. On a GPU this is the
  accelerator row.
- `native`: `mujoco.rollout` over the same `MjModel`, open-loop controls, all cores. It is the
  floor to approach on a CPU (no policy, no randomization, no gradient), not a bar to pass.

Env-steps count control steps (each is the environment's `n_frames` physics steps).

    python benchmarks/bench_locomotion.py --task ant --batches 256,1024 --steps 100
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

import common
import jax
import jax.numpy as jnp
import numpy as np


def _randomization(batch: int, seed: int):
    """Per-environment friction (x0.6-1.4) and torso mass (x0.8-1.2), the playground's form."""

    def randomize(sys):
        keys = jax.random.split(jax.random.PRNGKey(seed), batch)

        @jax.vmap
        def draw(key):
            k_f, k_m = jax.random.split(key)
            friction = sys.geom_friction.at[:, 0].multiply(jax.random.uniform(k_f, (), minval=0.6, maxval=1.4))
            mass = sys.body_mass.at[1].multiply(jax.random.uniform(k_m, (), minval=0.8, maxval=1.2))
            return friction, mass

        friction, mass = draw(keys)
        in_axes = jax.tree.map(lambda _: None, sys).tree_replace({"geom_friction": 0, "body_mass": 0})
        return sys.tree_replace({"geom_friction": friction, "body_mass": mass}), in_axes

    return randomize


def _mlp(key, sizes):
    params = []
    for k, (a, b) in zip(jax.random.split(key, len(sizes) - 1), itertools.pairwise(sizes)):
        params.append((jax.random.normal(k, (a, b)) / np.sqrt(a), jnp.zeros(b)))
    return params


def _apply(params, obs):
    for w, b in params[:-1]:
        obs = jnp.tanh(obs @ w + b)
    w, b = params[-1]
    return jnp.tanh(obs @ w + b)


def mjx_rate(task: str, batch: int, steps: int, repeats: int, seed: int = 0) -> dict:
    from brax import envs
    from brax.envs.wrappers.training import DomainRandomizationVmapWrapper

    env = DomainRandomizationVmapWrapper(envs.get_environment(task, backend="mjx"), _randomization(batch, seed))
    params = _mlp(jax.random.PRNGKey(seed), (env.observation_size, 64, 64, env.action_size))

    @jax.jit
    def episode(key):
        state = env.reset(jax.random.split(key, batch))

        def step(state, _):
            state = env.step(state, _apply(params, state.obs))
            return state, state.reward

        state, rewards = jax.lax.scan(step, state, None, length=steps)
        return rewards.sum(0).mean() + state.pipeline_state.q.sum() * 0.0

    t0 = time.perf_counter()
    episode(jax.random.PRNGKey(1)).block_until_ready()
    compile_s = time.perf_counter() - t0
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        out = episode(jax.random.PRNGKey(2 + r)).block_until_ready()
        times.append(time.perf_counter() - t0)
    best = min(times)
    return {"row": "mjx_dr", "task": task, "batch": batch, "steps": steps, "compile_s": compile_s,
            "seconds": best, "env_steps_per_s": batch * steps / best, "mean_return": float(out),
            "n_frames": int(env.unwrapped._n_frames)}


def native_rate(task: str, batch: int, steps: int, repeats: int, threads: int) -> dict:
    import mujoco
    from brax import envs
    from mujoco import rollout

    env = envs.get_environment(task, backend="mjx")
    model = env.sys.mj_model
    n_frames = int(env._n_frames)
    data = [mujoco.MjData(model) for _ in range(threads)]
    state0 = np.zeros((1, mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)))
    mujoco.mj_getState(model, data[0], state0[0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    rng = np.random.default_rng(0)
    control = rng.uniform(-1, 1, (batch, steps * n_frames, model.nu))
    initial = np.repeat(state0, batch, axis=0)
    times = []
    with rollout.Rollout(nthread=threads) as runner:
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            runner.rollout(model, data, initial, control)
            times.append(time.perf_counter() - t0)
    best = min(times[1:])
    return {"row": "native", "task": task, "batch": batch, "steps": steps, "threads": threads,
            "seconds": best, "env_steps_per_s": batch * steps / best, "n_frames": n_frames}


def measure(task: str, batches: list[int], steps: int, repeats: int, native_threads: int | None,
            native_batch: int | None = None) -> list[dict]:
    """The MJX row per batch, each followed by the native row (none when `native_threads` is None)."""
    rows = []
    for batch in batches:
        rows.append(mjx_rate(task, batch, steps, repeats))
        print(rows[-1], file=sys.stderr, flush=True)
        if native_threads:
            rows.append(native_rate(task, native_batch or batch, steps, repeats, native_threads))
            print(rows[-1], file=sys.stderr, flush=True)
    native = [r["env_steps_per_s"] for r in rows if r["row"] == "native"]
    for row in rows:  # the native rate depends on the cores, not the batch: compare with its best
        if row["row"] == "mjx_dr" and native:
            row["ratio_to_native"] = row["env_steps_per_s"] / max(native)
    return rows


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="ant", choices=("ant", "hopper", "halfcheetah", "walker2d"))
    p.add_argument("--batches", default="64,256", help="comma-separated environment counts")
    p.add_argument("--steps", type=int, default=100, help="control steps per episode")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--native-threads", type=int, default=os.cpu_count())
    p.add_argument("--native-batch", type=int, default=None,
                   help="episodes of the native row (default: the batch; its rate hardly depends on it)")
    p.add_argument("--skip-native", action="store_true")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    rows = measure(args.task, [int(b) for b in args.batches.split(",")], args.steps, args.repeats,
                   None if args.skip_native else args.native_threads, args.native_batch)
    result = {"benchmark": "locomotion", "machine": common.machine(),
              "settings": {"task": args.task, "steps": args.steps, "repeats": args.repeats,
                           "command": "python benchmarks/bench_locomotion.py " + " ".join(
                               argv if argv is not None else sys.argv[1:])},
              "rows": rows}
    return common.emit(result, args.out)


if __name__ == "__main__":
    main()
