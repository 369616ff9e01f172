"""`fit_gains`: evidence → `GainBelief` by NUTS (default) or SVI; settings in `belief.inference`.

The sampler is NumPyro's NUTS kernel (`numpyro.infer.hmc.hmc`) driven by one jitted function
per chain, `chain(rng_key, data, sens) -> (sites, stats)`, which initialises, warms up and
samples with `lax.fori_loop` / `lax.scan`. It is built once per data shape and sampler
setting and kept in a small cache, so a refit on new evidence of the same shape (the usual
case in a campaign: policies and cells are padded to buckets) runs without compiling.
Chains run in parallel over host devices (`jax.shard_map`, one chain per device) when there are enough devices
(`XLA_FLAGS=--xla_force_host_platform_device_count=N` before jax is imported), else one
after the other through the same compiled function.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as PS
from numpyro.infer.hmc import hmc
from numpyro.infer.util import constrain_fn, potential_energy

from bayes_s2r.belief.assemble import assemble, extra_of, inference_data
from bayes_s2r.belief.compiled import CACHE_SIZE, abstract, concrete, unconstrained_prototype
from bayes_s2r.belief.data import PreparedGains, iter_records, prepare_gains
from bayes_s2r.belief.inference import NUTS, SVI, FitConfig, fit_config
from bayes_s2r.belief.posterior import DIAGNOSTIC_THRESHOLDS, GainBelief, diagnose_draws
from bayes_s2r.compiling import compiler_options
from bayes_s2r.errors import InputError, require_seed
from bayes_s2r.evidence.records import PairedEval, PairedReturns
from bayes_s2r.models.gains import gains_model
from bayes_s2r.vocab import Candidate

__all__ = ["NUTS", "SVI", "FitConfig", "fit_gains", "nuts_runner"]

_HIDDEN = ("z_mu", "z_method", "z_group", "z_cand", "drift")


def _make_chain(spec, prototype: dict, num_warmup: int, num_samples: int, target_accept: float,
                max_tree_depth: int):
    model = functools.partial(gains_model, spec=spec)

    def chain(rng_key, data, sens):
        k_init, k_run = jax.random.split(rng_key)
        keys = jax.random.split(k_init, len(prototype))
        # every latent site is real-valued after its bijection: U(-1, 1) is always valid
        z0 = {name: jax.random.uniform(k, v.shape, v.dtype, minval=-1.0, maxval=1.0)
              for k, (name, v) in zip(keys, sorted(prototype.items()))}
        kw = {"sens": sens}
        init_kernel, sample_kernel = hmc(
            lambda z: potential_energy(model, (data,), kw, z), algo="NUTS")
        state = init_kernel(z0, num_warmup, target_accept_prob=target_accept,
                            max_tree_depth=max_tree_depth, rng_key=k_run)

        def step(s, _):
            s = sample_kernel(s)
            return s, (s.z, s.diverging, s.accept_prob, s.num_steps, s.potential_energy, s.energy,
                       s.adapt_state.step_size)

        # one loop over warmup and sampling: one copy of the NUTS kernel to compile
        state, trace = lax.scan(step, state, None, length=num_warmup + num_samples)
        z, div, acc, steps, pe, energy, eps = jax.tree.map(lambda x: x[num_warmup:], trace)
        sites = jax.vmap(lambda zz: constrain_fn(model, (data,), kw, zz, return_deterministic=True))(z)
        sites = {k: v for k, v in sites.items() if k not in _HIDDEN}
        stats = {"diverging": div, "acceptance_rate": acc, "n_steps": steps, "lp": -pe,
                 "energy": energy, "step_size": eps}
        return sites, stats

    return chain


def nuts_runner(prep: PreparedGains, *, num_warmup: int, num_samples: int, num_chains: int,
                chain_method: str, target_accept: float = 0.8, max_tree_depth: int = 8):
    """The compiled NUTS function for `prep`'s shapes: `run(keys[num_chains]) -> (sites, stats)`.

    Built once per (spec, shapes, settings) and cached; arrays come back shaped [chain, draw, ...].
    """
    fn = _nuts_compiled(prep.spec, abstract((prep.data, prep.sens)), num_warmup, num_samples,
                        num_chains, chain_method, target_accept, max_tree_depth)
    return lambda keys: fn(keys, prep.data, prep.sens)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _nuts_compiled(spec, shapes: tuple, num_warmup: int, num_samples: int, num_chains: int,
                   chain_method: str, target_accept: float, max_tree_depth: int):
    """`fn(keys, data, sens)`: the jitted NUTS chains for data of the given `abstract` shapes."""
    model = functools.partial(gains_model, spec=spec)
    prototype = unconstrained_prototype(model, *concrete(shapes))
    chain = _make_chain(spec, prototype, num_warmup, num_samples, target_accept, max_tree_depth)
    if chain_method == "parallel":
        mesh = Mesh(np.array(jax.local_devices()[:num_chains]), ("chain",))

        def per_device(keys, data, sens):
            return jax.tree.map(lambda x: x[None], chain(keys[0], data, sens))

        return jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(PS("chain"), PS(), PS()),
                                     out_specs=PS("chain"), check_vma=False),
                       compiler_options=compiler_options())
    one = jax.jit(chain, compiler_options=compiler_options())

    def fn(keys, data, sens):
        outs = [one(k, data, sens) for k in keys]
        return jax.tree.map(lambda *xs: jnp.stack(xs), *outs)

    return fn


def fit_gains(evidence, candidates: Sequence[Candidate], method: str | None = None, seed: int = 0, *,
              config: FitConfig | None = None, current_policy: Any = None, lineage=None,
              trained_from: str | None = None, objective: str = "success", **options: Any) -> GainBelief:
    """Fit the gains model to the evidence and return the posterior over ΔJ(m | π_t).

    Args:
        evidence: iterable of records, or an object with `.records()` (a Ledger).
        candidates: the candidate set; the belief holds its adaptation candidates (diagnosis
            and model_update candidates have gain 0 by definition), then one column
            `sensitivity:<k>` per sensitivity direction with evidence.
        method: "nuts" or "svi"; None keeps the config's (NUTS by default). A method other
            than the config's runs with that method's default settings.
        seed: seed of the PRNG key; the same seed gives the same draws.
        config: a `FitConfig`: the inference (`NUTS(...)`, the default, or `SVI(...)`), the
            prior and whether to use sensitivity evidence.
        current_policy: the policy the gains refer to; default: the policy of the latest round.
        lineage: policy -> adaptations applied (in order) to reach it; enables order effects.
        trained_from: the policy every candidate is trained from when they are alternatives
            (a lab keeps the best one measured; `AlternativesTransition`): each treated arm
            measures its candidate from there, and a deployed policy is the one adaptation
            `lineage` names for it. The gains are what each adds over `current_policy`.
        objective: the objective whose evidence is used.
        **options: `FitConfig` fields (`inference=SVI(steps=3000)`, `prior=...`,
            `use_sensitivity=...`), which replace the config's; or flat sampler settings of the
            chosen method (`num_warmup`, `num_samples`, `num_chains`, `target_accept_prob`,
            `max_tree_depth`, `chain_method`; `svi_steps`, `svi_learning_rate`, `svi_guide`,
            with num_samples × num_chains SVI draws), read by
            `bayes_s2r.belief.inference.fit_config`.

    Returns:
        `GainBelief` with `diagnostics` (rhat_max, ess_min, ess_bulk_min, ess_tail_min,
        divergences, ok, reason), `extra["baseline"]` (posterior mean J of the current policy,
        when it has evidence) and an InferenceData with posterior, observed_data and
        sample_stats.

    Example:
        >>> from bayes_s2r import Candidate, PairedEval
        >>> cands = [Candidate("dr", "adaptation", "data", method="DR")]
        >>> ev = [PairedEval("dr", 30, 50, 20, 50)]
        >>> b = fit_gains(ev, cands, inference=NUTS(num_warmup=200, num_samples=200))
        >>> 0.0 < float(b.mean()["dr"]) < 0.4
        True
    """
    cfg = fit_config(config, method, **options)
    seed = require_seed("seed", seed)
    if isinstance(candidates, (str, bytes, Mapping)) or not isinstance(candidates, Iterable):
        raise InputError("candidates", candidates, "a sequence of Candidate")
    candidates = tuple(candidates)
    if not isinstance(objective, str):
        raise InputError("objective", objective, "an objective name (text)")
    evidence = iter_records(evidence)   # read once (a Ledger, a list or a generator)
    # Evidence is selected by objective: a name nothing carries would silently fit the prior.
    known = {"success"} | {o for c in candidates for o in getattr(c, "objectives", ())}
    present = {r.objective for r in evidence if isinstance(r, (PairedEval, PairedReturns))}
    if objective not in known | present:
        raise InputError("objective", objective,
                         f"an objective of the evidence {sorted(present)} or of the candidates "
                         f"{sorted(known)}")
    prep = prepare_gains(evidence, candidates, current_policy=current_policy, lineage=lineage,
                         trained_from=trained_from, prior=cfg.prior, objective=objective,
                         use_sensitivity=cfg.use_sensitivity)
    if isinstance(cfg.inference, SVI):
        from bayes_s2r.belief.svi import fit_svi

        return fit_svi(prep, cfg.inference, seed=seed)
    return _fit_nuts(prep, cfg.inference, seed)


def _fit_nuts(prep: PreparedGains, nuts: NUTS, seed: int) -> GainBelief:
    num_chains, num_samples, chain_method = nuts.num_chains, nuts.num_samples, nuts.chain_method
    if chain_method is None:
        chain_method = "parallel" if num_chains > 1 and jax.local_device_count() >= num_chains else "sequential"
    if chain_method == "parallel" and jax.local_device_count() < num_chains:
        raise InputError("chain_method", chain_method,
                         f"'sequential' ({jax.local_device_count()} devices < {num_chains} chains)")

    run = nuts_runner(prep, num_warmup=nuts.num_warmup, num_samples=num_samples, num_chains=num_chains,
                      chain_method=chain_method, target_accept=nuts.target_accept_prob,
                      max_tree_depth=nuts.max_tree_depth)
    keys = jax.random.split(jax.random.key(seed), num_chains)
    sites, stats = jax.device_get(run(keys))
    names, draws = assemble(prep, sites, num_chains)
    checked = np.concatenate([draws, np.asarray(sites["baseline"], np.float64)[..., None]], axis=-1)
    if prep.data.deployed is not None:  # the deployed alternative adds 0 over itself: nothing to diagnose
        checked = np.delete(checked, int(prep.data.deployed), axis=-1)
    total = num_chains * num_samples
    diag = diagnose_draws(checked, int(np.sum(stats["diverging"])),
                          ess_min_required=min(DIAGNOSTIC_THRESHOLDS["ess_min"], total / 4))
    diag.update(method="nuts", chains=num_chains, num_samples=num_samples, num_warmup=nuts.num_warmup,
                chain_method=chain_method)
    if math.isnan(diag["rhat_max"]):
        diag["ok"] = False
        diag["reason"] = "too few draws to compute R-hat"
    return GainBelief(names, draws.reshape(total, -1), chains=num_chains, diagnostics=diag,
                      method="nuts", inference_data=inference_data(prep, sites, stats, names),
                      extra=extra_of(prep, sites))
