"""Choosers: the rule that picks a round's candidate, the toolkit's and the usual alternatives.

A chooser is a callable `chooser(state, ledger, *, seed) -> Choice`. The campaign loop
(`run_round(..., chooser=...)`) runs whichever it is handed and records its choice the same
way, so strategies can be compared on equal terms: same candidates, same budget, same
executor, same adoption rule (a policy is adopted only when its paired evaluation shows it better).

| id            | rule                                                                        |
| ------------- | --------------------------------------------------------------------------- |
| `q_cvu`       | the toolkit: argmax Q = U0 + β·CVU (Monte-Carlo look-ahead), economic stop  |
| `q_beta0`     | the same with β = 0 (myopic U0)                                              |
| `mv_greedy`   | argmax MV = μ/C_λ over the feasible set; stops when the best MV ≤ 1         |
| `thompson`    | one posterior draw θ; argmax θ_m − C_λ(m); stops where `q_beta0` stops      |
| `pandora`     | Weitzman's index: argmax reservation value z_m, E[(ΔJ_m − z_m)^+] = C_λ(m)  |
|               | over the posterior draws; stops when no z_m is above 0                      |
| `dr_only`     | fixed recipe: DR, repeated                                                   |
| `si_then_dr`  | fixed recipe: SI once, then DR repeated                                      |
| `dr_then_ft`  | fixed recipe: DR once, then real fine-tuning repeated                        |
| `round_robin` | cycles over the methods of the candidate set                                 |
| `oracle`      | knows each candidate's true gain in the current state; argmax true ΔJ − C_λ |
| `oracle_safe` | the oracle restricted to the toolkit's feasible set (budget and safety gate);|
|               | it runs a safety probe first when the gated candidate is worth the probe    |

The belief-based rules (`q_cvu`, `q_beta0`, `mv_greedy`, `thompson`, `pandora`) read the same fitted
belief and the same feasible set (budget and execution-safety gate) from `decide`. The
recipes and round-robin are what teams run without a belief: they respect the budget and
non-repeatable candidates but compute no safety bound and never take an economic stop.
The oracle is an upper reference for the choice only: it sees the true gains but not the
true risks, so it gates nothing either. `oracle_safe` is the reference for a rule that must
respect the execution-safety gate: the best any chooser could do with the same gate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import pandas as pd

from bayes_s2r.decision.problem import priced
from bayes_s2r.errors import InputError

__all__ = [
    "RECIPES",
    "STRATEGY_IDS",
    "Choice",
    "Chooser",
    "make_chooser",
    "mv_greedy",
    "oracle",
    "pandora",
    "recipe",
    "round_robin",
    "synthetic_true_gains",
    "thompson",
    "toolkit",
]

#: Every strategy id `make_chooser` knows, the toolkit's rule first.
STRATEGY_IDS = ("q_cvu", "q_beta0", "mv_greedy", "dr_only", "si_then_dr", "dr_then_ft", "round_robin",
                "thompson", "pandora", "oracle", "oracle_safe")

#: The fixed recipes as method sequences; the last step repeats.
RECIPES: dict[str, tuple[str, ...]] = {"dr_only": ("DR",), "si_then_dr": ("SI", "DR"), "dr_then_ft": ("DR", "FT")}


class Choice(NamedTuple):
    """What a chooser decided in one round (reads like a `Decision` where they overlap).

    Attributes:
        best: the candidate to run, or None for a stop.
        stop_reason: None, "economic", "budget" or "no_feasible".
        table: DataFrame indexed by candidate name with at least `feasible`; rules that
            score candidates add their scores.
        rule: the strategy id.
        decision: the toolkit's `Decision` when the rule called `decide`, else None.
        belief: the `GainBelief` the rule used, else None.
        p_best: share of posterior draws in which each candidate wins (toolkit rule only).
        flip_probability: 1 − p_best of the choice (NaN where not computed).
        lambda_: the resource weights λ_t used to price candidates.
        utility: the decision functional's name.
    """

    best: str | None
    stop_reason: str | None
    table: pd.DataFrame
    rule: str
    decision: Any = None
    belief: Any = None
    p_best: Mapping[str, float] = {}
    flip_probability: float = math.nan
    lambda_: Sequence[float] = ()
    utility: str = "mean"


class Chooser(Protocol):
    """A round's decision rule."""

    def __call__(self, state, ledger, *, seed: int) -> Choice:
        """Pick the candidate for `state` (the evidence is in `ledger`)."""


