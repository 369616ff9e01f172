"""Sensitivity evidence -> sufficient statistics -> posterior of Ŝ_k and pair synergies.

`prepare_sensitivity` compresses `SensitivityTrial` records into one binomial cell per
design point (levels of every direction, tier, policy); `fit_sensitivity` runs the model
of `bayes_s2r.models.sensitivity` and returns a `SensitivityBelief`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from bayes_s2r.belief.posterior import DIAGNOSTIC_THRESHOLDS, diagnose_draws, hdi_bounds
from bayes_s2r.errors import InputError, require_int, require_probability
from bayes_s2r.evidence.records import TIERS, Record, SensitivityTrial
from bayes_s2r.models.sensitivity import SensitivityPrior, sensitivity_model

if TYPE_CHECKING:
    import arviz as az

__all__ = [
    "Labels",
    "SensitivityBelief",
    "SensitivityData",
    "SensitivityPrior",
    "fit_sensitivity",
    "prepare_sensitivity",
]


class Labels(tuple):
    """A tuple of labels that JAX treats as static (no leaves), so data can cross `jit`."""


jax.tree_util.register_static(Labels)


class SensitivityData(NamedTuple):
    """Sufficient statistics of sensitivity trials: one binomial cell per design point.

    Attributes:
        successes: int32 [C] summed successes per cell.
        episodes: int32 [C] summed episodes per cell.
        levels: float32 [C, K] level of every direction in the cell (0 = nominal).
        products: float32 [C, P] ℓ_k·ℓ_l for each observed pair (k, l).
        tier: int32 [C] index into `TIERS` = ("direct", "proxy", "ablation").
        policy: int32 [C] index into `policies`.
        pair_index: int32 [P, 2] direction indices (k, l) of each pair, k < l.
        ref_policy: index of the policy at which Ŝ and synergies are reported.
        directions: static labels of the K directions (sorted).
        pairs: static labels: (direction_k, direction_l) for each pair.
        policies: static labels of the policies (None = unspecified).
    """

    successes: jnp.ndarray
    episodes: jnp.ndarray
    levels: jnp.ndarray
    products: jnp.ndarray
    tier: jnp.ndarray
    policy: jnp.ndarray
    pair_index: jnp.ndarray
    ref_policy: int
    directions: Labels
    pairs: Labels
    policies: Labels


def _records(evidence: Any) -> list[Record]:
    if evidence is None or isinstance(evidence, (str, bytes)):
        raise InputError("evidence", evidence, "an iterable of evidence records or a Ledger")
    if hasattr(evidence, "records") and callable(evidence.records):
        evidence = evidence.records()
    if not isinstance(evidence, Iterable):
        raise InputError("evidence", evidence, "an iterable of evidence records or a Ledger")
    out = list(evidence)
    for i, r in enumerate(out):
        if not isinstance(r, Record):
            raise InputError(f"evidence[{i}]", r, "an evidence record such as SensitivityTrial")
    return out


def prepare_sensitivity(records: Any, policy: str | None = None, *,
                        directions: Sequence[str] = ()) -> SensitivityData:
    """Sum sensitivity trials into cells keyed by (levels, tier, policy).

    Args:
        records: evidence records (any kinds; only `SensitivityTrial` is used) or a Ledger.
        policy: keep only trials of this policy; None keeps all, each policy with its own
            nominal level, and reports at the policy of the latest round.
        directions: extra directions to include without trials (their Ŝ is the prior).

    Returns:
        SensitivityData.

    Raises:
        InputError: no trials and no directions, an unknown policy, bad records.
    """
    if policy is not None and (not isinstance(policy, str) or not policy):
        raise InputError("policy", policy, "a policy name or None")
    if isinstance(directions, str) or not all(isinstance(d, str) and d for d in directions):
        raise InputError("directions", directions, "a list of direction names")
    trials = [r for r in _records(records) if isinstance(r, SensitivityTrial)]
    if policy is not None:
        trials = [r for r in trials if r.policy == policy]
        if not trials and not directions:
            raise InputError("policy", policy, "a policy with at least one SensitivityTrial")
    dirs = sorted({r.direction for r in trials} | {r.pair_direction for r in trials
                                                  if r.pair_direction} | set(directions))
    if not dirs:
        raise InputError("records", "no SensitivityTrial", "at least one sensitivity trial "
                         "(or directions to include)")
    col = {d: i for i, d in enumerate(dirs)}

    latest: dict[Any, int] = {}
    for i, r in enumerate(trials):
        latest[r.policy] = max(latest.get(r.policy, -1), r.round)
    pols = sorted(latest, key=lambda p: ("" if p is None else p))
    if policy is not None:
        pols = [policy]
    if not pols:
        pols = [None]
    ref = max(range(len(pols)), key=lambda i: (latest.get(pols[i], -1), i))

    cells: dict[tuple, list[int]] = {}
    pairs: set[tuple[int, int]] = set()
    for r in trials:
        lv = {col[r.direction]: r.level}
        if r.pair_direction is not None:
            lv[col[r.pair_direction]] = r.pair_level
        lv = {k: v for k, v in lv.items() if v != 0.0}
        if len(lv) == 2:
            pairs.add(tuple(sorted(lv)))
        key = (TIERS.index(r.tier), pols.index(r.policy), tuple(sorted(lv.items())))
        acc = cells.setdefault(key, [0, 0])
        acc[0] += r.successes
        acc[1] += r.episodes
    pair_list = sorted(pairs)
    pcol = {pr: j for j, pr in enumerate(pair_list)}
    keys = sorted(cells)
    levels = np.zeros((len(keys), len(dirs)), np.float32)
    products = np.zeros((len(keys), len(pair_list)), np.float32)
    for c, (_, _, lv) in enumerate(keys):
        for k, v in lv:
            levels[c, k] = v
        if len(lv) == 2:
            (k, vk), (l, vl) = lv
            products[c, pcol[(k, l)]] = vk * vl
    return SensitivityData(
        successes=jnp.asarray([cells[k][0] for k in keys], jnp.int32).reshape(-1),
        episodes=jnp.asarray([cells[k][1] for k in keys], jnp.int32).reshape(-1),
        levels=jnp.asarray(levels),
        products=jnp.asarray(products),
        tier=jnp.asarray([k[0] for k in keys], jnp.int32).reshape(-1),
        policy=jnp.asarray([k[1] for k in keys], jnp.int32).reshape(-1),
        pair_index=jnp.asarray(np.array(pair_list, np.int32).reshape(-1, 2)),
        ref_policy=int(ref),
        directions=Labels(dirs),
        pairs=Labels((dirs[k], dirs[l]) for k, l in pair_list),
        policies=Labels(pols),
    )


def _hdi(x: np.ndarray, prob: float) -> np.ndarray:
    return hdi_bounds(np.asarray(x, np.float64).reshape(-1, 1), prob)[0]


class SensitivityBelief:
    """Posterior of recoverable performance Ŝ_k per direction and synergy per observed pair.

    Attributes:
        directions: direction names, one per column of `draws`.
        pairs: (k, l) direction pairs, one per column of `synergy_draws`.
        draws: np.ndarray [num_draws, K] of Ŝ_k (J scale), chain-major rows.
        synergy_draws: np.ndarray [num_draws, P] of ΔJ(k,l) − ΔJ(k,0) − ΔJ(0,l).
        nominal_draws: np.ndarray [num_draws] of J0 at the reference policy.
        chains: number of chains.
        diagnostics: rhat_max, ess_min, divergences, ok, reason (as `diagnose_draws`).
        data: the `SensitivityData` the belief was fitted on.
        samples: all posterior sites (dict name -> np.ndarray), for further use.
    """

    def __init__(self, data: SensitivityData, samples: dict[str, np.ndarray], *,
                 chains: int, divergences: int = 0):
        self.data = data
        self.samples = samples
        self.directions = tuple(data.directions)
        self.pairs = tuple(data.pairs)
        self.draws = np.asarray(samples["sens_S"], np.float64)
        self.synergy_draws = np.asarray(samples["sens_synergy"], np.float64)
        self.nominal_draws = np.asarray(samples["sens_J0"], np.float64)
        self.chains = chains
        both = np.concatenate([self.draws, self.synergy_draws], axis=1)
        self.diagnostics = diagnose_draws(
            both.reshape(chains, -1, both.shape[1]), divergences,
            ess_min_required=min(DIAGNOSTIC_THRESHOLDS["ess_min"], both.shape[0] / 4))

    def index(self, direction: str) -> int:
        try:
            return self.directions.index(direction)
        except ValueError:
            raise InputError("direction", direction, f"one of {list(self.directions)}") from None

    def column(self, direction: str) -> np.ndarray:
        """Draws of Ŝ for one direction (also accepts 'sensitivity:<direction>')."""
        direction = direction.removeprefix("sensitivity:")
        return self.draws[:, self.index(direction)]

    def ranking(self, hdi_prob: float = 0.9) -> pd.DataFrame:
        """Directions ranked by expected recoverable performance E[Ŝ_k].

        Columns: mean, sd, hdi_low, hdi_high, p_rank1 (share of draws in which the
        direction has the largest Ŝ). Sorted by mean, largest first.
        """
        _check_prob(hdi_prob)
        hdi = np.stack([_hdi(self.draws[:, j], hdi_prob) for j in range(len(self.directions))])
        best = np.bincount(self.draws.argmax(axis=1), minlength=len(self.directions))
        df = pd.DataFrame({
            "mean": self.draws.mean(0), "sd": self.draws.std(0, ddof=1),
            "hdi_low": hdi[:, 0], "hdi_high": hdi[:, 1], "p_rank1": best / self.draws.shape[0],
        }, index=pd.Index(self.directions, name="direction"))
        return df.sort_values("mean", ascending=False)

    def synergy(self, hdi_prob: float = 0.9) -> pd.DataFrame:
        """Synergy of each observed pair on the J scale at levels (1, 1).

        Columns: mean, sd, hdi_low, hdi_high, p_positive; index (direction, pair_direction).
        Positive synergy: the pair together costs more than the two drops summed.
        """
        _check_prob(hdi_prob)
        x = self.synergy_draws
        hdi = np.stack([_hdi(x[:, j], hdi_prob) for j in range(len(self.pairs))]) if self.pairs \
            else np.zeros((0, 2))
        index = pd.MultiIndex.from_tuples(self.pairs, names=["direction", "pair_direction"]) \
            if self.pairs else pd.MultiIndex.from_tuples([], names=["direction", "pair_direction"])
        return pd.DataFrame({
            "mean": x.mean(0), "sd": x.std(0, ddof=1) if len(x) > 1 else np.nan,
            "hdi_low": hdi[:, 0], "hdi_high": hdi[:, 1], "p_positive": (x > 0).mean(0),
        }, index=index)

    def to_inference_data(self) -> az.InferenceData:
        """ArviZ InferenceData: posterior `S` [direction], `synergy` [pair], `J0`."""
        from bayes_s2r.belief.posterior import az  # imported on first use

        c = self.chains
        post = {"S": self.draws.reshape(c, -1, len(self.directions)),
                "synergy": self.synergy_draws.reshape(c, -1, len(self.pairs)),
                "J0": self.nominal_draws.reshape(c, -1)}
        return az.from_dict(
            posterior=post,
            coords={"direction": list(self.directions),
                    "pair": [f"{k}*{l}" for k, l in self.pairs]},
            dims={"S": ["direction"], "synergy": ["pair"]},
        )

    def __repr__(self) -> str:
        return (f"SensitivityBelief({len(self.directions)} directions, {len(self.pairs)} pairs, "
                f"{self.draws.shape[0]} draws, ok={self.diagnostics.get('ok')})")


def _check_prob(p: float) -> None:
    require_probability("hdi_prob", p)


def _check_prior(prior: Any) -> SensitivityPrior:
    if prior is None:
        return SensitivityPrior()
    if not isinstance(prior, SensitivityPrior):
        raise InputError("prior", prior, "a SensitivityPrior")
    for f in SensitivityPrior._fields:
        v = getattr(prior, f)
        values = v if f == "bias_scale" else (v,)
        if f == "bias_scale" and (not isinstance(v, tuple) or len(v) != 2):
            raise InputError(f"prior.{f}", v, "two scales (proxy, ablation)")
        ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x)
                 and (f == "loc_a" or x > 0) for x in values)
        if not ok:
            raise InputError(f"prior.{f}", v, "a finite number" + ("" if f == "loc_a" else " > 0"))
    return prior


def fit_sensitivity(evidence: Any, policy: str | None = None, method: str = "nuts", seed: int = 0,
                    *, num_warmup: int = 500, num_samples: int = 500, num_chains: int = 2,
                    directions: Sequence[str] = (), prior: SensitivityPrior | None = None,
                    target_accept: float = 0.9) -> SensitivityBelief:
    """Fit the sensitivity model by NUTS.

    Args:
        evidence: records or a Ledger; only `SensitivityTrial` records are used.
        policy: the policy whose sensitivities are wanted (None: all, see
            `prepare_sensitivity`).
        method: "nuts" (the only method: the model is small and its posterior skewed).
        seed: PRNG seed of the sampler.
        num_warmup, num_samples, num_chains: NUTS settings (per chain).
        directions: extra directions without trials (prior only).
        prior: prior scales (default `SensitivityPrior()`).
        target_accept: NUTS target acceptance probability.

    Returns:
        SensitivityBelief.

    Example:
        >>> from bayes_s2r.evidence.records import SensitivityTrial as T
        >>> recs = [T("latency", 0.0, 45, 50), T("latency", 1.0, 10, 50)]
        >>> b = fit_sensitivity(recs, num_warmup=100, num_samples=100, num_chains=1)
        >>> b.ranking().index[0]
        'latency'
    """
    from numpyro.infer import MCMC, NUTS

    if method != "nuts":
        raise InputError("method", method, "'nuts'")
    require_int("seed", seed, 0)
    for f, v in (("num_warmup", num_warmup), ("num_samples", num_samples),
                 ("num_chains", num_chains)):
        require_int(f, v, 1)
    require_probability("target_accept", target_accept)
    prior = _check_prior(prior)
    data = prepare_sensitivity(evidence, policy, directions=directions)
    chain_method = "parallel" if jax.local_device_count() >= num_chains else "sequential"
    mcmc = MCMC(NUTS(sensitivity_model, target_accept_prob=target_accept),
                num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method=chain_method, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), data, prior, extra_fields=("diverging",))
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples().items()}
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    return SensitivityBelief(data, samples, chains=num_chains, divergences=divergences)
