"""What system identification shares between a built-in `World` (`bayes_s2r.sim.sysid`) and a
lab's own `Task` (`bayes_s2r.sim.sysid_task`): the settings, the result, and the fit with its
calibrated posterior (`_fit_posterior`: Levenberg–Marquardt, the delete-one-episode jackknife,
the latency profile and the CEM fallback). `bayes_s2r.sim.sysid` explains the method.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np
from scipy import stats as sps

from bayes_s2r.errors import InputError, require_int, require_positive, require_probability
from bayes_s2r.evidence.records import SystemIdRecord
from bayes_s2r.sim.params import MAX_LATENCY, DRSpec, Params

__all__ = ["COVARIANCES", "FITTED", "Coord", "SIConfig", "SIResult"]

#: The continuous parameters fitted on a log scale.
FITTED = ("mass_scale", "damping_scale", "gear_scale")


class SIConfig(NamedTuple):
    """Identification settings.

    Attributes:
        method: "gradient" (Levenberg–Marquardt on exact Jacobians) or "cem".
        iterations: Levenberg–Marquardt steps at most (or CEM generations).
        latencies: latencies profiled (whole control steps).
        population: CEM population per generation.
        elite: CEM elite size.
        init_sd: standard deviation of the random start around the sim's log-scales (drawn
            with the key; 0 starts at the sim's ξ).
        tol: relative loss decrease below which the fit has converged.
        segment: control steps per replay segment (each replayed from its own first
            observation; the horizon replays whole episodes).
        refits: latencies fitted (the most likely ones at the start); the others are scored
            at the best fit.
        prior_sd: standard deviation of the normal prior on each log-scale, centred at the
            sim's ξ (0.5: a factor of 1.65 either way at one sd). It keeps a parameter the data
            barely inform (the reacher's link mass, next to its motors' armature) at a
            sensible value with the prior's spread.
        replay: on a `sim.Task`: "closed" (the policy re-run on the simulated, noise-free
            observations, through the task's own compiled episodes) or "open" (the logged
            actions replayed). A world always replays closed-loop segments.
    """

    method: str = "gradient"
    iterations: int = 30
    latencies: tuple = tuple(range(MAX_LATENCY + 1))
    population: int = 32
    elite: int = 8
    init_sd: float = 0.05
    tol: float = 1e-7
    segment: int = 25
    refits: int = 2
    prior_sd: float = 0.5
    replay: str = "closed"


class Coord(NamedTuple):
    """How a fitted coordinate θ maps to a direction's value: exp(θ) (`log`, a scale) or
    nominal + unit·θ (an offset or a user's direction); the prior is normal on θ."""

    name: str
    log: bool
    nominal: float
    unit: float


class SIResult(NamedTuple):
    """Result of `identify`.

    Attributes:
        params: the identified ξ (fitted fields replaced in the sim world's ξ).
        mean: parameter -> estimate (scales and latency).
        sd: parameter -> standard deviation (sandwich, delta method for the scales).
        cov_log: sandwich covariance of the log-scales, [3, 3].
        latency_probs: posterior over `latencies`, np.ndarray.
        loss: SSE at the estimate; sigma2: residual variance σ̂².
        method: the method that produced the estimate ("gradient" or "cem").
        sim_steps: simulated control steps used (a Jacobian evaluation counts as 4 replays).
        wall_s: measured wall-clock seconds.
        covariances: every estimator of `COVARIANCES` -> its covariance of the log-scales
            (`cov_log` is the jackknife's; the others are kept for comparison).
        dof: degrees of freedom of the interval's t quantile (episodes − 1).
        latencies: the latencies profiled.
        start: the fitted coordinates the fit started from (drawn with the key).
        coords: on a task, one `Coord` per fitted direction (in the order of `cov_log`); ()
            on a world (its coordinates are the log-scales of `FITTED`).
        space: on a task, its `ParamSpace` (`params` is then the identified value vector [D]
            in the space's order, unfitted directions at nominal); None on a world.
    """

    params: Params
    mean: dict
    sd: dict
    cov_log: np.ndarray
    latency_probs: np.ndarray
    loss: float
    sigma2: float
    method: str
    sim_steps: int
    wall_s: float
    covariances: dict
    dof: int
    latencies: tuple
    start: np.ndarray
    coords: tuple = ()
    space: Any = None

    def _coords(self) -> tuple:
        return self.coords or tuple(Coord(f, True, 1.0, 1.0) for f in FITTED)

    def record(self, candidate: str, trajectories: int, round: int = 0, policy: str | None = None):
        """The `SystemIdRecord` of this estimate."""
        est = {k: {"mean": float(self.mean[k]), "sd": float(self.sd[k])} for k in self.mean}
        return SystemIdRecord(candidate=candidate, estimates=est, trajectories=trajectories,
                              round=round, policy=policy)

    def interval(self, level: float = 0.9, covariance: str = "jackknife") -> dict:
        """Central `level` intervals of the fitted parameters: name -> (low, high).

        Computed on the fitted coordinate (the log of a scale) with Student's t (`dof`), then
        mapped back (a scale's interval is exponentiated). `covariance`
        picks another estimator of `COVARIANCES` (for comparison; "laplace" uses a normal
        quantile, as a plain Laplace approximation would).
        """
        level = require_probability("level", level)
        if covariance not in COVARIANCES:
            raise InputError("covariance", covariance, f"one of {COVARIANCES}")
        cov = self.covariances[covariance]
        q = sps.norm.ppf(0.5 + level / 2) if covariance == "laplace" else sps.t.ppf(0.5 + level / 2, self.dof)
        out = {}
        for i, c in enumerate(self._coords()):
            half, m = q * np.sqrt(max(cov[i, i], 0.0)), self.mean[c.name]
            lo, hi = (m * np.exp(-half), m * np.exp(half)) if c.log else (m - c.unit * half, m + c.unit * half)
            out[c.name] = (float(lo), float(hi))
        return out

    def to_dr(self, scale: float = 1.0):
        """A DR distribution around the identified posterior: "SI, then DR around it".

        Every fitted parameter is drawn from a normal centred at its estimate with standard
        deviation `scale` × its posterior sd; the latency from a rounded normal around its
        estimate with `scale` × its posterior sd; the other fields stay at the identified ξ (a
        world's `DRSpec`) or at the space's nominal (a task's `DR`, from `space.dr`).
        """
        scale = require_positive("scale", scale)
        if self.space is not None:
            names = [n for n in self.mean if n in self.space.names]
            return self.space.dr({n: scale * self.sd[n] for n in names}, center={n: self.mean[n] for n in names},
                                 normal={n: True for n in names})
        names = (*FITTED, "latency")
        return DRSpec.create(center=self.params, width={f: scale * self.sd[f] for f in names},
                             normal={f: True for f in names})


def _check_config(config: SIConfig) -> SIConfig:
    if config.method not in ("gradient", "cem"):
        raise InputError("si.method", config.method, "'gradient' or 'cem'")
    require_int("si.iterations", config.iterations, 1)
    lat = tuple(config.latencies)
    if not lat or any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= MAX_LATENCY for x in lat):
        raise InputError("si.latencies", config.latencies, f"whole numbers in 0..{MAX_LATENCY}")
    if config.elite < 2 or config.elite > config.population:
        raise InputError("si.elite", config.elite, "between 2 and the population")
    if not np.isfinite(config.init_sd) or config.init_sd < 0:
        raise InputError("si.init_sd", config.init_sd, "a finite number >= 0")
    require_positive("si.tol", config.tol)
    require_int("si.segment", config.segment, 2)
    require_int("si.refits", config.refits, 1)
    require_positive("si.prior_sd", config.prior_sd)
    if config.replay not in ("closed", "open"):
        raise InputError("si.replay", config.replay, "'closed' or 'open'")
    return config


