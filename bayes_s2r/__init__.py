"""bayes_s2r: which sim-to-real intervention should the next unit of budget go to?

The public API (DESIGN.md §3, and what running a campaign needs) is importable from here;
the rest lives in the subpackages. The vocabulary is imported at once; names from
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
)

try:
    __version__ = _version("bayes_s2r")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0"

# name -> subpackage that defines it. The contract of DESIGN.md §3 and what a user needs to
# run a campaign; everything else stays in its subpackage (`bayes_s2r.evidence.DecisionRecord`).
_LAZY = {
    **dict.fromkeys([
        "DeploymentEval", "ExecutionOutcome", "PairedEval", "PairedReturns", "SensitivityTrial",
        "Ledger", "load_candidates",
    ], "bayes_s2r.evidence"),
    **dict.fromkeys([
        "BinomialPairedOutcome", "GaussianOutcome", "SafetyProbe", "GainBelief", "GainPrior",
        "fit_gain_prior", "check_gain_prior", "fit_gains", "FitConfig", "NUTS", "SVI", "RiskBelief", "clopper_pearson_ucb", "fit_deploy_risk",
        "fit_exec_risk", "fit_sensitivity",
    ], "bayes_s2r.belief"),
    **dict.fromkeys([
        "decide", "Decision", "DecideConfig", "HeadroomTransition", "NoTransition", "AlternativesTransition",
    ], "bayes_s2r.decision"),
    **dict.fromkeys([
        "CampaignConfig", "Execution", "Executor", "SyntheticExecutor", "SyntheticWorld",
        "executor_memory", "load_state", "make_chooser", "resume_campaign", "run_campaign",
        "run_round", "start_campaign",
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
