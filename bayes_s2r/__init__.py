"""bayes_s2r: which sim-to-real intervention should the next unit of budget go to?

Public names are re-exported here; each subpackage declares its own `__all__`.
"""

from importlib.metadata import PackageNotFoundError, version as _version

from bayes_s2r import belief as _belief
from bayes_s2r import campaign as _campaign
from bayes_s2r import decision as _decision
from bayes_s2r import evidence as _evidence
from bayes_s2r.belief import *  # noqa: F403
from bayes_s2r.campaign import *  # noqa: F403
from bayes_s2r.decision import *  # noqa: F403
from bayes_s2r.errors import InputError
from bayes_s2r.evidence import *  # noqa: F403
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

__all__ = [
    "__version__",
    "InputError",
    "Budget",
    "Candidate",
    "Cost",
    "PolicyInterface",
    "ResourceWeights",
    "check_shared_interface",
    "validate_candidates",
    *_evidence.__all__,
    *_belief.__all__,
    *_decision.__all__,
    *_campaign.__all__,
]
