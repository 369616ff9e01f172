"""An exact Bayes-optimal ceiling for small allocation problems, and the rule's exact value in them.

A problem here is small enough to solve exactly: K candidates (adaptations trained from the
starting policy, so tries are alternatives), each with an unknown gain X_k in real
performance on a grid of levels, a discrete joint prior over the grid, a priced cost c_k per
try, at most R decisions, and optionally a hard budget (robot hours that are not priced) that
admits only some combinations of tries. Each decision tries an untried candidate or stops.

Observation and adoption. Trying k gives a paired evaluation of k against the deployed
policy (the incumbent; at first the starting policy, gain 0): Y = X_k − X_inc + ε with ε from
a discrete noise distribution (symmetric, on half steps of the grid, so Y is never 0 unless
the evaluation is exact). The new policy is kept only when Y > 0 (a tie keeps the
incumbent). The net value of a campaign is X of the finally deployed policy (0 for the
starting one) minus the priced costs of the tries made. With an exact evaluation (ε = 0) and
independent priors this is Weitzman's Pandora's box: the deployed policy is the best tried so
far, the value is max(0, best tried) − Σ costs, and the optimal policy is the index rule.

Stacking (`stack=True`, the `noisy_stack` variant): each try is trained from the deployed
policy and its gain adds to what is deployed (gains that add up, the library's
`NoTransition`); the evaluation measures Y = X_k + ε, and the value is Σ X_k over the kept
tries minus the costs. This is the campaign's own picture of successive adaptations.

Everything is on a grid (gains in units of half a grid step: integers), so the tree of
decisions and outcomes is finite and both the Bayes-optimal value (`dp_value`, backward
induction over histories, the posterior of every node by Bayes' rule over the joint grid)
and the value of any decision rule (`policy_value`, the same recursion following the rule's
choices with the exact outcome probabilities) are exact sums.

Full information and baselines (`ceiling`). `oracle_value` is the campaign's `oracle_safe`
strategy (`bayes_s2r.campaign.strategies.oracle(gated=True)`) in this model: it knows the true
gains (a point of the grid) and at each decision runs, among the feasible tries (untried,
within the hard budget and the decisions left; the model has no safety gate, so `oracle_safe`
and `oracle` coincide), the one with the largest true gain over the deployed policy (X_k − X_inc;
X_k when stacking) minus its price C_λ = c_k, ties to the lower index, and stops when that is
≤ 0. It pays for what it runs, and the noisy evaluation still decides adoption: a try that the
evaluation rejects leaves the incumbent in place and the oracle moves on to the next best. Its
value is exact: the prior-weighted sum over the grid points of `policy_value` on the problem
with the prior a point mass there (`known`). It is greedy, not the best policy that knows the
gains: `clairvoyant_value` is that (the DP of each point mass), an upper bound on every
policy; with an exact evaluation the two are equal. The exact non-oracle baselines: Weitzman's
index on the prior's marginals (`weitzman_rule`; compared with 0 when stacking), the index on the
node posterior of the gain over the incumbent (`posterior_index_rule`, the `pandora` strategy
without the 4,000-draw quantization) and one-step look-ahead (`myopic_rule`, the exact
`q_beta0` under "adopt"). The share of the gap from the best baseline to the oracle that the DP
closes is the most any policy that does not see the gains can close on these problems.

The library's rule (`LibraryRule`). At each node `decide` gets the node's posterior as a
`GainBelief` of 4,000 draws from the grid posterior (counts by largest-remainder rounding of
4,000·p, shuffled with a fixed seed: a deterministic quantization, not a Monte-Carlo sample),
with each column the gain of a candidate over the incumbent (X_k − X_inc, draw by draw; X_k
when stacking), the
candidates as non-repeatable adaptations whose outcome model is a `GaussianOutcome` with the
discrete noise's exact sd (one eighth of a grid step for the exact evaluation), costs
`Cost(real=hours, compute=c_k)` at weights `ResourceWeights(real=0, compute=1, eng=0)` (so
C_λ = c_k and the hours are only a hard limit), current_J = 0.5 + E[X_inc], and the
campaign's settings: utility "adopt", β = 1, `cvu_samples` 256, the transition
`HeadroomTransition(repeat_share=0)`, horizon = decisions left − 1, terminal (CVU := 0) at
the last decision. Rule variants:

| id          | what it is                                                                         |
| ----------- | ---------------------------------------------------------------------------------- |
| `q_cvu`     | the campaign default: continuation "rollout" over the decisions left                |
| `q_cvu@g0`  | the same with DESIGN's one-step G0 continuation                                     |
| `q_beta0`   | β = 0 (myopic U0 under "adopt")                                                    |
| `q_cvu+tr`  | `q_cvu` with the transition the model follows (`AlternativesTransition`: gains     |
|             | after a move are X_j − X_k; `NoTransition` when stacking), to separate the default |
|             | transition's mismatch from the rest                                                |
| `pandora`   | the `pandora` strategy: argmax reservation value over the draws, stop if z ≤ 0     |

At the last decision CVU is 0 for every Q rule, so they share one `decide` call there.

Problem generator (`make_problem(variant, seed)`; levels h·{−2, −1, 0, 1, 2}, h = 0.05, three
candidates, three decisions):

- each candidate's marginal prior is Dirichlet(1, ..., 1) over the five levels;
- `pandora`: independent priors, exact evaluation;
- `noisy`: candidates 0 and 1 share a component: their joint prior is
  p0(x0)·p1(x1)·exp(−κ·(i0 − i1)²) (grid indices i; κ ~ U(0.3, 2)), candidate 2 independent;
  noise ε ∈ h·{−1.5, −0.5, 0.5, 1.5} with probabilities (a, ½ − a, ½ − a, a), a ~ U(0.05, 0.2)
  (sd 0.74 to 1.03 grid steps);
- `noisy_stack`: `noisy` with stacking gains (see above);
- `noisy_budget`: `noisy` plus a hard budget of 3 robot hours, the tries needing a
  permutation of (1, 2, 2) hours: at most two tries, and never the two 2-hour ones (not
  index-solvable);
- costs c_k = U(0.15, 0.7)·E[max(X_k, 0)] under the marginal prior (U(0.002, 0.01) where that
  is 0), so most problems are worth some trying.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import numpy as np

H = 0.05  # grid step of the gains (J units)
UNIT = H / 2  # the integer unit of gains and evaluations: half a grid step
LEVELS = np.arange(-2, 3)  # grid indices of the gain levels
J0 = 0.5  # the starting policy's J, for the library's current_J
VARIANTS = ("pandora", "noisy", "noisy_budget", "noisy_stack")


@dataclasses.dataclass(frozen=True, eq=False)
class GridProblem:
    """One small problem.

    Attributes:
        points: [N, K] integer gains (units of `UNIT`) of every point of the joint grid.
        prior: [N] prior probabilities of the points.
        cost: [K] priced costs (J units).
        noise: (offsets [E] in units, probabilities [E]) of the evaluation noise; ((0,), (1,)) exact.
        rounds: at most this many decisions.
        hours: [K] hard-budget use of each try; budget: the hard budget (inf: none).
        independent: whether the prior is a product of its marginals.
        stack: gains add up (each try from the deployed policy) instead of being alternatives.
    """

    points: np.ndarray
    prior: np.ndarray
    cost: np.ndarray
    noise: tuple[np.ndarray, np.ndarray]
    rounds: int
    hours: np.ndarray
    budget: float = float("inf")
    independent: bool = True
    stack: bool = False
    name: str = ""

    @property
    def k(self) -> int:
        return self.points.shape[1]

    @property
    def exact(self) -> bool:
        return len(self.noise[0]) == 1 and self.noise[0][0] == 0

    def noise_sd(self) -> float:
        """The evaluation noise's sd in J units."""
        off, p = self.noise
        return float(np.sqrt(np.sum(p * (off * UNIT) ** 2)))


