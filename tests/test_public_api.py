"""The public API: the names of DESIGN.md §3 and what a campaign needs, importable from `bayes_s2r`."""

import importlib
import subprocess
import sys

import bayes_s2r as bs

CONTRACT = [
    "Cost", "Budget", "ResourceWeights", "Candidate", "BinomialPairedOutcome", "GaussianOutcome",
    "GainBelief", "fit_gains", "clopper_pearson_ucb", "fit_exec_risk", "RiskBelief", "decide",
    "Decision", "Ledger", "PairedEval", "SensitivityTrial", "ExecutionOutcome", "DeploymentEval",
    "InputError", "fit_sensitivity", "PolicyInterface", "check_shared_interface", "make_report",
]


#: Beyond the contract: what a user needs to price, fit, decide and run a campaign.
USER = [
    "PairedReturns", "load_candidates", "SafetyProbe", "GainPrior", "fit_gain_prior", "check_gain_prior",
    "fit_deploy_risk", "FitConfig", "NUTS", "SVI", "DecideConfig", "HeadroomTransition", "NoTransition", "AlternativesTransition", "CampaignConfig",
    "Execution", "Executor", "SyntheticExecutor", "SyntheticWorld", "executor_memory", "load_state",
    "make_chooser", "resume_campaign", "run_campaign", "run_round", "start_campaign",
]


def test_all_is_the_contract_and_what_a_user_needs():
    assert sorted(bs.__all__) == sorted({"__version__", *CONTRACT, *USER})
    for name in bs.__all__:
        assert getattr(bs, name) is not None


def test_internals_stay_in_their_subpackages():
    from bayes_s2r.belief import SensitivityData, prepare_gains

    for name in ("lookahead_trace_count", "prepare_gains", "SensitivityData", "validate_candidates"):
        assert name not in bs.__all__
    assert prepare_gains is not None and SensitivityData is not None


def test_lazy_names_come_from_their_subpackage():
    for name, module_name in bs._LAZY.items():
        module = importlib.import_module(module_name)
        assert name in module.__all__, name
        assert getattr(bs, name) is getattr(module, name)


def test_input_error_is_a_value_error():
    assert issubclass(bs.InputError, ValueError)


def test_importing_the_package_does_not_import_jax():
    code = "import sys, bayes_s2r; bayes_s2r.Cost(real=1); print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_distributed_lazy_table_covers_its_all():
    import bayes_s2r.distributed as dist

    assert set(dist._LAZY) == set(dist.__all__)
    for name in dist.__all__:
        module = importlib.import_module(f"bayes_s2r.distributed.{dist._LAZY[name]}")
        assert getattr(dist, name) is getattr(module, name)


def test_decision_does_not_import_the_testbed():
    # data flows evidence -> belief -> decision -> campaign -> sim; decide() must not load sim
    code = ("import sys, bayes_s2r as bs\n"
            "b = bs.GainBelief.from_gaussian(['dr'], [0.1], [0.02], num_draws=200)\n"
            "bs.decide(b, [bs.Candidate('dr', 'adaptation', 'data')], bs.Budget(1, 1, 1),\n"
            "          bs.ResourceWeights(), cvu_samples=8)\n"
            "print(sorted(m for m in sys.modules if m.startswith('bayes_s2r.sim')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
