"""Evidence: record types, the SQLite ledger and file import/export."""

from bayes_s2r.evidence.io import dump_candidates, load_candidates
from bayes_s2r.evidence.ledger import ImportResult, Ledger
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
    "ImportResult",
    "Ledger",
    "PairedEval",
    "PairedReturns",
    "RealizedCost",
    "Record",
    "SensitivityTrial",
    "SystemIdRecord",
    "dump_candidates",
    "load_candidates",
    "record_from_dict",
]