def grid_problem(marginals, cost, *, noise=None, rounds=None, hours=None, budget=float("inf"),
                 coupling=None, stack=False, name="") -> GridProblem:
    """A problem from per-candidate marginals over `LEVELS` (rows), coupled as asked.

    `coupling`: None (independent) or (a, b, kappa): the joint prior of candidates a and b is
    multiplied by exp(−kappa·(i_a − i_b)²) and renormalized.
    """
    marg = np.asarray(marginals, float)
    k = marg.shape[0]
    idx = np.array(list(itertools.product(range(len(LEVELS)), repeat=k)))
    prior = np.prod(marg[np.arange(k)[None, :], idx], axis=1)
    if coupling is not None:
        a, b, kappa = coupling
        prior = prior * np.exp(-kappa * (idx[:, a] - idx[:, b]) ** 2)
    keep = prior > 0
    prior, idx = prior[keep] / prior[keep].sum(), idx[keep]
    points = 2 * LEVELS[idx]
    noise = (np.array([0]), np.array([1.0])) if noise is None else (np.asarray(noise[0], int),
                                                                   np.asarray(noise[1], float))
    return GridProblem(points=points, prior=prior, cost=np.asarray(cost, float), noise=noise,
                       rounds=k if rounds is None else rounds,
                       hours=np.zeros(k) if hours is None else np.asarray(hours, float), budget=budget,
                       independent=coupling is None, stack=stack, name=name)


