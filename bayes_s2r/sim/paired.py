"""Paired evaluation and the transfer delta, under one evaluation protocol.

`paired_eval` runs the current and a candidate policy on matched seeds: the same initial
states and the same sensor-noise keys, in a built-in `World`, on a `Task` (a lab's own Brax
environment, optionally under a DR or at a hidden model point), or on a robot (anything
`is_robot` accepts: `run(key, policy, episodes)` and `hours_used`). ΔĴ is the mean of the
per-episode differences of the success indicators and its interval is the paired t interval
(the one `scipy.stats.ttest_rel(...).confidence_interval()` gives).

`transfer_delta` checks that sim and real share one policy interface (`check_shared_interface`)
and one protocol before it computes δ_J(π) = J_real(π) − J_sim(π).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
from scipy import stats as sps

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import DeploymentEval, PairedEval
from bayes_s2r.sim.params import broadcast_params
from bayes_s2r.sim.real import RealRobot
from bayes_s2r.sim.robot import Robot, is_robot
from bayes_s2r.sim.rollout import LinearPolicy, _episode_count, policy_label, simulate_batch
from bayes_s2r.sim.space import DR
from bayes_s2r.sim.task import Task, simulate_task
from bayes_s2r.sim.world import World
from bayes_s2r.vocab import check_shared_interface

__all__ = ["PairedResult", "TransferDelta", "paired_eval", "paired_interval", "transfer_delta"]


class PairedResult(NamedTuple):
    """Result of `paired_eval`.

    Attributes:
        delta: ΔĴ = Ĵ(candidate) − Ĵ(current).
        ci_low, ci_high: paired t interval at `level`.
        successes_candidate, successes_current, episodes: the counts.
        hours: robot-hours charged (0 in sim).
        unsafe: unsafe episodes of both policies together (real robot only; 0 in sim).
        record: the `PairedEval` record.
    """

    delta: float
    ci_low: float
    ci_high: float
    successes_candidate: int
    successes_current: int
    episodes: int
    hours: float
    unsafe: int
    record: PairedEval


class TransferDelta(NamedTuple):
    """δ_J(π) = J_real(π) − J_sim(π) with a paired t interval, and the real `DeploymentEval`."""

    j_sim: float
    j_real: float
    delta: float
    ci_low: float
    ci_high: float
    hours: float
    record: DeploymentEval


def paired_interval(treated: np.ndarray, control: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """(mean difference, low, high): the paired t interval of treated − control."""
    d = np.asarray(treated, float) - np.asarray(control, float)
    n = d.size
    mean = float(d.mean())
    if n < 2:
        return mean, -1.0, 1.0
    se = float(d.std(ddof=1)) / np.sqrt(n)
    half = float(sps.t.ppf(0.5 + level / 2, n - 1)) * se
    return mean, mean - half, mean + half


def _run(key, target, policy, n, dist=None):
    if isinstance(target, Task):
        if dist is None:
            stats = simulate_task(key, target, policy, episodes=n)
        else:  # the same draws for both arms: they depend on the key only
            k_xi, k_run = jax.random.split(key)
            stats = simulate_task(k_run, target, policy, dist.sample(k_xi, n), space=dist.space)
        return np.asarray(stats.success), np.asarray(stats.unsafe), 0.0
    if isinstance(target, World):
        stats = simulate_batch(key, target, policy, broadcast_params(target.params, n))
        return np.asarray(stats.success), np.zeros(n, bool), 0.0
    if is_robot(target):
        run = target.run(key, policy, n)
        success, unsafe = np.asarray(run.stats.success), np.asarray(run.stats.unsafe)
        if success.shape != (n,) or unsafe.shape != (n,):
            raise InputError("target.run", (success.shape, unsafe.shape),
                             f"a run whose stats.success and stats.unsafe hold {n} episodes")
        return success, unsafe, float(run.hours)
    raise InputError("target", target, "a World, a sim.Task or a robot (run(key, policy, episodes), hours_used)")


def paired_eval(key: jax.Array, target: World | Task | Robot, current, candidate, episodes: int = 64, *,
                candidate_name: str, level: float = 0.95, round: int = 0, policy_name: str | None = None,
                dist: DR | None = None) -> PairedResult:
    """Compare `candidate` with `current` on matched seeds and initial states.

    Args:
        key: PRNG key; both policies use it identically.
        target: a sim `World`, a `Task`, or a robot (`RealRobot` or any object with
            `run(key, policy, episodes)` and `hours_used`; it charges both arms).
        current, candidate: the policies (`LinearPolicy`, or any `Policy` on a task or robot
            that runs it).
        episodes: episodes per arm.
        candidate_name: the candidate (intervention) name for the record.
        level: confidence level of the interval.
        round: campaign round for the record.
        policy_name: the current policy's label (default: its `policy_id` / `Policy.label`).
        dist: a `Task` only: evaluate under this DR (`space.point(...)` for one model, e.g. a
            hidden "real" one); both arms get the same draws. None: the nominal model.
    """
    n = _episode_count(episodes)
    if not 0 < level < 1:
        raise InputError("level", level, "a confidence level in (0, 1)")
    if dist is not None and not (isinstance(target, Task) and isinstance(dist, DR)):
        raise InputError("dist", dist, "None, or a DR (space.dr / space.point) with a Task target")
    s_cur, u_cur, h_cur = _run(key, target, current, n, dist)
    s_cand, u_cand, h_cand = _run(key, target, candidate, n, dist)
    delta, lo, hi = paired_interval(s_cand, s_cur, level)
    rec = PairedEval(candidate=candidate_name, successes_treated=int(s_cand.sum()), episodes_treated=n,
                     successes_control=int(s_cur.sum()), episodes_control=n, round=round, matched=True,
                     policy=policy_name or policy_label(current))
    return PairedResult(delta, lo, hi, int(s_cand.sum()), int(s_cur.sum()), n, h_cur + h_cand,
                        int(u_cur.sum() + u_cand.sum()), rec)


def transfer_delta(key: jax.Array, sim: World, real: RealRobot, policy: LinearPolicy,
                   episodes: int = 64, *, level: float = 0.95, round: int = 0,
                   policy_name: str | None = None) -> TransferDelta:
    """δ_J(π) under one protocol, after checking that sim and real share one policy interface.

    Raises:
        InputError: when the interfaces or the protocols differ.
    """
    check_shared_interface(sim.interface, real.interface)
    if sim.protocol != real.protocol:
        raise InputError("protocol", real.protocol, f"the sim protocol {sim.protocol} (one evaluation protocol)")
    n = _episode_count(episodes)
    s_sim, _, _ = _run(key, sim, policy, n)
    run = real.run(key, policy, n)
    s_real = np.asarray(run.stats.success)
    delta, lo, hi = paired_interval(s_real, s_sim, level)
    rec = DeploymentEval(policy=policy_name or policy_label(policy), episodes=n, successes=int(s_real.sum()),
                         unsafe=run.unsafe, round=round)
    return TransferDelta(float(s_sim.mean()), float(s_real.mean()), delta, lo, hi, run.hours, rec)
