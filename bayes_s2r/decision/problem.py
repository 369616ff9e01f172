"""From (belief, candidates, budget, weights, risk) to the numbers of the decision rule.

Everything here is plain NumPy at the boundary: validation, the per-candidate scores of
DESIGN.md §2 (μ_ΔJ, C_λ, U0, MV, gates) and the description of every next state
s^{m,Y} the look-ahead needs (deducted budget, re-priced λ, recomputed feasible set,
which belief column each experiment observes and through which outcome model).
Costs are priced only through `ResourceWeights.at`, once per state.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from bayes_s2r.belief.outcomes import OUTCOME_KINDS
from bayes_s2r.belief.posterior import GainBelief
from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.errors import InputError
from bayes_s2r.vocab import RESOURCES, Budget, Candidate, ResourceWeights, validate_candidates

__all__ = ["SENSITIVITY_PREFIX", "Problem", "build_problem", "current_j", "exec_gate", "priced", "probe_risk_bound"]

SENSITIVITY_PREFIX = "sensitivity:"
_DEFAULT_J = 0.5
#: `current_j`'s source when neither the caller nor the belief knows J
DEFAULT_J_SOURCE = "default 0.5"


class Problem(NamedTuple):
    """The scored candidate set at s_t and the next states s^{m,·}. Arrays are indexed by candidate.

    Attributes:
        names, roles: candidate names and roles.
        mu: posterior mean gain μ_ΔJ (exactly 0 for diagnosis and model_update).
        sd: posterior sd of the gain (0 for diagnosis and model_update).
        gain: the decision functional of the gain (μ for utility "mean").
        cost: ΔC [M, 3]; lam: λ_t [3]; c_lambda: λ_t·ΔC [M]; u0: gain − C_λ.
        mv, mv_reason: μ/C_λ, NaN with a reason where undefined.
        ucb, safe: execution-risk UCB (NaN for candidates that do not touch the robot) and gate.
        affordable, done, feasible: ΔC ≤ b_t; already run and not repeatable (or a diagnosis of
            such a candidate); the feasible set.
        excluded_reason: why each infeasible candidate is out ("" when feasible).
        repeatable, is_adapt: flags.
        gain_col: belief column of each adaptation's gain (−1 otherwise).
        obs_col, obs_sign, kind, a, b: the observed column (−1: nothing), its sign, and the
            outcome model's `(kind, a, b)` parameters.
        lam_next [M, 3], cost_next [M, M], feas_next [M, M]: λ, priced costs C_λ(c) and
            feasibility of c in the state after m ran (budget b_t − ΔC(m)).
        feas_next2, cost_next2 [M, M, M]: the same after m and then m' ran (indexed
            [m, m', c]); None unless the config's look-ahead depth is 2.
        j_now, j_source: current J and where it came from.
        draws: the belief's draws [S, P]; columns: the belief's names.
    """

    names: tuple[str, ...]
    roles: tuple[str, ...]
    mu: np.ndarray
    sd: np.ndarray
    gain: np.ndarray
    cost: np.ndarray
    lam: np.ndarray
    c_lambda: np.ndarray
    u0: np.ndarray
    mv: np.ndarray
    mv_reason: tuple[str, ...]
    ucb: np.ndarray
    safe: np.ndarray
    affordable: np.ndarray
    done: np.ndarray
    feasible: np.ndarray
    excluded_reason: tuple[str, ...]
    repeatable: np.ndarray
    is_adapt: np.ndarray
    gain_col: np.ndarray
    obs_col: np.ndarray
    obs_sign: np.ndarray
    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray
    lam_next: np.ndarray
    cost_next: np.ndarray
    feas_next: np.ndarray
    feas_next2: np.ndarray | None
    cost_next2: np.ndarray | None
    j_now: float
    j_source: str
    draws: np.ndarray
    columns: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.names)


def current_j(belief: GainBelief, current_J: float | None) -> tuple[float, str]:
    """J_now from `current_J`, else `belief.extra["baseline"]`, else 0.5 (and where it came from)."""
    if current_J is not None:
        if isinstance(current_J, bool) or not isinstance(current_J, (int, float, np.floating)) or not (
            0.0 <= float(current_J) <= 1.0
        ):
            raise InputError("current_J", current_J, "a utility in [0, 1] or None")
        return float(current_J), "current_J"
    base = getattr(belief, "extra", {}).get("baseline")
    if base is not None and np.ndim(base) == 0 and math.isfinite(float(base)):
        return float(min(max(float(base), 0.0), 1.0)), "belief.extra['baseline']"
    return _DEFAULT_J, DEFAULT_J_SOURCE


def _check_inputs(belief, budget, weights, reference, config: DecideConfig) -> None:
    from bayes_s2r.belief.posterior import check_gain_range

    if not isinstance(belief, GainBelief):
        raise InputError("belief", belief, "a GainBelief")
    # a belief built by hand (or by a fit) may still hold overflowed or mis-scaled draws;
    # every score and rank below assumes gains on the success-rate scale
    check_gain_range(belief.names, belief.draws, "belief.draws")
    if not isinstance(budget, Budget):
        raise InputError("budget", budget, "a Budget")
    if not isinstance(weights, ResourceWeights):
        raise InputError("weights", weights, "a ResourceWeights")
    if reference is not None and not isinstance(reference, Budget):
        raise InputError("reference", reference, "a Budget or None")
    diag = getattr(belief, "diagnostics", {}) or {}
    if not diag.get("ok", False) and not config.allow_bad_belief:
        raise InputError("belief.diagnostics", diag.get("reason") or diag,
                         "a belief whose diagnostics are ok (or allow_bad_belief=True)")


def _done_names(done: Any) -> set[str]:
    if isinstance(done, str) or not isinstance(done, Iterable):
        raise InputError("done", done, "a list of candidate names already run")
    out = set()
    for i, n in enumerate(done):
        if not isinstance(n, str):
            raise InputError(f"done[{i}]", n, "a candidate name")
        out.add(n)
    return out


def probe_risk_bound(c: Candidate) -> float | None:
    """The known execution-risk bound of a safety probe's own protocol (None: not a probe)."""
    if c.observed_safety is None or c.outcome is None or c.outcome.params()[0] != OUTCOME_KINDS["safety_probe"]:
        return None
    return float(c.outcome.params()[2])


def _exec_ucb(c: Candidate, risk: Any, delta: float) -> tuple[float, str]:
    if not c.touches_robot:
        return math.nan, ""
    known = probe_risk_bound(c)
    if risk is None:
        return (known, "") if known is not None else (1.0, "no execution-risk evidence (risk=None)")
    if known is not None and getattr(risk, "executions", {}).get(c.name, 0) == 0:
        return known, ""  # a probe's own protocol bounds its risk until it has records of its own
    if not hasattr(risk, "ucb"):
        raise InputError("risk", risk, "a RiskBelief (anything with ucb(name, delta)) or None")
    try:
        u = risk.ucb(c.name, delta)
    except (KeyError, InputError):
        return 1.0, "no execution-risk evidence for it"
    if isinstance(u, bool) or not isinstance(u, (int, float, np.floating)) or not 0.0 <= float(u) <= 1.0:
        raise InputError(f"risk.ucb({c.name!r})", u, "a probability bound in [0, 1]")
    return float(u), ""


def exec_gate(c: Candidate, risk: Any, *, alpha_exec: float, delta: float) -> tuple[float, str, bool]:
    """The execution-safety gate of one candidate: (UCB_{1−δ}[P_exec(unsafe)] or NaN for a
    candidate that does not touch the robot, why there is no bound, whether it passes)."""
    ucb, why = _exec_ucb(c, risk, delta)
    return ucb, why, not c.touches_robot or ucb <= alpha_exec


def _observes_spent(c: Candidate, by_name: dict[str, Candidate], done: set[str]) -> bool:
    """A diagnosis of an adaptation that has run and cannot run again: what it would measure
    can no longer be acted on."""
    target = by_name.get(c.observes) if c.role == "diagnosis" else None
    return target is not None and target.name in done and not target.repeatable


def _observation(c: Candidate, by_name: dict[str, Candidate], col: dict[str, int], j_known: bool,
                 j_now: float, index: int) -> tuple[int, float, int, float, float]:
    """(column, sign, kind, a, b) of what running `c` observes."""
    out = c.outcome
    if out is None or c.observed_safety is not None:  # a probe observes a risk, not a gain
        return -1, 1.0, OUTCOME_KINDS["none"], 0.0, 0.0
    if c.role == "adaptation":
        target = c.name
    elif c.observes is None:
        return -1, 1.0, OUTCOME_KINDS["none"], 0.0, 0.0
    else:
        target = c.observes
    if target.startswith(SENSITIVITY_PREFIX):
        if target not in col:
            raise InputError(f"candidates[{index}].observes", target,
                             f"a column of the belief (has {sorted(k for k in col if k.startswith(SENSITIVITY_PREFIX))})")
    elif by_name[target].role != "adaptation":
        raise InputError(f"candidates[{index}].observes", target,
                         "an adaptation candidate's gain or 'sensitivity:<direction>'")
    kind, a, b = out.params()
    if kind == OUTCOME_KINDS["binomial_paired"] and j_known:
        b = j_now  # the control arm runs the current policy
    # A sensitivity trial's perturbed arm loses Ŝ_k: success probability baseline − Ŝ_k.
    sign = -1.0 if (target.startswith(SENSITIVITY_PREFIX) and kind == OUTCOME_KINDS["binomial_paired"]) else 1.0
    return col[target], sign, int(kind), float(a), float(b)


def priced(lam: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """λ·ΔC summed over resources, a resource not used costing 0 even at an infinite price.

    Scarcity pricing makes λ infinite for an exhausted resource; a candidate that needs none
    of it is still priced by the others (0·∞ would be NaN).
    """
    with np.errstate(invalid="ignore"):
        return np.where(cost > 0, lam * cost, 0.0).sum(-1)


def build_problem(belief: GainBelief, candidates, budget: Budget, weights: ResourceWeights, *,
                  risk: Any, config: DecideConfig, reference: Budget | None,
                  current_J: float | None, done: Iterable[str]) -> Problem:
    """Validate the inputs and score every candidate at s_t; describe every next state."""
    _check_inputs(belief, budget, weights, reference, config)
    cands = validate_candidates(candidates)
    done_set = _done_names(done)
    by_name = {c.name: c for c in cands}
    col = {n: i for i, n in enumerate(belief.names)}
    j_now, j_source = current_j(belief, current_J)
    j_known = j_source != DEFAULT_J_SOURCE
    m = len(cands)

    draws = np.asarray(belief.draws, dtype=np.float64)
    mean_all, sd_all = draws.mean(0), draws.std(0)
    is_adapt = np.array([c.role == "adaptation" for c in cands])
    gain_col = np.full(m, -1, dtype=np.int32)
    for i, c in enumerate(cands):
        if c.role == "adaptation":
            if c.name not in col:
                raise InputError("belief.names", c.name,
                                 f"a column for every adaptation candidate (belief has {list(belief.names)})")
            gain_col[i] = col[c.name]
    mu = np.where(is_adapt, mean_all[np.maximum(gain_col, 0)], 0.0)
    sd = np.where(is_adapt, sd_all[np.maximum(gain_col, 0)], 0.0)

    obs = [_observation(c, by_name, col, j_known, j_now, i) for i, c in enumerate(cands)]
    obs_col = np.array([o[0] for o in obs], np.int32)
    obs_sign = np.array([o[1] for o in obs])
    kind = np.array([o[2] for o in obs], np.int32)
    a = np.array([o[3] for o in obs])
    b = np.array([o[4] for o in obs])

    utility = config.functional
    if utility.exact_on_draws:  # the draws respect ΔJ ≤ 1 − J, which a Gaussian would not
        gain = np.where(is_adapt, utility.of_draws(draws[:, np.maximum(gain_col, 0)], kind, a, b).mean(0), 0.0)
    else:
        gain = utility.of_moments(mu, sd)

    cost = np.stack([c.cost.as_array() for c in cands])
    lam = np.asarray(weights.at(budget, reference), dtype=np.float64)
    c_lambda = priced(lam, cost)
    u0 = gain - c_lambda
    mv = np.full(m, math.nan)
    mv_reason = []
    for i, c in enumerate(cands):
        if c.role != "adaptation":
            mv_reason.append(f"undefined: role {c.role} (gain 0 by definition)")
        elif c_lambda[i] <= 0:
            mv_reason.append("undefined: zero priced cost C_λ = 0")
        else:
            mv[i] = mu[i] / c_lambda[i]
            mv_reason.append("")

    ucb, safe, affordable, done_arr, reasons = np.zeros(m), np.ones(m, bool), np.ones(m, bool), np.zeros(m, bool), []
    for i, c in enumerate(cands):
        ucb[i], why, safe[i] = exec_gate(c, risk, alpha_exec=config.alpha_exec, delta=config.delta)
        affordable[i] = budget.covers(c.cost)
        done_arr[i] = c.name in done_set and not c.repeatable
        r = []
        if done_arr[i]:
            r.append("already run (not repeatable)")
        elif _observes_spent(c, by_name, done_set):
            done_arr[i] = True
            r.append(f"observes {c.observes!r}, which has run and is not repeatable")
        if not safe[i]:
            r.append(f"unsafe: execution-risk UCB {ucb[i]:.3g} > alpha_exec {config.alpha_exec:g}"
                     + (f" ({why})" if why else ""))
        if not affordable[i]:
            short = [f"{res} {need:g} > {have:g}" for res, need, have in
                     zip(RESOURCES, c.cost.as_array(), budget.as_array()) if need > have + 1e-12]
            r.append("unaffordable: " + ", ".join(short))
        reasons.append("; ".join(r))
    feasible = safe & affordable & ~done_arr

    repeatable = np.array([c.repeatable for c in cands])
    observers = np.array([[x.role == "diagnosis" and x.observes == c.name for x in cands] for c in cands])

    def after(ran: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """λ and the feasible set once the candidates `ran` have run."""
        left = budget
        feas = safe & ~done_arr
        for i in ran:
            left = left.spend(cands[i].cost)  # floored: only an unaffordable run would go below 0
            if not cands[i].repeatable:
                feas[i] = False
                feas[observers[i]] = False  # nothing left to act on what they would measure
        return weights.at(left, reference), feas & np.array([left.covers(x.cost) for x in cands])

    lam_next, feas_next = (np.stack(x) for x in zip(*(after((i,)) for i in range(m))))
    cost_next = priced(lam_next[:, None, :], cost[None, :, :])
    feas_next2 = cost_next2 = None
    if config.lookahead_depth >= 2:
        pairs = [after((i, k)) for i in range(m) for k in range(m)]
        feas_next2 = np.stack([f for _, f in pairs]).reshape(m, m, m)
        cost_next2 = priced(np.stack([lam for lam, _ in pairs])[:, None, :], cost[None]).reshape(m, m, m)

    return Problem(
        names=tuple(c.name for c in cands), roles=tuple(c.role for c in cands), mu=mu, sd=sd,
        gain=gain, cost=cost, lam=lam, c_lambda=c_lambda, u0=u0, mv=mv, mv_reason=tuple(mv_reason),
        ucb=ucb, safe=safe, affordable=affordable, done=done_arr, feasible=feasible,
        excluded_reason=tuple(reasons), repeatable=repeatable, is_adapt=is_adapt, gain_col=gain_col,
        obs_col=obs_col, obs_sign=obs_sign, kind=kind, a=a, b=b, lam_next=lam_next,
        cost_next=cost_next, feas_next=feas_next, feas_next2=feas_next2, cost_next2=cost_next2,
        j_now=j_now, j_source=j_source, draws=draws,
        columns=tuple(belief.names),
    )