def _levenberg_marquardt(fn, theta, iterations, tol, center, weight):
    """Minimise ||r(θ)||² + weight²·||θ − center||² from `theta`.

    fn(θ) -> (r [K, n], J [K, n, 3]). Returns (θ, r, J, objective) at the end.
    """
    penalty = lambda t: weight**2 * float(((t - center) ** 2).sum())
    r, jac = (np.asarray(x, np.float64) for x in fn(theta))
    obj, lam = float((r**2).sum()) + penalty(theta), 1e-3
    for _ in range(iterations):
        jf, rf = jac.reshape(-1, jac.shape[-1]), r.reshape(-1)
        h = jf.T @ jf + weight**2 * np.eye(len(theta))
        g = jf.T @ rf + weight**2 * (theta - center)
        step = -np.linalg.solve(h + lam * np.diag(np.diag(h)) + 1e-12 * np.eye(len(g)), g)
        step *= min(1.0, 0.5 / max(np.abs(step).max(), 1e-12))  # at most ×1.65 per step on a scale
        r2, jac2 = (np.asarray(x, np.float64) for x in fn(theta + step))
        obj2 = float((r2**2).sum()) + penalty(theta + step)
        if np.isfinite(obj2) and obj2 <= obj:
            done = obj - obj2 <= tol * max(obj, 1e-30) or np.abs(step).max() < 1e-6
            theta, r, jac, obj, lam = theta + step, r2, jac2, obj2, max(lam / 3, 1e-9)
            if done:
                break
        else:
            lam *= 10
            if lam > 1e8:
                break
    return theta, r, jac, obj


