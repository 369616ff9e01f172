"""Fast, variational fit of the gains model: NumPyro SVI with an Optax optimizer.

One jitted function per data shape runs `svi.init`, all optimisation steps (`lax.scan`) and
the posterior draws (`Predictive` with the guide). The guide is
`AutoLowRankMultivariateNormal` (default, keeps posterior correlations at a cost linear in
the dimension) or `AutoNormal` (mean-field). Variational intervals are usually too narrow
on hierarchical models; the belief says it is variational and reports the final ELBO and
whether the optimisation converged.
"""

from __future__ import annotations

import functools
from collections import OrderedDict

import jax
import numpy as np
import optax
from jax import lax
from numpyro.infer import SVI, Predictive, Trace_ELBO
from numpyro.infer.autoguide import AutoLowRankMultivariateNormal, AutoNormal
from numpyro.infer.initialization import init_to_median
from numpyro.optim import optax_to_numpyro

from bayes_s2r.belief.data import PreparedGains
from bayes_s2r.belief.posterior import GainBelief
from bayes_s2r.errors import InputError
from bayes_s2r.models.gains import gains_model

__all__ = ["GUIDES", "TRACE_COUNT", "elbo_converged", "fit_svi", "svi_runner"]

GUIDES = ("lowrank", "normal")
_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 8
TRACE_COUNT = {"svi": 0}
_KEEP = ("gain", "baseline", "sensitivity", "alpha", "mu_gain", "tau_method", "tau_group", "tau_cand")


def elbo_converged(losses: np.ndarray, window: int | None = None) -> bool:
    """True when the mean loss of the last window is within noise of the window before it.

    The threshold is three standard errors of the difference of the two window means, or
    0.1 % of the loss, whichever is larger.
    """
    losses = np.asarray(losses, np.float64)
    window = max(10, len(losses) // 10) if window is None else window
    if len(losses) < 2 * window or not np.all(np.isfinite(losses[-2 * window:])):
        return False
    last, prev = losses[-window:], losses[-2 * window: -window]
    se = np.sqrt((last.var() + prev.var()) / window)
    return bool(abs(last.mean() - prev.mean()) <= max(3.0 * se, 1e-3 * abs(last.mean())))


def svi_runner(prep: PreparedGains, *, num_steps: int, learning_rate: float, guide: str,
               num_draws: int):
    """The compiled SVI function for `prep`'s shapes: `run(rng_key) -> (sites, losses)`."""
    key = (prep.spec, str(jax.tree.structure((prep.data, prep.sens))),
           tuple(np.shape(x) for x in jax.tree.leaves((prep.data, prep.sens))),
           num_steps, learning_rate, guide, num_draws)
    fn = _CACHE.get(key)
    if fn is None:
        model = functools.partial(gains_model, spec=prep.spec)
        if guide == "lowrank":
            g = AutoLowRankMultivariateNormal(model, init_loc_fn=init_to_median(num_samples=15))
        else:
            g = AutoNormal(model, init_loc_fn=init_to_median(num_samples=15), init_scale=0.05)
        schedule = optax.cosine_decay_schedule(learning_rate, num_steps, alpha=0.05)
        optim = optax_to_numpyro(optax.chain(optax.clip_by_global_norm(100.0), optax.adam(schedule)))
        svi = SVI(model, g, optim, Trace_ELBO())
        svi.init(jax.random.key(0), prep.data, sens=prep.sens)   # sets up the guide's prototype

        @jax.jit
        def fn(rng_key, data, sens):
            TRACE_COUNT["svi"] += 1
            k_init, k_draw = jax.random.split(rng_key)
            state = svi.init(k_init, data, sens=sens)
            state, losses = lax.scan(lambda s, _: svi.update(s, data, sens=sens), state, None,
                                     length=num_steps)
            params = svi.get_params(state)
            pred = Predictive(model, guide=g, params=params, num_samples=num_draws,
                              return_sites=[k for k in _KEEP])
            return pred(k_draw, data, sens=sens), losses

        _CACHE[key] = fn
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return lambda rng_key: fn(rng_key, prep.data, prep.sens)


def fit_svi(prep: PreparedGains, *, seed: int = 0, num_steps: int = 3000,
            learning_rate: float = 0.02, guide: str = "lowrank", num_draws: int = 1000) -> GainBelief:
    """Variational `GainBelief` for prepared gains evidence (see `fit_gains(method="svi")`).

    Returns:
        `GainBelief` with method "svi" and diagnostics {variational: True, elbo, converged,
        ok, reason, guide, num_steps}; ok is False when the ELBO had not converged.
    """
    from bayes_s2r.belief.fit import _assemble, _extra, _inference_data

    if guide not in GUIDES:
        raise InputError("svi_guide", guide, f"one of {GUIDES}")
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 20:
        raise InputError("svi_steps", num_steps, "a whole number >= 20")
    if not (isinstance(learning_rate, float) and 0 < learning_rate < 1):
        raise InputError("svi_learning_rate", learning_rate, "a number strictly between 0 and 1")
    run = svi_runner(prep, num_steps=num_steps, learning_rate=learning_rate, guide=guide,
                     num_draws=num_draws)
    sites, losses = jax.device_get(run(jax.random.key(seed)))
    sites = {k: np.asarray(v)[None] for k, v in sites.items()}       # one "chain"
    losses = np.asarray(losses)
    converged = elbo_converged(losses)
    tail = losses[-max(10, len(losses) // 10):]
    diag = {
        "method": "svi", "variational": True, "guide": guide, "num_steps": num_steps,
        "elbo": float(-tail.mean()), "elbo_sd": float(tail.std()), "converged": converged,
        "rhat_max": float("nan"), "ess_min": float("nan"), "ess_bulk_min": float("nan"),
        "ess_tail_min": float("nan"), "divergences": 0, "ok": converged,
        "reason": None if converged else "variational fit: the ELBO had not converged",
    }
    names, draws = _assemble(prep, sites, 1)
    idata = _inference_data(prep, sites, None, names)
    extra = _extra(prep, sites)
    extra["losses"] = losses
    return GainBelief(names, draws.reshape(num_draws, -1), chains=1, diagnostics=diag, method="svi",
                      inference_data=idata, extra=extra)
