"""The built-in worlds on Brax's `generalized` pipeline against MJX, side by side.

For each built-in task (cart-pole with the shipped nominal policy, reacher with a PD
controller toward the target) and each backend, on the same batch of episodes (same ξ drawn
from a testbed-wide DR, same initial states, same sensor-noise keys):

- agreement: success rate and mean score on each backend, the paired difference with its
  95% interval, and the share of episodes whose success flag is the same;
- speed: compile time of the first call and env-steps/s of the warm call at each batch size;
- gradients: the forward-mode Jacobian system identification uses (d final state / d log
  mass, damping and gear scales of one episode), its time, and whether it is finite;
- the shipped cart-pole world cards: the nominal policy's success and unsafe rates on each
  card's world on both engines (same episodes), i.e. whether each hidden gap keeps its
  character when the engine changes.

Identification quality per backend is `bench_sysid.py --backend mjx`. Prints one JSON object
{"benchmark": "backends", "machine", "settings", "command", "results": [one row per task],
"cards": [one row per card]}.

    python benchmarks/bench_backends.py                                # smoke size
    python benchmarks/bench_backends.py --episodes 1024 --envs 256 1024 4096 --card-episodes 512 \
        --out benchmarks/results/backends.json
"""

from __future__ import annotations

import argparse
import sys
import time

import common
import jax
import jax.numpy as jnp
import numpy as np

TASKS = ("inverted_pendulum", "reacher")
BACKENDS = ("generalized", "mjx")


def _policy(sim, env: str):
    if env == "inverted_pendulum":
        return sim.nominal_policy()
    kp, kd = 0.5, 0.1  # a proportional-derivative controller toward the target pose
    return sim.LinearPolicy(jnp.array([[-kp, 0.0, -kd, 0.0], [0.0, -kp, 0.0, -kd]]), jnp.zeros(2))


def _dr(sim):
    """Every mismatch direction of the testbed at once (the ranges the five worlds span)."""
    return sim.DRSpec.create(width={"mass_scale": 0.3, "damping_scale": 0.3, "gear_scale": 0.2,
                                    "latency": 1, "obs_noise": 0.01, "obs_bias": 0.02})


def _timed(fn):
    start = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - start


def _jacobian(sim, world, policy, key):
    """d(final q, qd)/d(log mass, damping, gear scale) of one episode, forward mode."""
    from bayes_s2r.sim.rollout import sample_init, simulate_batch

    q0, qd0 = sample_init(key, world, 1)

    def final_state(log_scales):
        e = jnp.exp(log_scales)
        p = sim.broadcast_params(world.params._replace(mass_scale=e[0], damping_scale=e[1], gear_scale=e[2]), 1)
        _, traj = simulate_batch(key, world, policy, p, init=(q0, qd0), record=True, chunk=1)
        return jnp.concatenate([traj.q[0, -1], traj.qd[0, -1]])

    jac = jax.jit(jax.jacfwd(final_state))
    out, compile_s = _timed(lambda: jac(jnp.full(3, 0.0)))
    _, warm_s = _timed(lambda: jac(jnp.full(3, 0.01)))
    return {"finite": bool(np.all(np.isfinite(np.asarray(out)))), "max_abs": float(np.max(np.abs(np.asarray(out)))),
            "compile_s": round(compile_s, 2), "warm_s": round(warm_s, 3)}


def run_task(env: str, episodes: int, envs: list[int], horizon: int | None, seed: int) -> dict:
    from bayes_s2r import sim
    from bayes_s2r.sim.rollout import simulate_batch

    protocol = sim.Protocol(horizon=horizon or (200 if env == "inverted_pendulum" else 100))
    policy = _policy(sim, env)
    k_xi, k_run, k_jac = jax.random.split(jax.random.key(seed), 3)
    xi = sim.sample_params(k_xi, _dr(sim), episodes)
    row = {"task": env, "horizon": protocol.horizon, "episodes": episodes, "backends": {}}
    stats = {}
    for backend in BACKENDS:
        world = sim.make_world(env, protocol=protocol, backend=backend)
        s, first_s = _timed(lambda world=world: simulate_batch(k_run, world, policy, xi))
        stats[backend] = s
        speed = {}
        for n in envs:
            p = sim.broadcast_params(world.params, n)
            run = lambda world=world, p=p: simulate_batch(jax.random.key(seed + 1), world, policy, p).success
            _timed(run)  # compiles the chunk shape if new
            _, warm = _timed(run)
            speed[str(n)] = round(n * protocol.horizon / warm)
        row["backends"][backend] = {
            "success": float(np.mean(s.success)), "unsafe": float(np.mean(s.unsafe)),
            "score": float(np.mean(s.score)), "first_call_s": round(first_s, 2),
            "env_steps_per_s": speed, "jacobian": _jacobian(sim, world, policy, k_jac)}
    a, b = stats["generalized"], stats["mjx"]
    for field in ("success", "score"):
        d = np.asarray(getattr(b, field), np.float64) - np.asarray(getattr(a, field), np.float64)
        lo, hi = common.t_interval(d)
        row[f"{field}_mjx_minus_generalized"] = {"mean": float(d.mean()), "ci95": [float(lo), float(hi)]}
    row["same_success_flag"] = float(np.mean(np.asarray(a.success) == np.asarray(b.success)))
    return row


def run_cards(episodes: int, seed: int) -> list[dict]:
    """The nominal policy on every shipped cart-pole card, on both engines, same episodes."""
    import dataclasses

    from bayes_s2r import sim

    policy, rows = sim.nominal_policy(), []
    for card in sim.list_cards():
        world = sim.load_card(card)
        if world.env != "inverted_pendulum":
            continue
        row = {"card": card, "kind": world.kind}
        for backend in BACKENDS:
            s = sim.rollout(jax.random.key(seed), dataclasses.replace(world, backend=backend), policy, episodes)
            row[backend] = {"success": float(np.mean(s.success)), "unsafe": float(np.mean(s.unsafe))}
        rows.append(row)
    return rows


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--episodes", type=int, default=64, help="paired episodes for the agreement")
    parser.add_argument("--envs", type=int, nargs="+", default=[256], help="batch sizes timed")
    parser.add_argument("--horizon", type=int, default=None, help="default: 200 (pendulum), 100 (reacher)")
    parser.add_argument("--card-episodes", type=int, default=64, help="episodes per card and engine (0: skip)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    results = [run_task(env, args.episodes, args.envs, args.horizon, args.seed) for env in args.tasks]
    cards = run_cards(args.card_episodes, args.seed) if args.card_episodes else []
    command = "python benchmarks/bench_backends.py " + " ".join(argv if argv is not None else sys.argv[1:])
    return common.emit({"benchmark": "backends", "machine": common.machine(), "settings": settings,
                        "command": command.strip(), "results": results, "cards": cards}, args.out)


if __name__ == "__main__":
    main()
