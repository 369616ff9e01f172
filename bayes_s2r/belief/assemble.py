"""From a fit's model sites to a `GainBelief`'s columns, `InferenceData` and extra (NUTS and SVI)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bayes_s2r.belief.data import PreparedGains

__all__ = ["assemble", "extra_of", "inference_data"]


def assemble(prep: PreparedGains, sites: dict, chains: int) -> tuple[list[str], np.ndarray]:
    """Columns of the belief: gains of adaptations, then `sensitivity:<k>`; [chains, draws, M]."""
    parts = [np.asarray(sites["gain"], np.float64)]
    names = list(prep.names)
    if prep.directions and "sensitivity" in sites:
        parts.append(np.asarray(sites["sensitivity"], np.float64).reshape(chains, -1, len(prep.directions)))
        names += [f"sensitivity:{k}" for k in prep.directions]
    return names, np.concatenate(parts, axis=-1)


def inference_data(prep: PreparedGains, sites: dict, stats: dict | None, names: Sequence[str]):
    from bayes_s2r.belief.posterior import az

    n_pol = len(prep.policies)
    methods = sorted({int(i) for i in np.asarray(prep.data.cand_method)})
    posterior = {"gain": np.asarray(sites["gain"]), "baseline": np.asarray(sites["baseline"]),
                 "alpha": np.asarray(sites["alpha"])[..., :n_pol]}
    coords = {"candidate": list(prep.names), "policy": [str(p) for p in prep.policies],
              "cell": [f"{c}@{p}" for c, p in zip(prep.observed["cell_candidate"],
                                                   prep.observed["cell_policy"])]}
    dims = {"gain": ["candidate"], "alpha": ["policy"], "treated_successes": ["cell"],
            "treated_episodes": ["cell"], "returns_n": ["cell"], "returns_mean": ["cell"],
            "control_successes": ["policy"], "control_episodes": ["policy"]}
    for k in ("mu_gain", "tau_method", "tau_group", "tau_cand"):
        if k in sites:
            posterior[k] = np.asarray(sites[k])
    if "sensitivity" in sites and prep.directions:
        posterior["sensitivity"] = np.asarray(sites["sensitivity"])
        coords["direction"] = list(prep.directions)
        dims["sensitivity"] = ["direction"]
    if "fix" in sites:  # which candidate is the one fix in each draw: 0 none, m + 1 candidate m
        posterior["fix"] = np.asarray(sites["fix"])
    if "fixes" in sites:  # with a fix per method: 1 where the candidate is a fix in the draw
        posterior["fixes"] = np.asarray(sites["fixes"])
        dims["fixes"] = ["candidate"]
    if "order" in sites:
        posterior["order"] = np.asarray(sites["order"])
        coords["applied"] = coords["evaluated"] = [str(i) for i in methods]
        dims["order"] = ["applied", "evaluated"]
    observed = {k: np.asarray(v, np.float64) for k, v in prep.observed.items()
                if k not in ("cell_candidate", "cell_policy")}
    kwargs = {"sample_stats": {k: np.asarray(v) for k, v in stats.items()}} if stats else {}
    return az.from_dict(posterior=posterior, observed_data=observed, coords=coords, dims=dims, **kwargs)


def extra_of(prep: PreparedGains, sites: dict) -> dict:
    extra = {"current_policy": prep.current_policy, "policies": prep.policies,
             "directions": prep.directions, "notes": prep.notes, "prior": prep.spec.prior}
    if "fix_weight" in sites:  # P(candidate m is the fix) and P(none is): each draw's conditional, averaged
        p = np.asarray(sites["fix_weight"], np.float64).reshape(-1, len(prep.names) + 1).mean(0)
        extra["fix_probability"] = {name: float(p[i + 1]) for i, name in enumerate(prep.names)}
        extra["no_fix_probability"] = float(p[0])
    # the current policy's J was measured (a deployed alternative's, by its own cell)
    if float(prep.data.control_episodes[0]) > 0 or prep.data.deployed is not None:
        extra["baseline"] = float(np.mean(np.asarray(sites["baseline"])))
    return extra
