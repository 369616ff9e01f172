"""Fixtures for the report tests: a synthetic campaign ledger and a headless browser."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bayes_s2r.evidence.records import (
    DecisionRecord,
    DeploymentEval,
    ExecutionOutcome,
    PairedEval,
    RealizedCost,
    SensitivityTrial,
    SystemIdRecord,
)

CANDIDATES = [
    {"name": "sens_latency", "role": "diagnosis", "lens": ["model"], "observes": "sensitivity:latency",
     "cost": {"compute": 4.0, "eng": 1.0}},
    {"name": "dr_wide", "role": "adaptation", "lens": ["data"], "method": "DR", "targets": "latency",
     "cost": {"compute": 40.0, "eng": 2.0}},
    {"name": "da_obs", "role": "adaptation", "lens": ["representation"], "method": "DA",
     "cost": {"compute": 20.0, "eng": 6.0}},
    {"name": "ft_real", "role": "adaptation", "lens": ["data", "optimization"], "method": "FT",
     "cost": {"real": 3.0, "compute": 10.0, "eng": 3.0}, "touches_robot": True},
    {"name": "si_latency", "role": "model_update", "lens": ["model"], "method": "SI",
     "cost": {"real": 1.0, "eng": 4.0}, "touches_robot": True, "repeatable": False},
]
ROLES = {c["name"]: c["role"] for c in CANDIDATES}
START = {"real": 10.0, "compute": 200.0, "eng": 40.0}
WEIGHTS = {"real": 0.02, "compute": 0.0005, "eng": 0.003, "scarcity": 0.5}


def _table(mu, cvu, budget, ucb, infeasible=()):
    """A decision table as the campaign writes it (NaN as None)."""
    rows = []
    lam = [WEIGHTS[k] for k in ("real", "compute", "eng")]
    for c in CANDIDATES:
        name = c["name"]
        cost = [c["cost"].get(k, 0.0) for k in ("real", "compute", "eng")]
        c_lambda = sum(a * b for a, b in zip(lam, cost))
        m = mu.get(name, 0.0)
        u0 = m - c_lambda
        affordable = all(c["cost"].get(k, 0.0) <= budget[k] for k in budget)
        safe = ucb.get(name, 0.0) <= 0.05
        rows.append({
            "name": name, "role": c["role"], "mu_dJ": m, "C_lambda": c_lambda, "U0": u0,
            "MV": m / c_lambda if c["role"] == "adaptation" else None, "CVU": cvu.get(name, 0.0),
            "Q": u0 + cvu.get(name, 0.0), "ucb_exec": ucb.get(name) if c.get("touches_robot") else None,
            "safe": safe, "affordable": affordable,
            "feasible": safe and affordable and name not in infeasible,
            "excluded_reason": None if safe else "execution risk",
        })
    return rows


def _belief(mu, sd):
    return {n: {"mean": mu[n], "sd": sd[n], "hdi_low": mu[n] - 1.645 * sd[n],
                "hdi_high": mu[n] + 1.645 * sd[n]} for n in mu}


def synthetic_campaign():
    """Four rounds: a sensitivity diagnosis, a DR adaptation, a robot fine-tune, a stop."""
    recs, budget = [], dict(START)
    ucb = {"ft_real": 0.0493, "si_latency": 0.2161}
    plan = [
        # round, chosen, stop, mu, sd, cvu, p_best, flip, cost, current_J
        (0, "sens_latency", None, {"dr_wide": 0.10, "da_obs": 0.05, "ft_real": 0.12},
         {"dr_wide": 0.08, "da_obs": 0.06, "ft_real": 0.09},
         {"sens_latency": 0.10, "dr_wide": 0.01, "da_obs": 0.0, "ft_real": 0.004},
         {"sens_latency": 0.41, "dr_wide": 0.33, "ft_real": 0.18, "(stop)": 0.08}, 0.59,
         {"compute": 4.0, "eng": 1.2}, 0.42),
        (1, "dr_wide", None, {"dr_wide": 0.21, "da_obs": 0.04, "ft_real": 0.11},
         {"dr_wide": 0.05, "da_obs": 0.05, "ft_real": 0.08},
         {"dr_wide": 0.01, "da_obs": 0.0, "ft_real": 0.02, "sens_latency": 0.0},
         {"dr_wide": 0.86, "ft_real": 0.11, "(stop)": 0.03}, 0.14,
         {"compute": 43.5, "eng": 2.5}, 0.42),
        (2, "ft_real", None, {"dr_wide": 0.01, "da_obs": 0.02, "ft_real": 0.09},
         {"dr_wide": 0.03, "da_obs": 0.04, "ft_real": 0.05},
         {"ft_real": 0.005, "da_obs": 0.0},
         {"ft_real": 0.71, "da_obs": 0.09, "(stop)": 0.20}, 0.29,
         {"real": 3.4, "compute": 9.0, "eng": 3.5}, 0.61),
        (3, None, "economic", {"dr_wide": 0.0, "da_obs": 0.01, "ft_real": 0.02},
         {"dr_wide": 0.02, "da_obs": 0.03, "ft_real": 0.03}, {},
         {"(stop)": 0.82, "ft_real": 0.12, "da_obs": 0.06}, 0.18, None, 0.70),
    ]
    recs.append(ExecutionOutcome("ft_real", 59, 0, round=0))
    recs.append(ExecutionOutcome("si_latency", 20, 1, round=0))
    for t, chosen, stop, mu, sd, cvu, p_best, flip, cost, j in plan:
        recs.append(DecisionRecord(
            round=t, chosen=chosen, stop_reason=stop,
            table=_table(mu, cvu, budget, ucb, infeasible=("sens_latency",) if t == 3 else ()),
            seed=100 + t, version="0.1.0",
            extra={"p_best": p_best, "flip_probability": flip, "budget": dict(budget),
                   "lambda": [WEIGHTS["real"], WEIGHTS["compute"], WEIGHTS["eng"]],
                   "belief": _belief(mu, sd), "current_J": j, "utility": "mean"}))
        if cost is not None:
            recs.append(RealizedCost(chosen, round=t, **cost))
            budget = {k: budget[k] - cost.get(k, 0.0) for k in budget}
    for d, s in (("latency", 14), ("mass", 38), ("damping", 40), ("obs_noise", 31)):
        recs.append(SensitivityTrial(d, 0.0, 43, 50, round=0, policy="pi0"))
        recs.append(SensitivityTrial(d, 1.0, s, 50, round=0, policy="pi0"))
    recs.append(SensitivityTrial("latency", 1.0, 6, 50, round=0, policy="pi0",
                                 pair_direction="mass", pair_level=1.0))
    recs.append(PairedEval("dr_wide", 32, 50, 21, 50, round=1, policy="pi1"))
    recs.append(PairedEval("ft_real", 36, 50, 31, 50, round=2, policy="pi2"))
    recs.append(ExecutionOutcome("ft_real", 12, 0, round=2))
    recs.append(SystemIdRecord("si_latency", {"latency": {"mean": 2.1, "sd": 0.3}}, 16, round=0))
    recs.append(DeploymentEval("pi2", 200, 141, 1, round=3))
    meta = {
        "campaign": {"world": "pendulum-latency", "seed": 7, "start_budget": dict(START),
                     "weights": dict(WEIGHTS), "alpha_exec": 0.05, "alpha_deploy": 0.05,
                     "delta": 0.05, "beta": 1.0, "candidates": CANDIDATES},
        "last_completed_round": 3,
        "deployment": {"policy": "pi2", "ucb_unsafe": 0.0235, "alpha_deploy": 0.05,
                       "passes": True, "J_real": 0.705},
    }
    return recs, meta


@pytest.fixture(scope="session")
def campaign():
    """(records, meta) of a finished four-round campaign."""
    return synthetic_campaign()


def find_browser() -> str | None:
    """Debian's /usr/bin/chromium, or chromium / chromium-browser on PATH."""
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def require_browser() -> str:
    """A Chromium path; fails under CI (env CI set) when none is found, else skips."""
    path = find_browser()
    if path is None:
        message = ("no Chromium found (looked for /usr/bin/chromium, `chromium`, `chromium-browser`); "
                   "install it with `apt-get install -y chromium`")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def browser() -> str:
    """Path of a headless-capable Chromium (see `require_browser`)."""
    return require_browser()


@pytest.fixture
def browser_requirement():
    """The `require_browser` function itself, for testing its CI behaviour."""
    return require_browser


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory, campaign) -> Path:
    """A report made once from the synthetic campaign, shared by the page tests."""
    from bayes_s2r.report import make_report

    records, meta = campaign
    out = tmp_path_factory.mktemp("report")
    make_report((records, meta), out, posterior="summary")
    return out


BROWSER_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--virtual-time-budget=5000",
)


def run_browser(browser: str, page: Path, profile: Path, *args: str) -> str:
    """Open `page` in headless Chromium with `args`; return its stdout (e.g. the DOM)."""
    import subprocess

    cmd = [browser, *BROWSER_FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{cmd} failed ({done.returncode}): {done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture(scope="session")
def open_page(browser):
    """`open_page(page, profile, *args) -> stdout`: the page in headless Chromium."""
    return lambda page, profile, *args: run_browser(browser, page, profile, *args)
