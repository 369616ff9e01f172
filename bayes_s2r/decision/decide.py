"""`decide`: which candidate the next unit of budget goes to (DESIGN.md §2)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.lookahead import BaseAction, lookahead
from bayes_s2r.decision.objectives import rank_alternatives, secondary_gains, split_objectives
from bayes_s2r.decision.problem import build_problem
from bayes_s2r.decision.result import Decision
from bayes_s2r.decision.rollout import rollout_lookahead
from bayes_s2r.decision.stability import STOP, p_best, stop_score, weight_robustness
from bayes_s2r.decision.transition import resolve_transition
from bayes_s2r.errors import InputError
from bayes_s2r.vocab import RESOURCES, Budget, ResourceWeights, validate_candidates

__all__ = ["decide"]


def _config(config: DecideConfig | None, options: dict[str, Any]) -> DecideConfig:
    """One validated config from `config` and keyword overrides of its fields."""
    if config is not None and not isinstance(config, DecideConfig):
        raise InputError("config", config, "a DecideConfig or None")
    unknown = sorted(set(options) - set(DecideConfig._fields))
    if unknown:
        raise InputError(unknown[0], options[unknown[0]], f"an option among {list(DecideConfig._fields)}")
    base = {} if config is None else config._asdict()
    return DecideConfig.make(**{**base, **options})


def _lookahead_on(devices: Any, prob, cfg, rule):
    if devices is None:
        return lookahead(prob, cfg, rule)
    from bayes_s2r.decision.sharded import sharded_lookahead  # JAX's sharding, only when asked

    return sharded_lookahead(prob, cfg, rule, devices=devices)


def _fortified(best, q, stop_q, feasible, is_adapt, base: BaseAction | None, cfg: DecideConfig):
    """`best`, unless the rollout's base policy chose otherwise and `best` beats its choice by
    no more than `cfg.rollout_margin` Monte-Carlo standard errors: then the base policy's
    choice (a fortified rollout: the noise of the estimates must not make the rule worse than
    the policy it improves on). Only tries and the stop are weighed so: a diagnosis (a pilot,
    a safety probe) is worth what it changes in the few scenarios where it changes a later
    choice, so its error is large while its estimate is unbiased, and either side choosing one
    stands."""
    if base is None or cfg.rollout_margin <= 0:
        return best
    b = base.index
    if b == best or (b is not None and not feasible[b]) or any(i is not None and not is_adapt[i] for i in (b, best)):
        return best
    se = base.se_alone[b] if best is None else base.se_alone[best] if b is None else base.se_versus[best]
    lead = (stop_q if best is None else q[best]) - (stop_q if b is None else q[b])
    return best if lead > cfg.rollout_margin * cfg.beta * se else b


def _sure_diagnosis(best, q, stop_q, feasible, is_adapt, cvu_se, cfg: DecideConfig):
    """`best`, unless it is a diagnosis, no feasible try beats the stop, and the diagnosis beats
    the stop by no more than `cfg.diagnosis_margin` Monte-Carlo standard errors: then the stop.
    Against a try a diagnosis stands (what it tells is what makes the later try the right one)."""
    if cfg.diagnosis_margin <= 0 or best is None or is_adapt[best]:
        return best
    tries = feasible & is_adapt
    if tries.any() and q[tries].max() > stop_q:
        return best
    return best if q[best] - stop_q > cfg.diagnosis_margin * cfg.beta * float(np.nan_to_num(cvu_se[best])) else None


def decide(belief, candidates, budget: Budget, weights: ResourceWeights, *, risk: Any = None,
           config: DecideConfig | None = None, reference: Budget | None = None, current_J: float | None = None,
           done: Iterable[str] = (), transition=None, devices: Any = None, **options: Any) -> Decision:
    """Score every candidate and pick m_t* = argmax over the feasible set of Q = U0 + β·CVU.

    Args:
        belief: a `GainBelief` over the adaptation candidates' gains (columns
            "sensitivity:<k>" are observable quantities; columns "<name>@<objective>" are
            gains on secondary objectives), or a mapping objective -> GainBelief.
        candidates: the candidate set (`Candidate` objects).
        budget: remaining budget b_t.
        weights: resource weights; λ_t = weights.at(budget, reference).
        risk: anything with `ucb(name, delta) -> float` (a `RiskBelief`); None means no
            evidence of safety, so every candidate that touches the robot has UCB 1 and fails
            the gate (a safety probe's own protocol bound still applies to the probe).
        config: a `DecideConfig` (alpha_exec, delta, beta, cvu_samples, terminal, seed,
            utility, continuation, horizon, ...; see its fields). Any of its fields may also be
            given as a keyword (`beta=0.5`), which overrides the config's value.
        reference: the budget scarcity pricing compares with (usually the starting budget).
        current_J: current J; else belief.extra["baseline"]; else 0.5.
        done: names of candidates already run; non-repeatable ones are excluded.
        transition: rule for the gains after an adaptation; default `HeadroomTransition()`.
        devices: split the one-step look-ahead's posterior draws over devices (an int, a list
            of jax devices or a one-axis Mesh; see `bayes_s2r.distributed`). None runs on one
            device. The answer equals the one-device answer up to the order of floating-point
            sums.
        **options: `DecideConfig` fields.

    Returns:
        A `Decision`.

    Raises:
        InputError: bad input, naming the field, the value and what was expected.

    Example:
        >>> import bayes_s2r as bs
        >>> belief = bs.GainBelief.from_gaussian(["dr"], [0.1], [0.02], num_draws=2000)
        >>> cands = [bs.Candidate("dr", "adaptation", "data", cost=bs.Cost(compute=0.2))]
        >>> d = decide(belief, cands, bs.Budget(1, 10, 10), bs.ResourceWeights(), cvu_samples=32)
        >>> d.best, round(float(d.table.loc["dr", "U0"]), 2), d.stop_reason
        ('dr', 0.08, None)
    """
    cfg = _config(config, options)
    split = split_objectives(belief, cfg)
    rule = resolve_transition(transition)
    cands = validate_candidates(candidates)
    prob = build_problem(split.primary, cands, budget, weights, risk=risk, config=cfg,
                         reference=reference, current_J=current_J, done=done)
    sec = secondary_gains(split, cands, cfg)
    if cfg.continuation == "rollout":
        la = rollout_lookahead(prob, cands, budget, weights, reference, risk, cfg, rule)
    else:
        la = _lookahead_on(devices, prob, cfg, rule)

    meaningless = ~prob.affordable | prob.done  # no next state to speak of
    cvu = np.where(meaningless, np.nan, la.cvu)
    q = prob.u0 + cfg.beta * cvu
    feasible = prob.feasible
    # The stop is an action whose next state has no decision (G0 = 0), so on the Q scale it
    # scores U0 = 0 plus β·(0 − G0(s^∅)). Scoring it 0 instead would stop whenever the look-ahead
    # only says "do the best candidate later", e.g. at the last step the budget affords, where
    # every CVU is −G0(s^∅) and every Q ≤ 0. With it, the rule stops exactly when no candidate
    # has U0 + β·E[G0(s^{m,Y})] > 0.
    stop_q = stop_score(la.g0_null, cfg.beta)

    if not feasible.any():
        best = None
        remaining = prob.affordable & ~prob.done
        stop_reason = "budget" if budget.exhausted() or not remaining.any() else "no_feasible"
        rank, front = np.full(prob.size, np.nan), ()
    else:
        ranking = rank_alternatives(prob.names, q, feasible, sec, cfg, stop_q)
        best, rank, front = ranking.best, ranking.rank, ranking.front
        if len(split.objectives) == 1:
            best = _fortified(best, q, stop_q, feasible, prob.is_adapt, la.base, cfg)
            best = _sure_diagnosis(best, q, stop_q, feasible, prob.is_adapt, la.cvu_se, cfg)
        stop_reason = None if best is not None else "economic"

    draw_gains = np.where(prob.is_adapt[None, :], prob.draws[:, np.maximum(prob.gain_col, 0)], 0.0)
    if cfg.functional.exact_on_draws:  # e.g. "adopt": with θ the truth, what the evaluation keeps
        draw_gains = cfg.functional.of_draws(draw_gains, prob.kind, prob.a, prob.b)
    pb = p_best(prob.names, draw_gains, prob.c_lambda, np.nan_to_num(cvu), cfg.beta, feasible, stop_q)
    label = prob.names[best] if best is not None else STOP
    flip = float(1.0 - pb.get(label, 0.0))
    robust = weight_robustness(best, q, prob.cost, prob.lam, feasible, stop_q)

    table = pd.DataFrame({
        "role": prob.roles, "mu_dJ": prob.mu, "sd_dJ": prob.sd, "gain": prob.gain,
        "C_lambda": prob.c_lambda, "U0": prob.u0, "MV": prob.mv, "mv_reason": prob.mv_reason,
        "CVU": cvu, "cvu_se": np.where(meaningless, np.nan, la.cvu_se), "ess": la.ess,
        "ess_min": la.ess_min, "collapsed": la.collapsed, "Q": q, "ucb_exec": prob.ucb,
        "safe": prob.safe, "affordable": prob.affordable, "done": prob.done, "feasible": feasible,
        "excluded_reason": prob.excluded_reason,
    }, index=pd.Index(prob.names, name="candidate"))
    if len(split.objectives) > 1:
        table = table.join(sec)
        table["rank"] = rank
    table.attrs["utility"] = cfg.functional.label
    if la.base is not None:  # the rollout's base policy's own choice, which `rollout_margin` defers to
        table.attrs["base_choice"] = prob.names[la.base.index] if la.base.index is not None else None

    return Decision(
        table=table, best=prob.names[best] if best is not None else None, stop_reason=stop_reason,
        p_best=pb, flip_probability=flip, weight_robustness=robust,
        lambda_=pd.Series(prob.lam, index=list(RESOURCES), name="lambda"), utility=cfg.utility,
        utility_level=cfg.utility_level, objectives=split.objectives,
        front=front if len(split.objectives) > 1 else (), j_now=prob.j_now, j_source=prob.j_source,
        g0_null=la.g0_null, transition=repr(rule), config=cfg,
    )
