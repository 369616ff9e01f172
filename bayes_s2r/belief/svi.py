"""Fast, variational fit of the gains model: Gaussian VI on the unconstrained space, Optax.

The approximation q is a Gaussian over the model's latent sites after their bijections to
the real line (the space NUTS samples in): "lowrank" (default) has covariance
diag(s²) + W Wᵀ with rank ⌈√dim⌉, which keeps the main posterior correlations at a cost
linear in the dimension; "normal" is mean-field. The ELBO's entropy term is exact and the
expected log joint is estimated from one reparameterised draw per step. Its mean starts at
0 on the unconstrained space (the centre of NumPyro's `init_to_uniform`), its scales at 0.1:
there the data-centred levels of the gains model are at their posterior centre (they are
about N(0, 1) a posteriori), the scales at 1 and the other sites at their prior medians for
the default prior. (Starting from the median of prior draws compiled a second copy of the
model and cost 2–3 s of compile time for no better fit.)

One jitted function per data shape, `fn(rng_key, data, sens) -> (sites, losses)`, runs the
initialisation, all optimisation steps (`lax.scan`) and the posterior draws; the only
gradient it compiles is that of the model's log density, so it compiles in a fraction of
the time of a generic guide. Variational intervals are usually too narrow on hierarchical
models; the belief says it is variational and reports the final ELBO and whether the
optimisation converged.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import constrain_fn, potential_energy

from bayes_s2r.belief.assemble import assemble, extra_of, inference_data
from bayes_s2r.belief.compiled import CACHE_SIZE, abstract, concrete, unconstrained_prototype
from bayes_s2r.belief.data import PreparedGains
from bayes_s2r.belief.inference import GUIDES, SVI
from bayes_s2r.belief.posterior import GainBelief
from bayes_s2r.compiling import compiler_options
from bayes_s2r.errors import InputError
from bayes_s2r.models.gains import gains_model

__all__ = ["GUIDES", "elbo_converged", "fit_svi", "svi_runner"]

_KEEP = ("gain", "baseline", "sensitivity", "alpha", "mu_gain", "tau_method", "tau_group", "tau_cand", "fix", "fix_weight",
         "fixes")
_INIT_SCALE = 0.1
# A variational mean away from its optimum leaves a gradient of constant sign; near it the
# gradient is about Σ⁻¹(mean − optimum), so Σ_q·gradient / sd estimates the distance in sds
# (Σ_q, the guide's covariance, stands in for the posterior's; correlations included).
# Over the last window of steps, a mean whose gradient is significant (this many standard
# errors from 0) and puts it more than _MAX_OFFSET sd from its optimum has not converged.
# (The one-draw ELBO is too noisy to show a slow drift on its own, and the decaying step
# size makes the means look settled wherever they stopped.)
_MAX_GRAD_Z = 4.0
_MAX_OFFSET = 0.25


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


def _softplus_inv(y: float) -> float:
    return y + math.log(-math.expm1(-y))


def _gaussian(dim: int, guide: str):
    """(init(loc) -> params, sample(params, eps) -> z, entropy(params) -> H) of the guide."""
    rank = max(1, math.ceil(math.sqrt(dim))) if guide == "lowrank" else 0

    def init(loc):
        params = {"loc": loc, "scale": jnp.full(dim, _softplus_inv(_INIT_SCALE))}
        if rank:
            params["factor"] = jnp.zeros((dim, rank))
        return params

    def sample(params, eps):           # eps [..., dim + rank]
        s = jax.nn.softplus(params["scale"])
        z = params["loc"] + s * eps[..., :dim]
        if rank:
            z = z + eps[..., dim:] @ params["factor"].T
        return z

    def offset_sd(params, g):  # Σ_q·g / marginal sd: the distance to the optimum, in sds
        s = jax.nn.softplus(params["scale"])
        if rank:
            w = params["factor"]
            return (s**2 * g + w @ (w.T @ g)) / jnp.sqrt(s**2 + jnp.sum(w**2, axis=1))
        return s * g

    def entropy(params):
        s = jax.nn.softplus(params["scale"])
        logdet = 2.0 * jnp.sum(jnp.log(s))
        if rank:
            w = params["factor"] / s[:, None]
            logdet = logdet + jnp.linalg.slogdet(jnp.eye(rank) + w.T @ w)[1]
        return 0.5 * logdet + 0.5 * dim * (1.0 + math.log(2.0 * math.pi))

    return init, sample, entropy, offset_sd, dim + rank


def _window(num_steps: int) -> int:
    return max(10, num_steps // 10)


def svi_runner(prep: PreparedGains, *, num_steps: int, learning_rate: float, guide: str,
               num_draws: int):
    """The compiled SVI function for `prep`'s shapes: `run(rng_key) -> (sites, losses, check)`.

    `check` = (grad_z, offset): over the last window of steps, the largest |mean| / standard
    error of the gradient with respect to a variational mean, and the largest estimated
    distance (in marginal sds) of a mean from its optimum among the significant ones.
    """
    fn = _svi_compiled(prep.spec, abstract((prep.data, prep.sens)), num_steps, learning_rate, guide,
                       num_draws)
    return lambda rng_key: fn(rng_key, prep.data, prep.sens)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _svi_compiled(spec, shapes: tuple, num_steps: int, learning_rate: float, guide: str, num_draws: int):
    """`fn(rng_key, data, sens)`: the jitted SVI fit for data of the given `abstract` shapes."""
    model = functools.partial(gains_model, spec=spec)
    proto = unconstrained_prototype(model, *concrete(shapes))
    flat, unravel = ravel_pytree(jax.tree.map(lambda v: jnp.zeros(v.shape, v.dtype), proto))
    init, sample, entropy, offset_sd, width = _gaussian(flat.size, guide)
    window = _window(num_steps)
    schedule = optax.cosine_decay_schedule(learning_rate, num_steps, alpha=0.05)
    optim = optax.chain(optax.clip_by_global_norm(100.0), optax.adam(schedule))

    @functools.partial(jax.jit, compiler_options=compiler_options())
    def fn(rng_key, data, sens):
        kw = {"sens": sens}
        k_fit, k_draw = jax.random.split(rng_key)

        def neg_elbo(params, eps):
            z = unravel(sample(params, eps))
            return potential_energy(model, (data,), kw, z) - entropy(params)

        params = init(jnp.zeros(flat.size, flat.dtype))

        def step(carry, k):
            params, opt_state = carry
            loss, grads = jax.value_and_grad(neg_elbo)(params, jax.random.normal(k, (width,)))
            updates, opt_state = optim.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), (loss, grads["loc"])

        (params, _), (losses, grad_loc) = lax.scan(step, (params, optim.init(params)),
                                                   jax.random.split(k_fit, num_steps))
        g = grad_loc[-window:]
        se = jnp.std(g, axis=0) / math.sqrt(window)
        z_all = jnp.abs(jnp.mean(g, axis=0)) / jnp.maximum(se, 1e-12)
        offset = jnp.abs(offset_sd(params, jnp.mean(g, axis=0)))
        check = (jnp.max(z_all), jnp.max(jnp.where(z_all >= _MAX_GRAD_Z, offset, 0.0)))
        z = sample(params, jax.random.normal(k_draw, (num_draws, width)))
        sites = jax.vmap(lambda zz: constrain_fn(model, (data,), kw, unravel(zz),
                                                 return_deterministic=True))(z)
        return {k: v for k, v in sites.items() if k in _KEEP}, losses, check

    return fn


def fit_svi(prep: PreparedGains, settings: SVI | None = None, *, seed: int = 0) -> GainBelief:
    """Variational `GainBelief` for prepared gains evidence (see `fit_gains(inference=SVI(...))`).

    Returns:
        `GainBelief` with method "svi" and diagnostics {variational: True, elbo, converged,
        grad_z, mean_offset_sd, ok, reason, guide, num_steps}; ok is False unless the ELBO
        had settled and, over the last tenth of the steps, no variational mean had a
        gradient both significant (4 standard errors) and worth more than 0.25 of its sd.
    """
    settings = SVI() if settings is None else settings
    if not isinstance(settings, SVI):
        raise InputError("inference", settings, "SVI(...) or None")
    num_steps, guide, num_draws = settings.steps, settings.guide, settings.num_draws
    run = svi_runner(prep, num_steps=num_steps, learning_rate=settings.learning_rate, guide=guide,
                     num_draws=num_draws)
    sites, losses, (grad_z, offset) = jax.device_get(run(jax.random.key(seed)))
    sites = {k: np.asarray(v)[None] for k, v in sites.items()}       # one "chain"
    losses = np.asarray(losses)
    grad_z, offset = float(grad_z), float(offset)
    converged = elbo_converged(losses, _window(num_steps)) and offset < _MAX_OFFSET
    tail = losses[-_window(num_steps):]
    diag = {
        "method": "svi", "variational": True, "guide": guide, "num_steps": num_steps,
        "elbo": float(-tail.mean()), "elbo_sd": float(tail.std()), "converged": converged,
        "grad_z": grad_z, "mean_offset_sd": offset,
        "rhat_max": float("nan"), "ess_min": float("nan"), "ess_bulk_min": float("nan"),
        "ess_tail_min": float("nan"), "divergences": 0, "ok": converged,
        "reason": None if converged else (
            f"variational fit had not converged (the ELBO still changing, or a mean about "
            f"{offset:.2f} sd from its optimum by its gradient over the last {_window(num_steps)} "
            f"steps; at most {_MAX_OFFSET})"),
    }
    names, draws = assemble(prep, sites, 1)
    idata = inference_data(prep, sites, None, names)
    extra = extra_of(prep, sites)
    extra["losses"] = losses
    return GainBelief(names, draws.reshape(num_draws, -1), chains=1, diagnostics=diag, method="svi",
                      inference_data=idata, extra=extra)
