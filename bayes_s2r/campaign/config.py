"""Campaign configuration: the budget, prices, loop settings, and the `DecideConfig` and
`FitConfig` every round uses, stored in the ledger.

The options of `decide` and of `fit_gains` are not copied here: a campaign holds one
`DecideConfig` and one `FitConfig`, so their defaults and checks are those of `decide` and
`fit_gains`, and a new option of either needs no change in the campaign. Where the campaign
deliberately starts from other values, they are listed once, in `CAMPAIGN_DECIDE` and
`CAMPAIGN_FIT`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from bayes_s2r.belief.inference import SVI, FitConfig, fit_config
from bayes_s2r.belief.inference import gain_prior as _gain_prior  # noqa: F401 (read by cli_decide)
from bayes_s2r.decision.config import DecideConfig
from bayes_s2r.decision.transition import TRANSITIONS
from bayes_s2r.errors import (
    InputError,
    require_bool,
    require_choice,
    require_finite_nonneg,
    require_int,
    require_probability,
)
from bayes_s2r.vocab import Budget, ResourceWeights

__all__ = ["CAMPAIGN_DECIDE", "CAMPAIGN_FIT", "PER_ROUND", "CampaignConfig"]

#: The `decide` options whose campaign default is not `DecideConfig()`'s, and why:
#: - utility "adopt": the loop keeps a new policy only when its paired evaluation shows it
#:   better, so a try is worth E[max(ΔJ, 0)] and not E[ΔJ] (with `accept_regressions=True`
#:   the plain "mean" is the matching functional);
#: - continuation "rollout": a campaign knows the rounds it has left, so the look-ahead runs
#:   the index policy over them (`bayes_s2r.decision.rollout`) instead of one more decision;
#: - cvu_samples 256: a campaign decides every round, and 256 outcomes keep a round short;
#: - diagnosis_margin 1: with 256 outcomes a diagnosis worth about its price is estimated with
#:   a large Monte-Carlo error, so where no try beats the stop a campaign stops unless the
#:   diagnosis leads the stop by one standard error (on the twelve random-world families it
#:   gained in two, +0.002 to +0.003, and lost in none: docs/results.md).
CAMPAIGN_DECIDE = MappingProxyType({"utility": "adopt", "continuation": "rollout", "cvu_samples": 256,
                                    "diagnosis_margin": 1.0})

#: The campaign's fit: SVI with its default settings (fast enough to refit every round).
CAMPAIGN_FIT = FitConfig(inference=SVI())

#: `decide` options the loop sets every round: the round's seed (folded from the campaign's),
#: whether it is the last round, and the rounds left. A campaign's `DecideConfig` leaves them
#: at their defaults.
PER_ROUND = ("seed", "terminal", "horizon")


#: `DecideConfig` fields added after ledgers were first stored, with the value every campaign
#: ran with before the field existed. A ledger that lacks one resumes as it ran, even if the
#: field's default has changed since (`to_dict` stores every field, so only older ledgers lack one).
_BEFORE_FIELD = MappingProxyType({"rollout_margin": 0.0, "base_index": "gaussian", "diagnosis_margin": 0.0})


def _as_run(options: Mapping[str, Any]) -> dict[str, Any]:
    """Stored decide options as they ran: the rollout continuation never read a depth of 2
    (now refused with it), so a ledger that stored one ran, and resumes, at depth 1; a field
    the ledger predates takes the value campaigns ran with before it (`_BEFORE_FIELD`)."""
    out = {**_BEFORE_FIELD, **options}
    if out.get("lookahead_depth") == 2 and out.get("continuation", CAMPAIGN_DECIDE["continuation"]) == "rollout":
        out["lookahead_depth"] = 1
    return out


def _campaign_decide(base: DecideConfig | None, options: Mapping[str, Any]) -> DecideConfig:
    """One validated `DecideConfig`: `base` (default `CAMPAIGN_DECIDE` over `DecideConfig()`)
    with `options` replacing its fields; errors are `DecideConfig.make`'s own."""
    if base is None:
        base = DecideConfig(**CAMPAIGN_DECIDE)
    elif not isinstance(base, DecideConfig):
        raise InputError("config.decide", base, "a DecideConfig")
    cfg = DecideConfig.make(**{**base._asdict(), **options})
    for name in PER_ROUND:
        if getattr(cfg, name) != DecideConfig._field_defaults[name]:
            raise InputError(f"config.decide.{name}", getattr(cfg, name),
                             f"the default {DecideConfig._field_defaults[name]!r}: the campaign sets it every round")
    return cfg


