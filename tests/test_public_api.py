"""The public API: every name of DESIGN.md §3 is importable from `bayes_s2r`."""

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


def test_contract_names_are_exported():
    for name in CONTRACT:
        assert name in bs.__all__, name
        assert getattr(bs, name) is not None


def test_lazy_table_matches_each_subpackage_all():
    for sub in ("evidence", "belief", "decision", "campaign"):
        module = importlib.import_module(f"bayes_s2r.{sub}")
        lazy = {n for n, m in bs._LAZY.items() if m == module.__name__}
        assert lazy == set(module.__all__), sub
        for name in module.__all__:
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