def make_problem(variant: str, seed: int, k: int = 3) -> GridProblem:
    """A random problem of the family `variant` (see the module docstring)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r} not in {VARIANTS}")
    # noisy_stack draws the same problems as noisy (a paired comparison of the two pictures)
    stream = {"pandora": 0, "noisy": 1, "noisy_stack": 1, "noisy_budget": 2}[variant]
    rng = np.random.default_rng([seed, stream, 7919])
    marg = rng.dirichlet(np.ones(len(LEVELS)), size=k)
    pos = marg @ np.maximum(LEVELS * H, 0.0)
    cost = np.where(pos > 1e-9, rng.uniform(0.15, 0.7, k) * pos, rng.uniform(0.002, 0.01, k))
    if variant == "pandora":
        return grid_problem(marg, cost, name=f"{variant}/{seed}")
    a = rng.uniform(0.05, 0.2)
    noise = (np.array([-3, -1, 1, 3]), np.array([a, 0.5 - a, 0.5 - a, a]))
    coupling = (0, 1, rng.uniform(0.3, 2.0))
    if variant in ("noisy", "noisy_stack"):
        return grid_problem(marg, cost, noise=noise, coupling=coupling, stack=variant == "noisy_stack",
                            name=f"{variant}/{seed}")
    hours = rng.permutation([1.0, 2.0, 2.0][:k] + [2.0] * max(0, k - 3))
    return grid_problem(marg, cost, noise=noise, coupling=coupling, hours=hours, budget=3.0,
                        name=f"{variant}/{seed}")


# --------------------------------------------------------------------------- the tree


@dataclasses.dataclass(frozen=True, eq=False)
class Node:
    """A decision node: the posterior weights (normalized), what has been tried, the incumbent
    (−1: the starting policy), the hard budget used, the history ((k, y), ...) and the tries
    kept."""

    w: np.ndarray
    tried: tuple[int, ...]
    inc: int
    used: float
    history: tuple[tuple[int, int], ...]
    kept: tuple[int, ...] = ()


def root(p: GridProblem) -> Node:
    return Node(p.prior, (), -1, 0.0, ())


def stop_value(p: GridProblem, node: Node) -> float:
    """E[gain of the deployed policy | node] in J units."""
    if p.stack:
        return float(sum(node.w @ p.points[:, k] for k in node.kept)) * UNIT
    if node.inc < 0:
        return 0.0
    return float(node.w @ p.points[:, node.inc]) * UNIT


def options(p: GridProblem, node: Node) -> list[int]:
    """Candidates that may be tried at `node` (none once `rounds` decisions are made)."""
    if len(node.tried) >= p.rounds:
        return []
    return [k for k in range(p.k) if k not in node.tried and node.used + p.hours[k] <= p.budget + 1e-9]


def outcomes(p: GridProblem, node: Node, k: int) -> list[tuple[float, Node]]:
    """(probability, child) for every outcome of trying k at `node`."""
    base = p.points[:, node.inc] if node.inc >= 0 and not p.stack else 0
    diff = p.points[:, k] - base
    off, q = p.noise
    y_all = diff[:, None] + off[None, :]
    out = []
    for y in np.unique(y_all):
        lik = ((y_all == y) * q[None, :]).sum(1)
        joint = node.w * lik
        prob = float(joint.sum())
        if prob <= 0:
            continue
        child = Node(joint / prob, node.tried + (k,), k if y > 0 else node.inc, node.used + float(p.hours[k]),
                     node.history + ((k, int(y)),), node.kept + ((k,) if y > 0 else ()))
        out.append((prob, child))
    return out


def dp_value(p: GridProblem, node: Node | None = None) -> float:
    """The Bayes-optimal value: backward induction over every history."""
    node = root(p) if node is None else node
    best = stop_value(p, node)
    for k in options(p, node):
        v = -p.cost[k] + sum(prob * dp_value(p, child) for prob, child in outcomes(p, node, k))
        best = max(best, v)
    return best


def policy_values(p: GridProblem, node: Node | None = None) -> list[float]:
    """The value of every deterministic policy from `node` (brute force: no maximisation
    inside; a policy fixes an action at every node it can reach). Exponential: tiny problems."""
    node = root(p) if node is None else node
    vals = [stop_value(p, node)]
    for k in options(p, node):
        branches = [(prob, policy_values(p, child)) for prob, child in outcomes(p, node, k)]
        for combo in itertools.product(*(v for _, v in branches)):
            vals.append(-p.cost[k] + sum(prob * v for (prob, _), v in zip(branches, combo)))
    return vals


Rule = Callable[[GridProblem, Node], "int | None"]


def policy_value(p: GridProblem, rule: Rule, node: Node | None = None) -> float:
    """The exact value of following `rule` (node -> candidate index, or None to stop)."""
    node = root(p) if node is None else node
    choice = rule(p, node) if options(p, node) else None
    if choice is None:
        return stop_value(p, node)
    if choice not in options(p, node):
        raise ValueError(f"rule chose {choice}, not among {options(p, node)} at {node.history}")
    return -p.cost[choice] + sum(prob * policy_value(p, rule, child) for prob, child in outcomes(p, node, choice))


# --------------------------------------------------------------------------- Weitzman


def reservation_value(levels_j: np.ndarray, probs: np.ndarray, cost: float) -> float:
    """z with Σ p·(x − z)^+ = cost for a discrete distribution (exact; piecewise linear)."""
    order = np.argsort(-levels_j)
    x, q = levels_j[order], probs[order]
    if cost <= 0:
        return float(x[q > 0][0])
    cum_q, cum_qx = 0.0, 0.0
    for i in range(len(x)):
        cum_q += q[i]
        cum_qx += q[i] * x[i]
        if cum_q <= 0:
            continue
        z = (cum_qx - cost) / cum_q  # the root if it lies on [x_{i+1}, x_i]
        nxt = x[i + 1] if i + 1 < len(x) else -np.inf
        if nxt - 1e-12 <= z <= x[i] + 1e-12:
            return float(z)
    return float((cum_qx - cost) / cum_q)


def marginals(p: GridProblem, w: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(levels in J units, probabilities) of each candidate's gain under weights w (the prior)."""
    w = p.prior if w is None else w
    out = []
    for k in range(p.k):
        lv, inv = np.unique(p.points[:, k], return_inverse=True)
        out.append((lv * UNIT, np.bincount(inv, weights=w, minlength=len(lv))))
    return out


