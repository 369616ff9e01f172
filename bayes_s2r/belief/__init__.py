"""Belief state q_t: posteriors over gains, sensitivities and risks, and outcome models."""

from bayes_s2r.belief.data import prepare_gains
from bayes_s2r.belief.fit import NUTS, SVI, FitConfig, fit_gains
from bayes_s2r.belief.outcomes import (
    BinomialPairedOutcome,
    GaussianOutcome,
    NoOutcome,
    SafetyProbe,
    outcome_from_mapping,
)
from bayes_s2r.belief.posterior import GainBelief
from bayes_s2r.belief.prior_check import PriorCheck, check_gain_prior
from bayes_s2r.belief.risk import (
    DeploymentRisk,
    RiskBelief,
    RiskPrior,
    clopper_pearson_ucb,
    fit_deploy_risk,
    fit_exec_risk,
)
from bayes_s2r.belief.sensitivity import (
    SensitivityBelief,
    SensitivityData,
    fit_sensitivity,
    prepare_sensitivity,
)
from bayes_s2r.belief.team_prior import GainPriorFit, fit_gain_prior
from bayes_s2r.models.gains import GainPrior

__all__ = [
    "NUTS",
    "SVI",
    "BinomialPairedOutcome",
    "DeploymentRisk",
    "FitConfig",
    "GainBelief",
    "GainPrior",
    "GainPriorFit",
    "GaussianOutcome",
    "NoOutcome",
    "PriorCheck",
    "RiskBelief",
    "RiskPrior",
    "SafetyProbe",
    "SensitivityBelief",
    "SensitivityData",
    "check_gain_prior",
    "clopper_pearson_ucb",
    "fit_deploy_risk",
    "fit_exec_risk",
    "fit_gain_prior",
    "fit_gains",
    "fit_sensitivity",
    "outcome_from_mapping",
    "prepare_gains",
    "prepare_sensitivity",
]