# --------------------------------------------------------------------------- shared pieces

def _decide(state, ledger, seed: int, *, beta: float, terminal: bool | None = None):
    from bayes_s2r.campaign.loop import round_decision

    # with β = 0 the look-ahead does not enter Q (nor the stop's score): skip it
    return round_decision(state, ledger, seed, beta=beta, terminal=True if beta == 0 else terminal,
                          cvu_samples=state.config.cvu_samples if beta > 0 else 2)


def _from_decision(decision, belief, rule: str, best: str | None, stop_reason: str | None,
                   table: pd.DataFrame | None = None) -> Choice:
    return Choice(best=best, stop_reason=stop_reason, table=decision.table if table is None else table,
                  rule=rule, decision=decision, belief=belief, p_best=dict(decision.p_best),
                  flip_probability=float(decision.flip_probability),
                  lambda_=tuple(float(x) for x in decision.lambda_), utility=decision.utility)


def _plain_table(state) -> tuple[pd.DataFrame, np.ndarray]:
    """Budget feasibility without a belief: affordable, not a spent non-repeatable, adaptation."""
    cfg = state.config
    lam = np.asarray(cfg.weights.at(state.budget, cfg.budget), float)
    rows = {}
    for c in state.candidates:
        affordable = bool(state.budget.covers(c.cost))
        done = (not c.repeatable) and c.name in state.done
        c_lambda = float(priced(lam, c.cost.as_array()))
        rows[c.name] = {"role": c.role, "method": c.method, "C_lambda": c_lambda, "affordable": affordable,
                        "done": done, "feasible": affordable and not done and c.role == "adaptation"}
    return pd.DataFrame.from_dict(rows, orient="index"), lam


def _plain(state, rule: str, best: str | None, table: pd.DataFrame, lam) -> Choice:
    if best is None:
        stop = "budget" if state.budget.exhausted() or not table["affordable"].any() else "no_feasible"
    else:
        stop = None
    return Choice(best=best, stop_reason=stop, table=table, rule=rule, lambda_=tuple(float(x) for x in lam))


def _argmax(table: pd.DataFrame, column: str) -> str | None:
    pool = table[table["feasible"].astype(bool) & np.isfinite(table[column].astype(float))]
    if pool.empty:
        return None
    return str(pool[column].astype(float).idxmax())  # ties: the first in candidate order


# --------------------------------------------------------------------------- the rules

def toolkit(beta: float | None = None, rule: str | None = None) -> Chooser:
    """The toolkit's rule: `decide` with the campaign's β (or `beta`), as `run_round` runs it."""
    if beta is not None and (isinstance(beta, bool) or not isinstance(beta, (int, float)) or beta < 0):
        raise InputError("beta", beta, "a number >= 0 or None (the campaign's β)")
    name = rule or ("q_cvu" if beta is None or beta > 0 else "q_beta0")

    def choose(state, ledger, *, seed: int) -> Choice:
        b = state.config.beta if beta is None else float(beta)
        decision, belief = _decide(state, ledger, seed, beta=b)
        return _from_decision(decision, belief, name, decision.best, decision.stop_reason)

    return choose


def mv_greedy() -> Chooser:
    """Best posterior gain per weighted cost among the feasible adaptations."""

    def choose(state, ledger, *, seed: int) -> Choice:
        decision, belief = _decide(state, ledger, seed, beta=0.0, terminal=True)
        table = decision.table.copy()
        best = _argmax(table, "MV")
        if best is None:
            stop = decision.stop_reason or "no_feasible"
        elif float(table.loc[best, "MV"]) <= 1.0:  # the best buy does not pay its own price
            best, stop = None, "economic"
        else:
            stop = None
        return _from_decision(decision, belief, "mv_greedy", best, stop, table)

    return choose