def weitzman_rule(p: GridProblem) -> Rule:
    """Weitzman's index policy on the prior's marginals: open by decreasing reservation value,
    stop when the best found is at least every remaining z (the start policy is worth 0)."""
    z = np.array([reservation_value(lv, q, c) for (lv, q), c in zip(marginals(p), p.cost)])

    def rule(p: GridProblem, node: Node) -> int | None:
        opts = options(p, node)
        # exact evaluation: the incumbent's gain is known; stacking: each gain adds, so 0
        best = 0.0 if p.stack else stop_value(p, node)
        k = max(opts, key=lambda i: (z[i], -i))
        return k if z[k] > best + 1e-12 else None

    return rule


def weitzman_value(p: GridProblem) -> float:
    return policy_value(p, weitzman_rule(p))


# --------------------------------------------------------------------------- exact baselines


def relative_gains(p: GridProblem, node: Node) -> np.ndarray:
    """[N, K] gain of trying each candidate at `node` for every grid point (units): X_k − X_inc,
    or X_k when stacking."""
    base = p.points[:, [node.inc]] if node.inc >= 0 and not p.stack else 0
    return p.points - base


def posterior_index_rule(p: GridProblem, node: Node) -> int | None:
    """The `pandora` strategy computed exactly: reservation values of each option's gain over
    the incumbent under the node's posterior (the library's rule reads 4,000 draws of it);
    argmax z (ties: the lower index), stop when no z is above 0."""
    opts = options(p, node)
    rel = relative_gains(p, node)
    best, arg = 0.0, None
    for k in opts:
        lv, inv = np.unique(rel[:, k], return_inverse=True)
        z = reservation_value(lv * UNIT, np.bincount(inv, weights=node.w, minlength=len(lv)), float(p.cost[k]))
        if z > best + 1e-12:
            best, arg = z, k
    return arg


