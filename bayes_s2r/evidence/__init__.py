"""Evidence: record types, the SQLite ledger and file import/export."""

from bayes_s2r.evidence.records import (
    RECORD_TYPES,
    DecisionRecord,
    DeploymentEval,
    ExecutionOutcome,
    PairedEval,
    PairedReturns,
    RealizedCost,
    Record,
    SensitivityTrial,
    SystemIdRecord,
    record_from_dict,
)

__all__ = [
    "RECORD_TYPES",
    "DecisionRecord",
    "DeploymentEval",
    "ExecutionOutcome",
    "PairedEval",
    "PairedReturns",
    "RealizedCost",
    "Record",
    "SensitivityTrial",
    "SystemIdRecord",
    "record_from_dict",
]