def thompson() -> Chooser:
    """Thompson sampling on the gains: one posterior draw, priced like U0.

    The draw chooses among the feasible candidates; whether to stop is the posterior-mean
    economic stop of `q_beta0`. Sampling does not define a stop, and stopping whenever one
    draw prices every candidate below its cost ended 35 of 150 campaigns of the scarce
    allocation benchmark in their first round, which would make this baseline a straw man.
    """

    def choose(state, ledger, *, seed: int) -> Choice:
        decision, belief = _decide(state, ledger, seed, beta=0.0, terminal=True)
        table = decision.table.copy()
        rng = np.random.default_rng(seed)
        draw = belief.draws[rng.integers(belief.draws.shape[0])]
        theta = dict(zip(belief.names, np.asarray(draw, float), strict=True))
        table["theta"] = [theta.get(n, 0.0) if r == "adaptation" else 0.0 for n, r in zip(table.index, table["role"],
                                                                                          strict=True)]
        table["sampled_U0"] = table["theta"] - table["C_lambda"]
        best = _argmax(table, "sampled_U0") if decision.best is not None else None
        stop = None if best is not None else decision.stop_reason or "no_feasible"
        return _from_decision(decision, belief, "thompson", best, stop, table)

    return choose


def pandora() -> Chooser:
    """Weitzman's Pandora's-box rule on the belief: try the feasible adaptation with the
    largest reservation value z (E[(ΔJ − z)^+] = C_λ, exactly over the posterior draws) and
    stop when no z is above 0, the gain of keeping the deployed policy. It is the optimal
    policy when tries are independent, exactly observed and a tried policy is kept only if
    better (Weitzman 1979); it ignores evaluation noise and what a diagnosis would show."""
    from bayes_s2r.decision.index import reservation_values

    def choose(state, ledger, *, seed: int) -> Choice:
        decision, belief = _decide(state, ledger, seed, beta=0.0, terminal=True)
        table = decision.table.copy()
        price = table["C_lambda"].astype(float)
        pool = [n for n in table.index if table.loc[n, "role"] == "adaptation" and n in belief.names
                and np.isfinite(price[n])]
        table["z"] = np.nan
        if pool:
            draws = np.column_stack([belief.column(n) for n in pool])
            table.loc[pool, "z"] = reservation_values(draws, price[pool].to_numpy())
        best = _argmax(table, "z")
        if best is None:
            stop = decision.stop_reason or "no_feasible"
        elif float(table.loc[best, "z"]) <= 0.0:  # no try is worth more than keeping what is deployed
            best, stop = None, "economic"
        else:
            stop = None
        return _from_decision(decision, belief, "pandora", best, stop, table)

    return choose


def _executed(state) -> int:
    return sum(1 for h in state.history if h.chosen is not None)


def recipe(methods: Sequence[str], rule: str = "recipe") -> Chooser:
    """A fixed recipe: the methods in order, the last one repeated until budget or rounds run out.

    Each step runs the first candidate of that method in the candidate set; a step that cannot
    run (unaffordable, or a non-repeatable candidate already run) is skipped.
    """
    methods = tuple(methods)
    if not methods or not all(isinstance(m, str) and m for m in methods):
        raise InputError("methods", methods, "a non-empty sequence of method labels such as ('SI', 'DR')")

    def choose(state, ledger, *, seed: int) -> Choice:
        table, lam = _plain_table(state)
        step = min(_executed(state), len(methods) - 1)
        best = None
        for m in methods[step:]:
            rows = table[(table["method"] == m) & table["feasible"]]
            if not rows.empty:
                best = str(rows.index[0])
                break
        table["step"] = step
        return _plain(state, rule, best, table, lam)

    return choose


def round_robin() -> Chooser:
    """Cycle over the adaptation methods in candidate order; skip a method that cannot run."""

    def choose(state, ledger, *, seed: int) -> Choice:
        table, lam = _plain_table(state)
        adapt = table[table["role"] == "adaptation"]
        methods = list(dict.fromkeys(m for m in adapt["method"] if m is not None))
        if not methods:
            return _plain(state, "round_robin", None, table, lam)
        start = _executed(state) % len(methods)
        best = None
        for i in range(len(methods)):
            rows = table[(table["method"] == methods[(start + i) % len(methods)]) & table["feasible"]]
            if not rows.empty:
                best = str(rows.index[0])
                break
        return _plain(state, "round_robin", best, table, lam)

    return choose


