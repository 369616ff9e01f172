"""Campaign configuration: the budget, prices, gates and loop settings, stored in the ledger."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from bayes_s2r.decision.config import CONTINUATIONS, UTILITIES
from bayes_s2r.decision.transition import HeadroomTransition
from bayes_s2r.errors import InputError, require_finite_nonneg
from bayes_s2r.vocab import Budget, ResourceWeights

__all__ = ["CampaignConfig"]

_FIT_METHODS = ("nuts", "svi")


def _prob(field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise InputError(field, value, "a probability strictly between 0 and 1")
    return float(value)


def _count(field: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(field, value, f"a whole number >= {minimum}")
    return value


def _gain_prior(value: Any, field: str = "config.fit_options.prior"):
    """A `GainPrior` from itself or from a mapping of its fields (as stored in the ledger);
    `field` names the input in errors."""
    from bayes_s2r.models.gains import GainPrior

    if isinstance(value, GainPrior):
        return value
    fields = {f.name for f in dataclasses.fields(GainPrior)}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InputError(field, value, "a GainPrior or a mapping of its fields")
    unknown = sorted(set(value) - fields)
    if unknown:
        raise InputError(f"{field}.{unknown[0]}", value[unknown[0]], f"a field among {sorted(fields)}")
    return GainPrior(**value)


@dataclasses.dataclass(frozen=True)
class CampaignConfig:
    """Everything a campaign needs besides its candidates and its executor.

    Args:
        budget: the starting budget b_0 (also the reference for scarcity pricing).
        weights: resource weights λ0 and the scarcity exponent.
        alpha_exec: execution-risk level of the candidate gate.
        alpha_deploy: deployment-risk level the terminal policy must meet.
        delta: one minus the confidence of both upper bounds.
        beta: weight of the look-ahead value CVU in Q.
        cvu_samples: simulated outcomes per candidate in the look-ahead.
        max_rounds: round limit; the last round is terminal (CVU = 0).
        fit_method: "nuts" (exact, slower) or "svi" (fast) for the gain posterior.
        utility: the decision functional ("mean", "lcb", "cvar", "adopt"). Default "adopt":
            the loop keeps a new policy only when its paired evaluation shows it better, so
            a try is worth E[max(ΔJ, 0)] and not E[ΔJ]; with `accept_regressions=True` the
            plain "mean" is the matching functional.
        deploy_episodes: episodes of the deployment evaluation at the stop.
        accept_regressions: adopt an adaptation's policy even when its paired evaluation
            does not show it better than the current one (default False: a lab does not
            deploy a measured regression, and a tie keeps the incumbent; the evidence is
            kept either way).
        allow_bad_belief: decide on a belief that failed its diagnostics.
        fit_options: further keyword arguments of `fit_gains` (e.g. svi_steps, num_samples,
            prior). `prior` is a `GainPrior` or a mapping of its fields; it is stored in the
            ledger as that mapping, so a resumed campaign fits with the same prior.
        seed: the campaign's seed; round t uses a key folded from it and t.
        repeat_share: what the look-ahead expects a repeat of the adaptation just deployed
            to bring, as a share of its first gain (`HeadroomTransition.repeat_share`).
            Default 0: what the adaptation fixed is in the deployed policy, and the evidence
            says nothing of a second helping (the next round's fit still values a repeat
            from its own evidence). 1 is `decide`'s default: as much again on the remaining
            headroom. On the allocation benchmark 0 keeps the rule from trying a repeatable
            candidate first for the sake of repeating it (scarce budget, library prior, 64
            look-ahead samples, 100 seeds: mean J 0.70 vs 0.68, a paired interval of the
            difference that still holds 0).
        lookahead_depth: decisions the look-ahead sees after the one it scores: 1 (DESIGN's
            CVU) or 2 (`decide(..., lookahead_depth=2)`), which values an experiment whose
            worth shows two decisions later, e.g. a cheap pilot before costly tries. The
            round before the last looks one decision ahead whatever this says. Used by the
            "g0" continuation only.
        continuation: what the look-ahead puts in place of the value of the rest of the
            campaign: "rollout" (the default: the index policy run over every round left, in
            scenarios drawn from the posterior; `bayes_s2r.decision.rollout`) or "g0"
            (DESIGN's one-step G0).
        sim_risk_prior: a simulation-based execution-risk prior, candidate name ->
            (unsafe, executions) in simulation (`fit_exec_risk(sim_prior=...)`): the gate's
            bound for a robot-touching candidate before the robot has run it, and the prior
            from which the look-ahead values a safety probe.
    """

    budget: Budget
    weights: ResourceWeights = dataclasses.field(default_factory=ResourceWeights)
    alpha_exec: float = 0.05
    alpha_deploy: float = 0.05
    delta: float = 0.05
    beta: float = 1.0
    cvu_samples: int = 256
    max_rounds: int = 8
    fit_method: str = "svi"
    utility: str = "adopt"
    deploy_episodes: int = 200
    accept_regressions: bool = False
    allow_bad_belief: bool = False
    fit_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    seed: int = 0
    repeat_share: float = 0.0
    lookahead_depth: int = 1
    continuation: str = "rollout"
    sim_risk_prior: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.budget, Budget):
            raise InputError("config.budget", self.budget, "a Budget")
        if not isinstance(self.weights, ResourceWeights):
            raise InputError("config.weights", self.weights, "a ResourceWeights")
        for f in ("alpha_exec", "alpha_deploy", "delta"):
            object.__setattr__(self, f, _prob(f"config.{f}", getattr(self, f)))
        if isinstance(self.beta, bool) or not isinstance(self.beta, (int, float)) or self.beta < 0:
            raise InputError("config.beta", self.beta, "a number >= 0")
        _count("config.cvu_samples", self.cvu_samples, 1)
        _count("config.max_rounds", self.max_rounds, 1)
        _count("config.deploy_episodes", self.deploy_episodes, 1)
        _count("config.seed", self.seed, 0)
        if self.fit_method not in _FIT_METHODS:
            raise InputError("config.fit_method", self.fit_method, f"one of {_FIT_METHODS}")
        if self.utility not in UTILITIES:
            raise InputError("config.utility", self.utility, f"one of {UTILITIES}")
        if not isinstance(self.fit_options, Mapping) or not all(isinstance(k, str) for k in self.fit_options):
            raise InputError("config.fit_options", self.fit_options, "a mapping of fit_gains keyword arguments")
        allowed = {"num_warmup", "num_samples", "num_chains", "svi_steps", "svi_learning_rate",
                   "svi_guide", "target_accept_prob", "max_tree_depth", "use_sensitivity", "prior"}
        for k in self.fit_options:
            if k not in allowed:
                raise InputError(f"config.fit_options.{k}", self.fit_options[k], f"a key among {sorted(allowed)}")
        options = dict(self.fit_options)
        if "prior" in options:
            options["prior"] = _gain_prior(options["prior"])
        object.__setattr__(self, "fit_options", options)
        for f in ("accept_regressions", "allow_bad_belief"):
            if not isinstance(getattr(self, f), bool):
                raise InputError(f"config.{f}", getattr(self, f), "true or false")
        require_finite_nonneg("config.repeat_share", self.repeat_share)
        if type(self.lookahead_depth) is not int or self.lookahead_depth not in (1, 2):
            raise InputError("config.lookahead_depth", self.lookahead_depth, "1 or 2")
        if self.continuation not in CONTINUATIONS:
            raise InputError("config.continuation", self.continuation, f"one of {CONTINUATIONS}")
        if not isinstance(self.sim_risk_prior, Mapping):
            raise InputError("config.sim_risk_prior", self.sim_risk_prior, "a mapping name -> (unsafe, executions)")
        object.__setattr__(self, "sim_risk_prior", {k: tuple(v) if isinstance(v, (list, tuple)) else v
                                                    for k, v in self.sim_risk_prior.items()})

    @property
    def transition(self) -> HeadroomTransition:
        """The look-ahead's transition rule: `HeadroomTransition(repeat_share=...)`."""
        return HeadroomTransition(repeat_share=float(self.repeat_share))

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["budget"] = dataclasses.asdict(self.budget)
        out["weights"] = dataclasses.asdict(self.weights)
        out["fit_options"] = {k: dataclasses.asdict(v) if k == "prior" else v for k, v in self.fit_options.items()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CampaignConfig:
        if not isinstance(data, Mapping) or "budget" not in data:
            raise InputError("config", data, "a mapping with at least a budget")
        values = dict(data)
        values["budget"] = Budget.from_mapping(values["budget"])
        if "weights" in values:
            w = values["weights"]
            if not isinstance(w, Mapping):
                raise InputError("config.weights", w, "a mapping real/compute/eng/scarcity")
            values["weights"] = ResourceWeights(**w)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InputError(f"config.{unknown[0]}", values[unknown[0]], f"a field among {sorted(known)}")
        return cls(**values)