#: The covariance estimators `identify` computes (`SIResult.covariances`); "jackknife" is used.
COVARIANCES = ("jackknife", "sandwich", "laplace")


def _psd_inverse(cov: np.ndarray) -> np.ndarray:
    """Pseudo-inverse of a covariance: a direction the data leave without spread gets precision 0."""
    w, v = np.linalg.eigh(0.5 * (cov + cov.T))
    keep = w > 1e-12 * max(w.max(), 1e-300)
    return (v[:, keep] / w[keep]) @ v[:, keep].T


def _covariances(r: np.ndarray, jac: np.ndarray, n_values: float) -> tuple[dict, float]:
    """The data's covariances of the log-scales from the residuals at the fit, and σ̂².

    laplace: σ̂²(JᵀJ)⁻¹. sandwich: A⁻¹ Σ_k (s_k − s̄)(s_k − s̄)ᵀ A⁻¹ · K/(K−1), with A = JᵀJ and
    s_k = J_kᵀ r_k. jackknife: over leave-one-episode-out fits, each one Gauss-Newton step from
    the estimate, δ_k = (A − A_k)⁻¹ s_k, variance (K−1)/K Σ (δ_k − δ̄)(δ_k − δ̄)ᵀ.
    """
    k = r.shape[0]
    jf = jac.reshape(-1, jac.shape[-1])
    a = jf.T @ jf
    bread = np.linalg.pinv(a)
    scores = np.einsum("kni,kn->ki", jac, r)
    a_k = np.einsum("kni,knj->kij", jac, jac)
    deltas = np.stack([np.linalg.pinv(a - a_k[i]) @ scores[i] for i in range(k)])
    deltas = deltas - deltas.mean(0)
    centred = scores - scores.mean(0)
    sigma2 = max(float((r**2).sum()) / n_values, 1e-12)
    covs = {"jackknife": deltas.T @ deltas * (k - 1) / k,
            "sandwich": bread @ (centred.T @ centred * k / (k - 1)) @ bread,
            "laplace": sigma2 * bread}
    return covs, sigma2


def _design_effect(covs: dict) -> float:
    """How much the residuals' correlation inflates the Laplace variances (>= 1): the median
    jackknife-to-Laplace ratio over the identified directions."""
    lap, jk = np.diag(covs["laplace"]), np.diag(covs["jackknife"])
    ok = (lap > 0) & (jk > 0) & np.isfinite(lap) & np.isfinite(jk)
    return float(np.clip(np.median(jk[ok] / lap[ok]), 1.0, 1e6)) if ok.any() else 1.0


class _Fit(NamedTuple):
    """What `_fit_posterior` returns: the estimate and its calibrated posterior."""

    theta: np.ndarray        # fitted coordinates at the best latency
    latency: int
    probs: np.ndarray        # posterior over the latencies
    cov: np.ndarray          # posterior covariance of theta (jackknife)
    covs: dict               # every estimator of COVARIANCES -> posterior covariance
    loss: float              # SSE at the estimate
    sigma2: float
    method: str


