"""`GainBelief`: posterior draws of ΔJ for each candidate, with summaries and diagnostics."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayes_s2r.errors import InputError

if TYPE_CHECKING:
    import arviz as az

__all__ = ["DIAGNOSTIC_THRESHOLDS", "GainBelief", "check_gain_range", "diagnose_draws", "hdi_bounds"]


def _arviz():
    """ArviZ, imported on first use: with xarray and matplotlib it costs about half a second,
    which a command that reuses a stored fit (and so runs no diagnostics) need not pay."""
    with warnings.catch_warnings():  # arviz 0.23 announces its 1.0 refactor on import
        warnings.simplefilter("ignore", FutureWarning)
        import arviz

    return arviz


def __getattr__(name: str):
    if name == "az":  # `from bayes_s2r.belief.posterior import az` still works
        return _arviz()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# A belief is ok when every check passes; the thresholds follow current practice
# (Vehtari et al. 2021: R-hat <= 1.01 and bulk/tail ESS >= 100 per chain-ish).
DIAGNOSTIC_THRESHOLDS = MappingProxyType({"rhat_max": 1.01, "ess_min": 400.0, "divergences": 0})


def _names(names: Sequence[str]) -> tuple[str, ...]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise InputError("names", names, "a list of candidate names")
    out = tuple(names)
    if not out or not all(isinstance(n, str) and n for n in out):
        raise InputError("names", names, "a non-empty list of non-empty names")
    if len(set(out)) != len(out):
        dup = next(n for n in out if out.count(n) > 1)
        raise InputError("names", dup, "names used once each")
    return out


def diagnose_draws(draws: np.ndarray, divergences: int = 0, *, ess_min_required: float | None = None
                   ) -> dict[str, Any]:
    """R-hat, bulk and tail ESS of `draws` shaped [chains, draws, M]; `ok` with the reason."""
    az = _arviz()
    chains, n, m = draws.shape
    if chains == 1 and n >= 8:  # one chain: split it, as split-R-hat does
        draws = draws[:, : n - n % 2].reshape(2, -1, m)
    ds = az.convert_to_dataset({"gain": draws})
    if n >= 4:
        rhat = float(np.nanmax(az.rhat(ds)["gain"].values))
        ess_bulk = float(np.nanmin(az.ess(ds, method="bulk")["gain"].values))
        ess_tail = float(np.nanmin(az.ess(ds, method="tail")["gain"].values))
    else:
        rhat, ess_bulk, ess_tail = math.nan, float(chains * n), float(chains * n)
    need = DIAGNOSTIC_THRESHOLDS["ess_min"] if ess_min_required is None else ess_min_required
    reasons = []
    if not (rhat <= DIAGNOSTIC_THRESHOLDS["rhat_max"]) and not math.isnan(rhat):
        reasons.append(f"R-hat {rhat:.3f} > {DIAGNOSTIC_THRESHOLDS['rhat_max']}")
    if min(ess_bulk, ess_tail) < need:
        reasons.append(f"effective draws {min(ess_bulk, ess_tail):.0f} < {need:.0f}")
    if divergences > DIAGNOSTIC_THRESHOLDS["divergences"]:
        reasons.append(f"{divergences} divergent transitions")
    return {
        "rhat_max": rhat,
        "ess_min": min(ess_bulk, ess_tail),
        "ess_bulk_min": ess_bulk,
        "ess_tail_min": ess_tail,
        "divergences": int(divergences),
        "ok": not reasons,
        "reason": "; ".join(reasons) if reasons else None,
    }


def hdi_bounds(draws: np.ndarray, hdi_prob: float = 0.9) -> np.ndarray:
    """The highest-density interval of each column of `draws` [num_draws, M], shape [M, 2].

    The narrowest interval holding floor(hdi_prob * num_draws) + 1 sorted draws, the first
    one on a tie: the interval `arviz.hdi` gives for one column, computed for all at once.

    Example:
        >>> hdi_bounds(np.arange(10.0)[:, None], 0.5).tolist()
        [[0.0, 5.0]]
    """
    if not 0 < hdi_prob < 1:
        raise InputError("hdi_prob", hdi_prob, "a probability strictly between 0 and 1")
    arr = np.asarray(draws, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise InputError("draws", arr.shape, "an array [num_draws >= 1, M]")
    arr = np.sort(arr, axis=0)
    n = arr.shape[0]
    inc = int(np.floor(hdi_prob * n))  # < n, since hdi_prob < 1
    low = np.argmin(arr[inc:] - arr[: n - inc], axis=0)
    cols = np.arange(arr.shape[1])
    return np.stack([arr[low, cols], arr[low + inc, cols]], axis=1)


def check_gain_range(names: Sequence[str], draws: np.ndarray, field: str = "draws") -> None:
    """Raise `InputError` unless every success-rate column of `draws` is finite and in [-1, 1].

    A gain is a difference of two success probabilities, so anything outside [-1, 1] is a
    unit mistake (a percentage, a count) or an overflow, and every score built on it would be
    meaningless. Columns named "<candidate>@<objective>" are secondary objectives on their
    own scale and are only required to be finite.

    Args:
        names: column names, one per column of `draws`.
        draws: array [num_draws, len(names)].
        field: what the caller calls the draws, for the message.
    """
    arr = np.asarray(draws, dtype=np.float64)
    for j, name in enumerate(names):
        col = arr[:, j]
        bad = ~np.isfinite(col)
        if "@" not in name:
            bad |= np.abs(np.where(bad, 0.0, col)) > 1.0
        if bad.any():
            value = float(col[np.argmax(bad)])
            expected = "finite numbers" if "@" in name else "gains on the success-rate scale, finite and in [-1, 1]"
            raise InputError(f"{field}[:, {j}] ({name})", value, expected)


class GainBelief:
    """Posterior over ΔJ(m) for a set of candidates, held as draws.

    Attributes:
        names: candidate names, one per column of `draws`.
        draws: np.ndarray [num_draws, num_candidates] on the utility scale of J.
        chains: how many chains the draws come from (rows are chain-major).
        diagnostics: dict with rhat_max, ess_min, divergences, ok (and reason).
        method: how the belief was made ("nuts", "svi", "gaussian", "draws").

    Example:
        >>> b = GainBelief.from_gaussian(["a", "b"], [0.1, 0.0], [0.05, 0.02], num_draws=4000)
        >>> round(float(b.mean()["a"]), 2)
        0.1
    """

    def __init__(self, names, draws, *, chains: int = 1, diagnostics: Mapping | None = None,
                 method: str = "draws", inference_data: az.InferenceData | None = None,
                 extra: Mapping[str, Any] | None = None):
        self.names = _names(names)
        arr = np.asarray(draws, dtype=np.float64)
        if arr.ndim == 1 and len(self.names) == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[1] != len(self.names) or arr.shape[0] < 2:
            raise InputError("draws", getattr(arr, "shape", None),
                             f"an array [num_draws >= 2, {len(self.names)}] (one column per name)")
        if not np.all(np.isfinite(arr)):
            raise InputError("draws", "non-finite values", "finite numbers only")
        if not isinstance(chains, int) or chains < 1 or arr.shape[0] % chains:
            raise InputError("chains", chains, f"a whole number >= 1 dividing num_draws={arr.shape[0]}")
        arr.setflags(write=False)
        self.draws = arr
        self.chains = chains
        self.method = method
        self._idata = inference_data
        self.extra = dict(extra or {})
        self.diagnostics = dict(diagnostics) if diagnostics is not None else diagnose_draws(
            self.chain_draws(), ess_min_required=min(DIAGNOSTIC_THRESHOLDS["ess_min"], arr.shape[0] / 4)
        )

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_gaussian(cls, names, mean, sd, num_draws: int = 20000, seed: int = 0) -> GainBelief:
        """Independent Gaussian beliefs N(mean_m, sd_m²), sampled with a fixed seed."""
        names = _names(names)
        mean = np.asarray(mean, dtype=np.float64).reshape(-1)
        sd = np.asarray(sd, dtype=np.float64).reshape(-1)
        if mean.shape != (len(names),) or not np.all(np.isfinite(mean)):
            raise InputError("mean", mean.tolist(), f"{len(names)} finite numbers")
        if sd.shape != (len(names),) or not np.all(np.isfinite(sd)) or np.any(sd < 0):
            raise InputError("sd", sd.tolist(), f"{len(names)} finite numbers >= 0")
        if isinstance(num_draws, bool) or not isinstance(num_draws, int) or num_draws < 2:
            raise InputError("num_draws", num_draws, "a whole number >= 2")
        rng = np.random.default_rng(seed)
        draws = mean + sd * rng.standard_normal((num_draws, len(names)))
        return cls(names, draws, method="gaussian", extra={"mean": mean, "sd": sd})

    @classmethod
    def from_draws(cls, names, draws, *, chains: int = 1) -> GainBelief:
        """A belief from the user's own posterior draws [num_draws, num_candidates].

        Gains are on the success-rate scale, so every draw must be finite and lie in
        [-1, 1]; a column named "<candidate>@<objective>" holds a secondary objective on its
        own scale and only needs to be finite.

        Raises:
            InputError: names or draws of the wrong shape, or a draw out of range (the
                message names the column and the first offending value).
        """
        belief = cls(names, draws, chains=chains, method="draws")
        check_gain_range(belief.names, belief.draws, "draws")
        return belief

    # ------------------------------------------------------------------ queries
    @property
    def num_draws(self) -> int:
        return self.draws.shape[0]

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise InputError("candidate", name, f"one of the belief's names {list(self.names)}") from None

    def column(self, name: str) -> np.ndarray:
        return self.draws[:, self.index(name)]

    def chain_draws(self) -> np.ndarray:
        """Draws shaped [chains, draws_per_chain, num_candidates]."""
        return self.draws.reshape(self.chains, -1, len(self.names))

    def mean(self) -> pd.Series:
        return pd.Series(self.draws.mean(axis=0), index=list(self.names), name="mean")

    def sd(self) -> pd.Series:
        return pd.Series(self.draws.std(axis=0, ddof=1), index=list(self.names), name="sd")

    def summary(self, hdi_prob: float = 0.9) -> pd.DataFrame:
        """Mean, sd and the highest-density interval of each candidate's gain."""
        if not 0 < hdi_prob < 1:
            raise InputError("hdi_prob", hdi_prob, "a probability strictly between 0 and 1")
        hdi = hdi_bounds(self.draws, hdi_prob)
        return pd.DataFrame(
            {"mean": self.draws.mean(0), "sd": self.draws.std(0, ddof=1),
             "hdi_low": hdi[:, 0], "hdi_high": hdi[:, 1]},
            index=pd.Index(self.names, name="candidate"),
        )

    def to_inference_data(self) -> az.InferenceData:
        """An ArviZ InferenceData whose posterior has `gain` with a `candidate` coordinate."""
        if self._idata is not None:
            return self._idata
        return _arviz().from_dict(
            posterior={"gain": self.chain_draws()},
            coords={"candidate": list(self.names)},
            dims={"gain": ["candidate"]},
        )

    def subset(self, names: Sequence[str]) -> GainBelief:
        idx = [self.index(n) for n in names]
        return GainBelief(list(names), self.draws[:, idx], chains=self.chains,
                          diagnostics=self.diagnostics, method=self.method)

    def __repr__(self) -> str:
        return (f"GainBelief({len(self.names)} candidates, {self.num_draws} draws, "
                f"method={self.method!r}, ok={self.diagnostics.get('ok')})")
