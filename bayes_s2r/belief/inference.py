"""How `fit_gains` infers the gains posterior: `NUTS` or `SVI` settings inside a `FitConfig`.

Each setting has its default and its check here, once; the objects are validated when they
are built, so a bad setting is refused before any evidence is read. `fit_gains` takes a
`FitConfig`, or any of its fields as a keyword (`inference=SVI(steps=3000)`); the flat
keywords it took before (`method="svi"`, `svi_steps=...`, `num_samples=...`) are read by
`fit_config`, which builds the same objects and names the keyword a refusal is about.

Example:
    >>> cfg = fit_config(method="svi", svi_steps=3000, num_samples=500, num_chains=1)
    >>> cfg == FitConfig(inference=SVI(steps=3000, num_draws=500))
    True
    >>> FitConfig.from_mapping(cfg.to_mapping()) == cfg
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from bayes_s2r.errors import (
    InputError,
    require_bool,
    require_choice,
    require_int,
    require_probability,
)
from bayes_s2r.models.gains import GainPrior

__all__ = ["CHAIN_METHODS", "GUIDES", "LEGACY_OPTIONS", "METHODS", "NUTS", "SVI", "FitConfig", "fit_config",
           "gain_prior"]

METHODS = ("nuts", "svi")
GUIDES = ("lowrank", "normal")
CHAIN_METHODS = ("parallel", "sequential", None)


def _set(obj: Any, **values: Any) -> None:
    for name, value in values.items():
        object.__setattr__(obj, name, value)


@dataclasses.dataclass(frozen=True)
class NUTS:
    """NumPyro's NUTS sampler, run in one compiled loop per chain (`bayes_s2r.belief.fit`).

    Attributes:
        num_warmup: warmup steps per chain (>= 0).
        num_samples: draws per chain (>= 2). With 2 × 1000 draws the rank-normalised R-hat
            of a 64-candidate fit stays below the 1.01 threshold; with 2 × 500 it crossed it
            in about one fit in four by chance.
        num_chains: chains (>= 1).
        target_accept_prob: the step-size adaptation's acceptance target. 0.9: the
            candidate-level scale over a handful of siblings makes a mild funnel, and smaller
            steps keep it free of divergences.
        max_tree_depth: the largest tree depth of one NUTS step (>= 1).
        chain_method: "parallel" (one chain per host device), "sequential", or None for
            parallel when there are at least as many local devices as chains.
    """

    method: ClassVar[str] = "nuts"

    num_warmup: int = 500
    num_samples: int = 1000
    num_chains: int = 2
    target_accept_prob: float = 0.9
    max_tree_depth: int = 8
    chain_method: str | None = None

    def __post_init__(self):
        _set(self, num_warmup=require_int("num_warmup", self.num_warmup, 0),
             num_samples=require_int("num_samples", self.num_samples, 2),
             num_chains=require_int("num_chains", self.num_chains, 1),
             target_accept_prob=require_probability("target_accept_prob", self.target_accept_prob),
             max_tree_depth=require_int("max_tree_depth", self.max_tree_depth, 1),
             chain_method=require_choice("chain_method", self.chain_method, CHAIN_METHODS))


@dataclasses.dataclass(frozen=True)
class SVI:
    """Gaussian variational inference on the unconstrained space (`bayes_s2r.belief.svi`).

    Attributes:
        steps: optimisation steps, run in one compiled loop (20 to 10**7). With 3000, small
            hierarchical fits sometimes stopped a quarter of an sd short in some coordinate.
        learning_rate: Adam's initial learning rate (cosine decay), strictly between 0 and 1.
        guide: "lowrank" (diagonal plus rank ⌈√dim⌉ covariance) or "normal" (mean-field).
        num_draws: draws taken from the fitted approximation (>= 2); as many as NUTS's
            default 2 chains × 1000.
    """

    method: ClassVar[str] = "svi"

    steps: int = 6000
    learning_rate: float = 0.02
    guide: str = "lowrank"
    num_draws: int = 2000

    def __post_init__(self):
        _set(self, steps=require_int("steps", self.steps, 20, 10**7),
             learning_rate=require_probability("learning_rate", self.learning_rate),
             guide=require_choice("guide", self.guide, GUIDES),
             num_draws=require_int("num_draws", self.num_draws, 2))


_INFERENCE = MappingProxyType({"nuts": NUTS, "svi": SVI})

#: `fit_gains`'s flat keywords for sampler settings -> (method, field of its settings object).
#: `num_samples` and `num_chains` of an SVI fit give its draws: num_samples × num_chains.
LEGACY_OPTIONS = MappingProxyType({
    "num_warmup": ("nuts", "num_warmup"), "num_samples": ("nuts", "num_samples"),
    "num_chains": ("nuts", "num_chains"), "target_accept_prob": ("nuts", "target_accept_prob"),
    "max_tree_depth": ("nuts", "max_tree_depth"), "chain_method": ("nuts", "chain_method"),
    "svi_steps": ("svi", "steps"), "svi_learning_rate": ("svi", "learning_rate"),
    "svi_guide": ("svi", "guide"),
})


def gain_prior(value: Any, field: str = "prior") -> GainPrior:
    """A `GainPrior` from itself or from a mapping of its fields (as stored in a ledger);
    `field` names the input in errors."""
    if isinstance(value, GainPrior):
        return value
    fields = {f.name for f in dataclasses.fields(GainPrior)}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InputError(field, value, "a GainPrior or a mapping of its fields")
    unknown = sorted(set(value) - fields)
    if unknown:
        raise InputError(f"{field}.{unknown[0]}", value[unknown[0]], f"a field among {sorted(fields)}")
    return GainPrior(**value)


@dataclasses.dataclass(frozen=True)
class FitConfig:
    """Everything `fit_gains` needs besides the evidence, the candidates and the seed.

    Attributes:
        inference: `NUTS(...)` (exact, slower; the default) or `SVI(...)` (fast, variational).
        prior: the gains model's `GainPrior` (a mapping of its fields is read as one); None
            is the library's prior.
        use_sensitivity: include the sensitivity block when there is sensitivity evidence.
    """

    inference: NUTS | SVI = dataclasses.field(default_factory=NUTS)
    prior: GainPrior | None = None
    use_sensitivity: bool = True

    def __post_init__(self):
        if not isinstance(self.inference, (NUTS, SVI)):
            raise InputError("inference", self.inference, "NUTS(...) or SVI(...)")
        _set(self, prior=None if self.prior is None else gain_prior(self.prior, "prior"),
             use_sensitivity=require_bool("use_sensitivity", self.use_sensitivity))

    @property
    def method(self) -> str:
        """"nuts" or "svi"."""
        return self.inference.method

    def to_mapping(self) -> dict[str, Any]:
        """JSON data that `from_mapping` reads back to an equal config."""
        return {"inference": {"method": self.method, **dataclasses.asdict(self.inference)},
                "prior": None if self.prior is None else dataclasses.asdict(self.prior),
                "use_sensitivity": self.use_sensitivity}

    @classmethod
    def from_mapping(cls, data: Any, field: str = "fit") -> FitConfig:
        """The config of `to_mapping`'s data; `field` names the input in errors."""
        if not isinstance(data, Mapping) or set(data) - {"inference", "prior", "use_sensitivity"}:
            raise InputError(field, data, "a mapping of inference, prior and use_sensitivity")
        inference = data.get("inference", {"method": "nuts"})
        if not isinstance(inference, Mapping):
            raise InputError(f"{field}.inference", inference, "a mapping with a method and its settings")
        settings = dict(inference)
        kind = _INFERENCE.get(settings.pop("method", None))
        if kind is None:
            raise InputError(f"{field}.inference.method", inference.get("method"), f"one of {METHODS}")
        known = {f.name for f in dataclasses.fields(kind)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise InputError(f"{field}.inference.{unknown[0]}", settings[unknown[0]],
                             f"a setting of {kind.__name__} among {sorted(known)}")
        return cls(inference=kind(**settings), prior=data.get("prior"),
                   use_sensitivity=data.get("use_sensitivity", True))


def fit_config(config: FitConfig | None = None, method: str | None = None, **options: Any) -> FitConfig:
    """One validated `FitConfig` from `config`, a `method` and keyword options.

    Args:
        config: the starting config (default `FitConfig()`: NUTS, the library's prior).
        method: "nuts" or "svi"; when it is not the config's, that method's default settings
            replace the config's inference.
        **options: `FitConfig` fields (inference, prior, use_sensitivity), which replace the
            config's, and the flat sampler settings of `LEGACY_OPTIONS`, which change the
            chosen method's settings (those of the other method are ignored, as they always
            were).

    Raises:
        InputError: naming the keyword as given (`svi_steps`, not `steps`).
    """
    if config is None:
        config = FitConfig()
    elif not isinstance(config, FitConfig):
        raise InputError("config", config, "a FitConfig or None")
    own = {f.name for f in dataclasses.fields(FitConfig)}
    unknown = sorted(set(options) - own - set(LEGACY_OPTIONS))
    if unknown:
        raise InputError(unknown[0], options[unknown[0]], f"an option among {sorted(own | set(LEGACY_OPTIONS))}")
    config = dataclasses.replace(config, **{k: v for k, v in options.items() if k in own})
    inference = config.inference
    if method is not None:
        require_choice("method", method, METHODS)
        if method != inference.method:
            if "inference" in options:
                raise InputError("method", method, f"the method of inference={inference!r}")
            inference = _INFERENCE[method]()
    legacy = {k: v for k, v in options.items() if k in LEGACY_OPTIONS}
    return dataclasses.replace(config, inference=_with_legacy(inference, legacy))


def _with_legacy(inference: NUTS | SVI, legacy: Mapping[str, Any]) -> NUTS | SVI:
    """`inference` with the flat settings of its method applied; errors name the flat keyword."""
    changes = {LEGACY_OPTIONS[k][1]: v for k, v in legacy.items() if LEGACY_OPTIONS[k][0] == inference.method}
    names = {LEGACY_OPTIONS[k][1]: k for k in legacy}
    try:
        draws = {k: legacy[k] for k in ("num_samples", "num_chains") if k in legacy}
        if inference.method == "svi" and draws:  # checked as NUTS's settings, under their own names
            per_chain = NUTS(**draws)
            changes["num_draws"] = per_chain.num_samples * per_chain.num_chains
        return dataclasses.replace(inference, **changes)
    except InputError as e:
        raise InputError(names.get(e.field, e.field), e.value, e.expected) from None