def _fit_posterior(key: jax.Array, fn, population_sse, theta0: np.ndarray, center: np.ndarray, lats: tuple,
                   config: SIConfig, n_values: float) -> _Fit:
    """Levenberg–Marquardt (or CEM) fit and jackknife posterior of any replay.

    The latency profile evaluates `fn` (one compiled function serves the whole gradient fit);
    the CEM populations go through `population_sse`, or through `fn` too when it is None.

    Args:
        key: draws the CEM populations.
        fn: fn(θ [P], latency) -> (residuals [K, n], Jacobian [K, n, P]), one row per episode.
        population_sse: f(θs [M, P], latencies [M]) -> SSE of each pair, [M] (non-finite
            residuals count as 1e3); None: one `fn` call per pair.
        theta0: the start; center: the prior's centre (normal, sd `config.prior_sd`).
        lats: the latencies profiled; config: `SIConfig`; n_values: residuals that count.
    """
    dim = len(theta0)
    prior_w2 = lambda sigma2, deff: sigma2 * deff / config.prior_sd**2  # prior weight in SSE units
    penalty = lambda t, w2: w2 * float(((t - center) ** 2).sum())

    def sse(thetas, latencies):
        out = []
        for t, lat in zip(thetas, latencies):
            r = np.asarray(fn(t, lat)[0], np.float64)
            out.append(float((np.where(np.isfinite(r), r, 1e3) ** 2).sum()))
        return np.asarray(out)

    population_sse = sse if population_sse is None else population_sse

    def fit_cem(key, theta, latency):
        mu, sd = np.asarray(theta, np.float64), np.full(dim, 0.3)
        best = (np.inf, mu)
        for _ in range(config.iterations):
            key, sub = jax.random.split(key)
            pop = mu + sd * np.asarray(jax.random.normal(sub, (config.population, dim)))
            loss = population_sse(pop, [latency] * config.population)
            order = np.argsort(loss)
            if loss[order[0]] < best[0]:
                best = (float(loss[order[0]]), pop[order[0]])
            elite = pop[order[:config.elite]]
            mu, sd = elite.mean(0), elite.std(0) + 1e-3
        return best[1], best[0], np.diag(sd**2)

    def fit_gradient(lat, sse0):
        # the prior's weight needs the noise level and the residuals' design effect, known only
        # after a fit: fit with those at the start, then refit with those at the fit
        w2, theta = prior_w2(sse0 / n_values, 1.0), theta0
        for _ in range(2):
            theta, r, jac, obj = _levenberg_marquardt(lambda t: fn(t, lat), theta, config.iterations,
                                                      config.tol, center, np.sqrt(w2))
            if not (np.isfinite(obj) and np.all(np.isfinite(jac))):
                return None
            covs, sigma2 = _covariances(r, jac, n_values)
            w2 = prior_w2(sigma2, _design_effect(covs))
        return float((r**2).sum()) + penalty(theta, w2), theta

    # profile the latency at the start, fit at the most likely ones, keep the best fit
    prof = sse(np.repeat(theta0[None], len(lats), 0), lats)
    fits, method, cem_cov = {}, config.method, None
    for i in np.argsort(prof)[:config.refits]:
        lat = lats[int(i)]
        if method == "gradient":
            fit = fit_gradient(lat, prof[i])
            if fit is not None:
                fits[lat] = fit
                continue
            method, fits = "cem", {}
            break
    if method == "cem":
        for i in np.argsort(prof)[:config.refits]:
            lat = lats[int(i)]
            theta, loss, cov_lat = fit_cem(key, theta0, lat)
            fits[lat] = (loss, theta)
            if loss <= min(v[0] for v in fits.values()):
                cem_cov = cov_lat
    latency = min(fits, key=lambda lat: fits[lat][0])
    theta = fits[latency][1]

    r, jac = (np.asarray(x, np.float64) for x in fn(theta, latency))
    data_covs, sigma2 = _covariances(r, jac, n_values)
    deff = _design_effect(data_covs)
    w2 = prior_w2(sigma2, deff) if method == "gradient" else 0.0
    # posterior = calibrated data precision + prior precision (a direction the data leave
    # unidentified keeps the prior's spread)
    prior_prec = np.eye(dim) / config.prior_sd**2
    covs = {c: np.linalg.inv(_psd_inverse(v) + prior_prec) for c, v in data_covs.items()}
    cov = covs["jackknife"]
    if not np.all(np.isfinite(cov)):
        cov = cem_cov if cem_cov is not None else np.full((dim, dim), np.nan)
    # the profile: each fitted latency at its own fit, the others at the best fit; tempered
    # by the design effect like the scales' likelihood
    prof = sse(np.repeat(theta[None], len(lats), 0), lats) + penalty(theta, w2)
    for lat, (obj, _) in fits.items():
        prof[lats.index(lat)] = min(prof[lats.index(lat)], obj)
    logits = -(prof - prof.min()) / (2 * sigma2 * deff)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    return _Fit(np.asarray(theta, np.float64), int(latency), probs, np.asarray(cov), covs,
                float((r**2).sum()), sigma2, method)


def _latency_moments(fit: _Fit, lats: tuple) -> tuple[float, float]:
    """The latency estimate (the best fit's) and its posterior sd."""
    lat_arr = np.asarray(lats, float)
    var = (fit.probs * (lat_arr - (fit.probs * lat_arr).sum()) ** 2).sum()
    return float(fit.latency), float(np.sqrt(max(var, 0.0)))

