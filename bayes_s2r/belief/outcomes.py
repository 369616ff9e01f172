"""The outcome models, defined with the vocabulary in `bayes_s2r.outcomes` (the evidence files read them)."""

# the same names, for the modules that import them from here
from bayes_s2r.outcomes import *
from bayes_s2r.outcomes import __all__  # noqa: F401
