"""What a wrong belief about how candidates relate costs, exactly, on small problems.

The gains model links candidates through shared levels (the mean effect of a campaign, of a
method, of a lens group): a candidate measured at zero pulls its siblings down. That is right
when siblings really share a component, and wrong when they are alternatives of which at most
one is the fix (the robot family: two fine-tunings, exactly one works). This benchmark asks,
with the exact machinery of `benchmarks/dp_ceiling.py`, how much each mistake costs.

Truths (three candidates, three decisions, levels 0.05·{−2..2}; candidates 0 and 1 are the
siblings):

- `one_fix`: at most one candidate is the fix (+0.1; none with probability U(0.1, 0.4), which
  one by Dirichlet(1, 1, 1)); every other candidate sits at −0.05, 0 or +0.05 by its own
  Dirichlet(1, 1, 1). Siblings are anti-correlated. Noisy paired evaluation as in
  `dp_ceiling`'s `noisy` variant; `one_fix_exact` is the same with exact evaluations.
- `noisy`: `dp_ceiling`'s `noisy` problems, where the siblings' joint prior is coupled by
  exp(−κ·(i0 − i1)²), κ ~ U(0.3, 2): siblings share a component.
- `pandora`: `dp_ceiling`'s independent priors with exact evaluations (Weitzman's case).

Beliefs, each a prior over the full grid with the truth's costs, noise and decisions:

- `true`: the truth's own joint prior (the Bayes posterior at every node);
- `independent`: the product of the truth's marginals (no link between candidates);
- `coupled@κ`: the product of the marginals times exp(−κ·(i0 − i1)²), the siblings pulled
  together as a shared method level does (κ in `--kappas`), then rescaled to the truth's
  marginals (iterative proportional fitting): the same belief of each candidate alone.

A rule decides at each node from the posterior of its belief given the node's history (the
same outcomes, replayed under the belief), and its value is computed exactly under the truth
(`dp_ceiling.policy_value`). Rules: `index` (reservation values of the gain over the incumbent
under the posterior: the `pandora` strategy computed exactly) and `myopic` (one-step
look-ahead, the exact `q_beta0` under "adopt"). `--library` adds the library's `decide` with
the rollout look-ahead and the alternatives transition (`q_cvu+tr` of `dp_ceiling`; slower).

Per truth, belief and rule: the mean value as a share of the mean DP value, and the paired
difference from the same rule under the true belief with a 95% t-interval by problem.

    .venv/bin/python benchmarks/bench_belief_structure.py --problems 60 --out benchmarks/results/belief_structure.json
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from benchmarks import dp_ceiling as dc
from benchmarks.common import emit, machine, t_interval

TRUTHS = ("one_fix", "one_fix_exact", "noisy", "pandora")
RULES = {"index": dc.posterior_index_rule, "myopic": dc.myopic_rule}
FIX = len(dc.LEVELS) - 1  # the grid index of the fix's level (+0.1)


def one_fix_problem(seed: int, *, exact: bool = False, k: int = 3) -> dc.GridProblem:
    """A problem where at most one of `k` candidates is the fix (see the module docstring)."""
    rng = np.random.default_rng([seed, 11, 7919])
    p_none = rng.uniform(0.1, 0.4)
    p_fix = (1 - p_none) * rng.dirichlet(np.ones(k))
    other = rng.dirichlet(np.ones(3), size=k)  # over grid indices 1, 2, 3 (−0.05, 0, +0.05)
    idx = np.array(list(itertools.product(range(len(dc.LEVELS)), repeat=k)))
    fixes = (idx == FIX).sum(1)
    ok = (fixes <= 1) & (idx > 0).all(1)
    which = np.argmax(idx == FIX, axis=1)
    prior = np.where(fixes == 1, p_fix[which], p_none)
    for j in range(k):
        prior = prior * np.where(idx[:, j] == FIX, 1.0, other[j, np.clip(idx[:, j] - 1, 0, 2)])
    prior = np.where(ok, prior, 0.0)
    keep = prior > 0
    points, prior = 2 * dc.LEVELS[idx[keep]], prior[keep] / prior[keep].sum()
    positive = prior @ np.maximum(points * dc.UNIT, 0.0)
    cost = rng.uniform(0.15, 0.7, k) * positive
    if exact:
        noise = (np.array([0]), np.array([1.0]))
    else:
        a = rng.uniform(0.05, 0.2)
        noise = (np.array([-3, -1, 1, 3]), np.array([a, 0.5 - a, 0.5 - a, a]))
    return dc.GridProblem(points=points, prior=prior, cost=cost, noise=noise, rounds=k, hours=np.zeros(k),
                          independent=False, name=f"{'one_fix_exact' if exact else 'one_fix'}/{seed}")


def truth_problem(truth: str, seed: int) -> dc.GridProblem:
    if truth == "one_fix":
        return one_fix_problem(seed)
    if truth == "one_fix_exact":
        return one_fix_problem(seed, exact=True)
    return dc.make_problem(truth, seed)


def grid_marginals(p: dc.GridProblem, floor: float = 1e-6) -> np.ndarray:
    """[K, levels] marginal prior of each candidate over `LEVELS`, with every level kept possible
    (a belief must not rule out what the truth can produce)."""
    m = np.zeros((p.k, len(dc.LEVELS)))
    for j in range(p.k):
        np.add.at(m[j], p.points[:, j] // 2 - dc.LEVELS[0], p.prior)
    m = m + floor
    return m / m.sum(1, keepdims=True)


def belief_problem(p: dc.GridProblem, belief: str, sweeps: int = 500) -> dc.GridProblem:
    """The truth's problem under the prior `belief` ("independent" or "coupled@κ"). A coupled
    belief keeps the truth's marginals (iterative proportional fitting of the coupled joint), so
    it differs from the independent one only in how the siblings are linked, as a shared level
    does, and not in what it believes of each candidate alone."""
    target = grid_marginals(p)
    if belief == "independent":
        return dc.grid_problem(target, p.cost, noise=p.noise, rounds=p.rounds)
    q = dc.grid_problem(target, p.cost, noise=p.noise, rounds=p.rounds, coupling=(0, 1, float(belief.split("@")[1])))
    index = q.points // 2 - dc.LEVELS[0]
    prior = q.prior.copy()
    for _ in range(sweeps):
        for j in range(q.k):
            now = np.bincount(index[:, j], weights=prior, minlength=len(dc.LEVELS))
            prior = prior * (target[j] / now)[index[:, j]]
    return dataclasses.replace(q, prior=prior / prior.sum())


def replay(q: dc.GridProblem, history) -> dc.Node:
    """The node of problem q reached by `history` ((candidate, outcome), ...)."""
    node = dc.root(q)
    for k, y in history:
        node = next(child for _, child in dc.outcomes(q, node, k) if child.history[-1] == (k, y))
    return node


def under(rule: dc.Rule, q: dc.GridProblem | None) -> dc.Rule:
    """`rule` deciding from belief q's posterior (the truth's own when q is None)."""
    if q is None:
        return rule
    return lambda p, node: rule(q, replay(q, node.history))


def paired(values: np.ndarray, base: np.ndarray) -> dict:
    d = values - base
    return {"mean": round(float(d.mean()), 5), "ci95": [round(x, 5) for x in t_interval(d)]}


def evaluate(truth: str, seed: int, beliefs: list[str], library: bool, draws: int, cvu_samples: int) -> dict:
    """Exact values of every (belief, rule) on one problem of `truth`, and its DP value."""
    p = truth_problem(truth, seed)
    out = {"dp": dc.dp_value(p)}
    rules = dict(RULES)
    for belief in beliefs:
        q = None if belief == "true" else belief_problem(p, belief)
        if library:
            lib = dc.LibraryRule(num_draws=draws, cvu_samples=cvu_samples)
            rules["q_cvu+tr"] = lambda p_, node, lib=lib: lib.decide(p_, node, "q_cvu+tr")
        for name, rule in rules.items():
            out[f"{name}|{belief}"] = dc.policy_value(p, under(rule, q))
    return out


def summarize(rows: list[dict], beliefs: list[str], rules: list[str]) -> dict:
    dp = np.array([r["dp"] for r in rows])
    out = {"dp_mean": round(float(dp.mean()), 5), "rules": {}}
    for rule in rules:
        base = np.array([r[f"{rule}|true"] for r in rows])
        entry = {}
        for belief in beliefs:
            v = np.array([r[f"{rule}|{belief}"] for r in rows])
            entry[belief] = {"mean": round(float(v.mean()), 5), "share_of_dp": round(float(v.mean() / dp.mean()), 4)}
            if belief != "true":
                entry[belief]["minus_true_belief"] = paired(v, base)
        out["rules"][rule] = entry
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=60)
    ap.add_argument("--truths", nargs="+", default=list(TRUTHS), choices=TRUTHS)
    ap.add_argument("--kappas", nargs="+", type=float, default=[0.25, 1.0])
    ap.add_argument("--library", action="store_true", help="also the library's decide (rollout, alternatives)")
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--cvu-samples", type=int, default=128)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    argv = argv if argv is not None else sys.argv[1:]
    warnings.filterwarnings("ignore")  # arviz's notices on draws built by hand
    beliefs = ["true", "independent", *(f"coupled@{k:g}" for k in args.kappas)]
    rules = [*RULES, *(["q_cvu+tr"] if args.library else [])]
    t0, results, timing = time.time(), {}, {}
    for truth in args.truths:
        t = time.time()
        rows = [evaluate(truth, s, beliefs, args.library, args.draws, args.cvu_samples)
                for s in range(args.problems)]
        results[truth] = summarize(rows, beliefs, rules)
        timing[truth] = round(time.time() - t, 1)
    return emit({
        "benchmark": "belief_structure", "command": ("python benchmarks/bench_belief_structure.py " + " ".join(argv)).strip(),
        "machine": machine(),
        "settings": {"problems": args.problems, "truths": args.truths, "beliefs": beliefs, "rules": rules,
                     "candidates": 3, "rounds": 3, "levels": "0.05 x {-2..2}", "siblings": [0, 1],
                     "draws": args.draws if args.library else None,
                     "cvu_samples": args.cvu_samples if args.library else None},
        "seconds": {"total": round(time.time() - t0, 1), **timing},
        "results": results,
    }, args.out)


if __name__ == "__main__":
    main()