def _campaign_fit(base: FitConfig | None, method: Any, options: Any) -> FitConfig:
    """One validated `FitConfig`: `base` (default `CAMPAIGN_FIT`) changed by the flat
    `fit_method` and `fit_options` of `fit_gains`; errors name them under "config."."""
    if base is None:
        base = CAMPAIGN_FIT
    elif not isinstance(base, FitConfig):
        raise InputError("config.fit", base, "a FitConfig")
    if options is None:
        options = {}
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise InputError("config.fit_options", options, "a mapping of fit_gains keyword arguments")
    try:
        return fit_config(base, method, **options)
    except InputError as e:
        where = "config.fit_method" if e.field == "method" else f"config.fit_options.{e.field}"
        raise InputError(where, e.value, e.expected) from None


def _plain(value: Any) -> Any:
    """`value` with every tuple a list, as JSON keeps it."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclasses.dataclass(frozen=True, init=False)
class CampaignConfig:
    """Everything a campaign needs besides its candidates and its executor.

    Every field of `decide` and `fit` also reads as an attribute (`config.beta`,
    `config.fit_method`), and may be given flat as a keyword: `CampaignConfig(budget, beta=0.5,
    cvu_samples=64, fit_method="svi", fit_options={"svi_steps": 3000})` replaces those
    fields of the given (or default) `decide` and `fit`.

    Args:
        budget: the starting budget b_0 (also the reference for scarcity pricing).
        weights: resource weights λ0 and the scarcity exponent.
        decide: the options of every round's `decide` (alpha_exec, delta, beta, cvu_samples,
            utility, lookahead_depth, continuation, allow_bad_belief, ...). Default:
            `DecideConfig()` with `CAMPAIGN_DECIDE`; a given one is used as it is. Its
            `PER_ROUND` fields stay at their defaults: each round sets its seed, whether it
            is the last (CVU = 0) and the rounds left (the rollout's horizon); the round
            before the last looks one decision ahead whatever `lookahead_depth` says.
        fit: the gains fit of every round (`FitConfig`; default `CAMPAIGN_FIT`). Stored in
            the ledger with its prior, so a resumed campaign fits the same way. An SVI fit
            that has not converged gets one run with twice the steps.
        fit_method, fit_options: the flat form of `fit`: `fit_gains`'s method and keyword
            arguments (svi_steps, num_samples, prior, use_sensitivity, ...).
        alpha_deploy: deployment-risk level the terminal policy must meet (at level 1 − δ of
            the decide options).
        max_rounds: round limit; the last round is terminal (CVU = 0).
        deploy_episodes: episodes of the deployment evaluation at the stop.
        start_deployment_episodes: episodes of a deployment evaluation of the starting policy
            before the first decision, when the ledger holds no measurement of it (default 0:
            none). Gains are modelled on the logit scale, so without J of the start every gain
            is priced from a guess (J 0.5): on the pilot Brax worlds, whose starting policies
            mostly fail (J 0 in three of the five), the rule ended at J 0.794 without that
            record and 0.862 with it; on the random worlds, whose starts lie in 0.2–0.6, it
            changed little (`docs/decide.md`, "Measure the deployed policy first"). Like the
            evaluation at the stop, it is not charged to the budget.
        accept_regressions: adopt an adaptation's policy even when its paired evaluation
            does not show it better than the current one (default False: a lab does not
            deploy a measured regression, and a tie keeps the incumbent; the evidence is
            kept either way).
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
        transition_rule: how the other candidates' gains move once one is deployed, by name
            (`bayes_s2r.decision.transition.TRANSITIONS`): "headroom" (default: each
            adapts the deployed policy, and gains shrink with the headroom left) or
            "alternatives" (each is trained from the same start policy and the best one
            measured is kept, so the others are worth what they add over it).
        sim_risk_prior: a simulation-based execution-risk prior, candidate name ->
            (unsafe, executions) in simulation (`fit_exec_risk(sim_prior=...)`): the gate's
            bound for a robot-touching candidate before the robot has run it, and the prior
            from which the look-ahead values a safety probe.
        **options: `DecideConfig` fields, replacing those of `decide`.
    """

    budget: Budget
    weights: ResourceWeights = dataclasses.field(default_factory=ResourceWeights)
    decide: DecideConfig = dataclasses.field(default_factory=lambda: DecideConfig(**CAMPAIGN_DECIDE))
    fit: FitConfig = CAMPAIGN_FIT
    alpha_deploy: float = 0.05
    max_rounds: int = 8
    deploy_episodes: int = 200
    start_deployment_episodes: int = 0
    accept_regressions: bool = False
    seed: int = 0
    repeat_share: float = 0.0
    transition_rule: str = "headroom"
    sim_risk_prior: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __init__(self, budget: Budget, weights: ResourceWeights | None = None, *,
                 decide: DecideConfig | None = None, fit: FitConfig | None = None, fit_method: str | None = None,
                 fit_options: Mapping[str, Any] | None = None, **options: Any):
        own = {f.name: f for f in dataclasses.fields(self)}
        unknown = sorted(set(options) - set(own) - set(DecideConfig._fields))
        if unknown:
            raise InputError(f"config.{unknown[0]}", options[unknown[0]],
                             f"a field of CampaignConfig or DecideConfig among {sorted({*own, *DecideConfig._fields})}")
        if not isinstance(budget, Budget):
            raise InputError("config.budget", budget, "a Budget")
        weights = ResourceWeights() if weights is None else weights
        if not isinstance(weights, ResourceWeights):
            raise InputError("config.weights", weights, "a ResourceWeights")
        values = {"budget": budget, "weights": weights,
                  "decide": _campaign_decide(decide, {k: v for k, v in options.items()
                                                      if k in DecideConfig._fields and k not in own}),
                  "fit": _campaign_fit(fit, fit_method, fit_options)}
        for name, f in own.items():
            if name not in values:
                default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
                values[name] = options.get(name, default)
        values["alpha_deploy"] = require_probability("config.alpha_deploy", values["alpha_deploy"])
        for name, low in (("max_rounds", 1), ("deploy_episodes", 1), ("start_deployment_episodes", 0), ("seed", 0)):
            values[name] = require_int(f"config.{name}", values[name], low)
        require_bool("config.accept_regressions", values["accept_regressions"])
        values["repeat_share"] = require_finite_nonneg("config.repeat_share", values["repeat_share"])
        require_choice("config.transition_rule", values["transition_rule"], tuple(TRANSITIONS))
        prior = values["sim_risk_prior"]
        if not isinstance(prior, Mapping):
            raise InputError("config.sim_risk_prior", prior, "a mapping name -> (unsafe, executions)")
        values["sim_risk_prior"] = {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in prior.items()}
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # the decide options read as the campaign's own (`config.beta`), as they always did
        if name in DecideConfig._fields and name not in PER_ROUND:
            return getattr(object.__getattribute__(self, "decide"), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def fit_method(self) -> str:
        """The fit's method, "nuts" or "svi"."""
        return self.fit.method

    @property
    def fit_options(self) -> dict[str, Any]:
        """The fit as `fit_gains` keyword arguments besides `method` (`fit_options` of the
        flat form; an SVI fit's draws as num_samples × 1 chain)."""
        inf, out = self.fit.inference, {}
        if isinstance(inf, SVI):
            out.update(svi_steps=inf.steps, svi_learning_rate=inf.learning_rate, svi_guide=inf.guide,
                       num_samples=inf.num_draws, num_chains=1)
        else:
            out.update(dataclasses.asdict(inf))
        out["use_sensitivity"] = self.fit.use_sensitivity
        if self.fit.prior is not None:
            out["prior"] = self.fit.prior
        return out

    @property
    def transition(self):
        """The look-ahead's transition rule: `transition_rule`'s, with `repeat_share`."""
        return TRANSITIONS[self.transition_rule](repeat_share=float(self.repeat_share))

    def to_dict(self) -> dict[str, Any]:
        """JSON data for the ledger (tuples as lists); `from_dict` reads it back to an equal config."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["budget"] = dataclasses.asdict(self.budget)
        out["weights"] = dataclasses.asdict(self.weights)
        out["decide"] = {k: v for k, v in self.decide._asdict().items() if k not in PER_ROUND}
        out["fit"] = self.fit.to_mapping()
        out["sim_risk_prior"] = dict(self.sim_risk_prior)
        return _plain(out)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CampaignConfig:
        """The config of `to_dict`'s data, or of the flat form ledgers stored before the
        config held a `DecideConfig` and a `FitConfig` (decide options, `fit_method` and
        `fit_options` side by side with the campaign's fields)."""
        if not isinstance(data, Mapping) or "budget" not in data:
            raise InputError("config", data, "a mapping with at least a budget")
        values = dict(data)
        values["budget"] = Budget.from_mapping(values["budget"])
        if "weights" in values:
            w = values["weights"]
            if not isinstance(w, Mapping):
                raise InputError("config.weights", w, "a mapping real/compute/eng/scarcity")
            values["weights"] = ResourceWeights(**w)
        if "decide" in values:
            d = values["decide"]
            unknown = sorted(set(d) - set(DecideConfig._fields)) if isinstance(d, Mapping) else [None]
            if unknown:
                raise InputError("config.decide", d, f"a mapping of DecideConfig fields {list(DecideConfig._fields)}")
            values["decide"] = DecideConfig(**_as_run(d))
        else:
            values = _as_run(values)
        if "fit" in values:
            values["fit"] = FitConfig.from_mapping(values["fit"], "config.fit")
        return cls(**values)