def oracle(true_gains: Callable[[Any, Any], Mapping[str, float]], *, gated: bool = False) -> Chooser:
    """The upper reference: argmax of the true gain minus C_λ; stops when none is positive.

    Args:
        true_gains: `true_gains(state, ledger) -> {candidate name: true ΔJ of running it now}`
            (e.g. `SyntheticExecutor`'s world, or a tabulated testbed).
        gated: choose only among the candidates `decide` finds feasible (budget and the
            execution-safety gate, from the same evidence the toolkit's rule sees).
    """
    if not callable(true_gains):
        raise InputError("true_gains", true_gains, "a callable (state, ledger) -> {name: true gain}")
    rule = "oracle_safe" if gated else "oracle"

    def choose(state, ledger, *, seed: int) -> Choice:
        table, lam = _plain_table(state)
        gains = true_gains(state, ledger)
        table["true_dJ"] = [float(gains.get(n, 0.0)) if r == "adaptation" else 0.0
                            for n, r in zip(table.index, table["role"], strict=True)]
        table["true_U0"] = table["true_dJ"] - table["C_lambda"]
        probe = None
        if gated:  # the execution-safety gate of `decide`, from the same evidence
            probe = _gate(state, ledger, table)
        best = probe or _argmax(table, "true_U0")
        if probe is None and best is not None and float(table.loc[best, "true_U0"]) <= 0.0:
            return Choice(None, "economic", table, rule, lambda_=tuple(float(x) for x in lam))
        return _plain(state, rule, best, table, lam)

    return choose


def _gate(state, ledger, table: pd.DataFrame) -> str | None:
    """Apply `decide`'s execution-safety gate to `table`; return a safety probe worth running.

    The oracle knows the gains but not the risks: where the best candidate by true U0 is
    shut by the gate and an affordable probe of it costs less than what it would add over
    the best open candidate, it runs the probe (which may find the candidate unsafe).
    """
    from bayes_s2r.belief import fit_exec_risk
    from bayes_s2r.decision.problem import exec_gate
    from bayes_s2r.evidence.records import ExecutionOutcome

    cfg = state.config
    risk = fit_exec_risk(ledger.records(ExecutionOutcome), state.candidates, sim_prior=cfg.sim_risk_prior or None)
    table["safe"] = [exec_gate(c, risk, alpha_exec=cfg.alpha_exec, delta=cfg.delta)[2] for c in state.candidates]
    shut = table[table["feasible"] & ~table["safe"]]
    table["feasible"] = table["feasible"] & table["safe"]
    open_best = max([0.0, *table.loc[table["feasible"], "true_U0"].astype(float)])
    done = set(state.done)
    best_probe, best_value = None, open_best
    for c in state.candidates:
        target = c.observed_safety
        if (target is None or target not in shut.index or c.name in done or risk.executions.get(target, 0) > 0
                or not state.budget.covers(c.cost)):
            continue  # probed before: what it showed is in the gate
        value = float(shut.loc[target, "true_U0"]) - float(priced(np.asarray(state.config.weights.at(
            state.budget, cfg.budget)), c.cost.as_array()))
        if value > best_value:
            best_probe, best_value = c.name, value
    return best_probe


def synthetic_true_gains(executor) -> Callable[[Any, Any], Mapping[str, float]]:
    """True gains of a `SyntheticExecutor`'s world at the deployed policy (for `oracle`)."""
    from bayes_s2r.campaign.loop import executor_memory

    def gains(state, ledger) -> dict[str, float]:
        J = float(executor_memory(ledger).get("true_J", {}).get(state.policy, executor.world.start_J))
        return {c.name: float(np.clip(J + executor.world.true_gain(c.name, J), 0.0, 1.0) - J)
                for c in state.candidates if c.role == "adaptation"}

    return gains


def make_chooser(strategy: str, *, true_gains: Callable | None = None) -> Chooser:
    """The chooser of a strategy id (see the module table); the oracles need `true_gains`."""
    if strategy not in STRATEGY_IDS:
        raise InputError("strategy", strategy, f"one of {STRATEGY_IDS}")
    if strategy == "q_cvu":
        return toolkit()
    if strategy == "q_beta0":
        return toolkit(beta=0.0)
    if strategy == "mv_greedy":
        return mv_greedy()
    if strategy == "thompson":
        return thompson()
    if strategy == "round_robin":
        return round_robin()
    if strategy == "pandora":
        return pandora()
    if strategy in RECIPES:
        return recipe(RECIPES[strategy], rule=strategy)
    if true_gains is None:
        raise InputError("true_gains", None, "a callable (state, ledger) -> {name: true gain} for the oracle")
    return oracle(true_gains, gated=strategy == "oracle_safe")