def myopic_rule(p: GridProblem, node: Node) -> int | None:
    """One-step look-ahead (the exact `q_beta0` under "adopt"): the option with the largest
    E[value after trying it and stopping] − cost, if that is above stopping now."""
    now = stop_value(p, node)
    best, arg = now + 1e-12, None
    for k in options(p, node):
        v = -float(p.cost[k]) + sum(prob * stop_value(p, c) for prob, c in outcomes(p, node, k))
        if v > best:
            best, arg = v, k
    return arg


# --------------------------------------------------------------------------- full information


def oracle_rule(p: GridProblem, node: Node) -> int | None:
    """The campaign's `oracle_safe` strategy (`bayes_s2r.campaign.strategies.oracle(gated=True)`)
    at a node whose weights are a point mass on the true gains: among the feasible options
    (untried, within the hard budget and the decisions left; this model has no safety gate)
    the argmax of true gain over the deployed policy − C_λ (C_λ = c_k; ties: the lower index),
    stop when that is ≤ 0. It pays for what it runs, and the noisy evaluation still decides
    adoption (a run that the evaluation rejects leaves the incumbent, and the oracle moves on)."""
    opts = options(p, node)
    if not opts:
        return None
    true = node.w @ relative_gains(p, node) * UNIT  # exact: w is a point mass
    k = max(opts, key=lambda i: (true[i] - p.cost[i], -i))
    return k if true[k] - p.cost[k] > 0.0 else None


def known(p: GridProblem, i: int) -> GridProblem:
    """The problem with the gains known: the prior a point mass on grid point i (the same
    costs, noise, budget and decisions; the tree of evaluation outcomes is the same)."""
    return dataclasses.replace(p, points=p.points[i:i + 1], prior=np.ones(1), name=f"{p.name}@{i}")


def oracle_value(p: GridProblem) -> float:
    """E over the prior of the `oracle_safe` rule's value when it knows the true gains (exact:
    a sum over the grid points and, for each, the exact tree of evaluation outcomes)."""
    return float(sum(q * policy_value(known(p, i), oracle_rule) for i, q in enumerate(p.prior)))


def clairvoyant_value(p: GridProblem) -> float:
    """E over the prior of the best policy that knows the true gains (the DP of each point
    mass, so it still faces the evaluation noise): an upper bound on every policy's value,
    the DP's and `oracle_value`'s included. With an exact evaluation it equals
    `oracle_value` (one try of the best x_k − c_k, if positive)."""
    return float(sum(q * dp_value(known(p, i)) for i, q in enumerate(p.prior)))


BASELINES = ("index_prior", "index_posterior", "myopic")


def ceiling(p: GridProblem, dp: float | None = None) -> dict:
    """The exact values of one problem: the DP (`dp` when already computed), the exact
    baselines (Weitzman's index on the prior's marginals, the index on the node posterior,
    one-step look-ahead), the `oracle_safe` oracle and the clairvoyant optimum."""
    return {"dp": dp_value(p) if dp is None else dp,
            "index_prior": policy_value(p, weitzman_rule(p)),
            "index_posterior": policy_value(p, posterior_index_rule),
            "myopic": policy_value(p, myopic_rule),
            "oracle": oracle_value(p),
            "clairvoyant": clairvoyant_value(p)}


# --------------------------------------------------------------------------- the library's rule


RULES = ("q_cvu", "q_cvu@g0", "q_beta0", "q_cvu+tr", "pandora")


def node_draws(p: GridProblem, node: Node, num_draws: int, seed: int) -> np.ndarray:
    """[S, K] draws of X_k − X_inc (X_k when stacking; J units): counts by largest remainder
    of S·w, shuffled."""
    raw = node.w * num_draws
    counts = np.floor(raw).astype(int)
    short = num_draws - counts.sum()
    if short > 0:
        counts[np.argsort(-(raw - counts), kind="stable")[:short]] += 1
    pts = np.repeat(p.points, counts, axis=0)
    rel = pts - (pts[:, [node.inc]] if node.inc >= 0 and not p.stack else 0)
    rng = np.random.default_rng(seed)
    return rel[rng.permutation(len(rel))] * UNIT


