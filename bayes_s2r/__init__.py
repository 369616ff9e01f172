"""bayes_s2r: which sim-to-real intervention should the next unit of budget go to?

Every public name is importable from here. The vocabulary is imported at once; names from
the subpackages that pull in JAX, NumPyro and ArviZ are imported on first use, so that
`import bayes_s2r` (and the `bayes-s2r ledger` commands) start fast.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from bayes_s2r.errors import InputError
from bayes_s2r.vocab import (
    Budget,
    Candidate,
    Cost,
    PolicyInterface,
    ResourceWeights,
    check_shared_interface,
    validate_candidates,
)

try:
    __version__ = _version("bayes_s2r")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0"

# name -> subpackage that defines it (each subpackage's own __all__; a test keeps them equal)
_LAZY = {
    **dict.fromkeys([
        "RECORD_TYPES", "DecisionRecord", "DeploymentEval", "ExecutionOutcome", "PairedEval",
        "PairedReturns", "RealizedCost", "Record", "SensitivityTrial", "SystemIdRecord",
        "record_from_dict", "Ledger", "ImportResult", "load_candidates", "dump_candidates",
    ], "bayes_s2r.evidence"),
    **dict.fromkeys([
        "BinomialPairedOutcome", "GaussianOutcome", "NoOutcome", "SafetyProbe", "GainBelief", "GainPrior", "GainPriorFit",
        "fit_gain_prior",
        "fit_gains", "prepare_gains", "outcome_from_mapping", "DeploymentRisk", "RiskBelief",
        "RiskPrior", "clopper_pearson_ucb", "fit_deploy_risk", "fit_exec_risk",
        "SensitivityBelief", "SensitivityData", "fit_sensitivity", "prepare_sensitivity",
    ], "bayes_s2r.belief"),
    **dict.fromkeys([
        "decide", "Decision", "DecideConfig", "HeadroomTransition", "NoTransition",
        "lookahead_trace_count",
    ], "bayes_s2r.decision"),
    **dict.fromkeys([
        "STRATEGY_IDS", "CampaignConfig", "CampaignState", "Choice", "Execution", "Executor",
        "RoundReport", "RoundSummary", "SyntheticExecutor", "SyntheticWorld", "executor_memory",
        "load_state", "make_chooser", "resume_campaign", "run_campaign", "run_round", "start_campaign",
    ], "bayes_s2r.campaign"),
    "make_report": "bayes_s2r.report",
}

__all__ = [  # noqa: PLE0604 (the lazy names are strings: the keys of _LAZY)
    "__version__",
    "InputError",
    "Budget",
    "Candidate",
    "Cost",
    "PolicyInterface",
    "ResourceWeights",
    "check_shared_interface",
    "validate_candidates",
    *_LAZY,
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'bayes_s2r' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