class LibraryRule:
    """`decide` (or the `pandora` strategy's index) at every node; see the module docstring.

    Calls are cached per node (history): one instance evaluates one problem; the last decision
    is shared between the Q rules (CVU is 0 there for all of them).
    """

    def __init__(self, num_draws: int = 4000, cvu_samples: int = 256, seed: int = 0, options: dict | None = None):
        self.num_draws, self.cvu_samples, self.seed = num_draws, cvu_samples, seed
        self.options = dict(options or {})  # other decide options of the look-ahead rules
        self.cache: dict = {}
        self.calls = 0

    def _inputs(self, p: GridProblem, node: Node):
        import bayes_s2r as bs

        names = [f"m{k}" for k in range(p.k)]
        draws = node_draws(p, node, self.num_draws, self.seed)
        belief = bs.GainBelief.from_draws(names, draws)
        sd = max(p.noise_sd(), H / 8)
        cands = [bs.Candidate(names[k], "adaptation", "data", method=f"M{k}",
                              cost=bs.Cost(real=float(p.hours[k]), compute=float(p.cost[k])), repeatable=False,
                              outcome=bs.GaussianOutcome(noise_sd=sd)) for k in range(p.k)]
        left = p.budget - node.used if np.isfinite(p.budget) else 100.0
        budget = bs.Budget(real=max(left, 0.0), compute=100.0, eng=100.0)
        weights = bs.ResourceWeights(real=0.0, compute=1.0, eng=0.0, scarcity=0.0)
        j_now = J0 + stop_value(p, node)
        return names, draws, belief, cands, budget, weights, j_now

    def decide(self, p: GridProblem, node: Node, variant: str):
        """The library's choice at `node` (candidate index or None)."""
        import bayes_s2r as bs
        from bayes_s2r.decision.index import reservation_values
        from bayes_s2r.decision.transition import (
            AlternativesTransition,
            HeadroomTransition,
            NoTransition,
        )

        left = p.rounds - len(node.tried)
        myopic = variant in ("pandora", "q_beta0") or left <= 1  # CVU plays no part: one call serves all
        key = ("myopic" if myopic else variant, node.history)
        if key not in self.cache:
            names, draws, belief, cands, budget, weights, j_now = self._inputs(p, node)
            common = {"current_J": float(min(max(j_now, 0.0), 1.0)), "done": [names[k] for k in node.tried],
                          "utility": "adopt", "seed": self.seed, "transition": HeadroomTransition(repeat_share=0.0)}
            if myopic:
                d = bs.decide(belief, cands, budget, weights, beta=1.0, terminal=True, cvu_samples=2, **common)
            else:
                if variant == "q_cvu+tr":
                    common["transition"] = NoTransition() if p.stack else AlternativesTransition()
                d = bs.decide(belief, cands, budget, weights, beta=1.0, cvu_samples=self.cvu_samples,
                              continuation="g0" if variant == "q_cvu@g0" else "rollout", horizon=left - 1,
                              **common, **self.options)
            self.calls += 1
            self.cache[key] = (d, draws)
        d, draws = self.cache[key]
        if variant != "pandora":
            return None if d.best is None else int(d.best[1:])
        table = d.table
        feas = table["feasible"].to_numpy(bool)
        z = np.where(feas, reservation_values(draws, table["C_lambda"].to_numpy(float)), -np.inf)
        k = int(np.argmax(z))
        return k if feas.any() and z[k] > 0 else None

    def rule(self, variant: str) -> Rule:
        return lambda p, node: self.decide(p, node, variant)


def evaluate(p: GridProblem, rules=RULES, *, num_draws: int = 4000, cvu_samples: int = 256, seed: int = 0,
             check_index: bool = True, with_ceiling: bool = True, options: dict | None = None) -> dict:
    """DP value, Weitzman's index value (exact reveal), each library rule's exact value and
    (`with_ceiling`) the exact baselines and full-information values of `ceiling`."""
    out = {"problem": p.name, "dp": dp_value(p)}
    if p.exact and p.independent and np.isinf(p.budget) and p.rounds >= p.k and not p.stack:
        out["index"] = weitzman_value(p)
        if check_index and abs(out["index"] - out["dp"]) > 1e-9:
            raise AssertionError(f"{p.name}: DP {out['dp']} != Weitzman index value {out['index']}")
    lib = LibraryRule(num_draws=num_draws, cvu_samples=cvu_samples, seed=seed, options=options)
    for r in rules:
        out[r] = policy_value(p, lib.rule(r))
    out["decide_calls"] = lib.calls
    if with_ceiling:
        out.update(ceiling(p, dp=out["dp"]))
    return out
