"""Options of `decide` as one validated NamedTuple.

The decision functional named by `utility` is defined in `bayes_s2r.decision.utility`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from bayes_s2r.decision.utility import UTILITIES, Utility
from bayes_s2r.errors import (
    InputError,
    require_bool,
    require_choice,
    require_finite,
    require_finite_nonneg,
    require_int,
    require_probability,
    require_seed,
)

__all__ = ["CONTINUATIONS", "MULTI_MODES", "UTILITIES", "DecideConfig"]

MULTI_MODES = ("lexicographic", "pareto")
CONTINUATIONS = ("g0", "rollout")
#: How the rollout's base policy values a gain from its belief (`DecideConfig.base_index`).
BASE_INDEXES = ("gaussian", "draws")


class DecideConfig(NamedTuple):
    """Every option of `decide`, validated by `DecideConfig.make`.

    Attributes:
        alpha_exec: execution-risk threshold α_exec of the safety gate, in [0, 1].
        delta: the gate uses the UCB at level 1 − δ; δ in (0, 1).
        beta: weight β ≥ 0 of the look-ahead value in Q = U0 + β·CVU.
        cvu_samples: simulated outcomes per candidate (K ≥ 2).
        terminal: no next decision: CVU := 0.
        seed: seed of the look-ahead's outcome draws (same seed, same answer).
        utility: decision functional, one of `UTILITIES`.
        utility_level: tail level of "lcb"/"cvar", in (0, 0.5].
        collapse_ess: below this effective sample size (in draws) the importance weights
            are replaced by the moment-matched Gaussian update.
        bucket: the candidate axis is padded to a multiple of `bucket` rounded up to a
            power of two times `bucket`, so a shrinking set reuses the compiled look-ahead.
        chunk_bytes: upper bound on the bytes of one chunk of importance weights; outcomes
            are processed in chunks that fit it (bounds peak memory). Bigger chunks give
            XLA's threads more work per step; 4 MiB ran the look-ahead in half the time of
            1 MiB (benchmarks/bench_decide.py).
        objectives: objective names in priority order (the first is the primary one, on
            which U0/CVU/Q are computed); None means just the belief's primary objective.
        objective_tol: per secondary objective, the lexicographic tolerance.
        multi: "lexicographic" or "pareto".
        allow_bad_belief: accept a belief whose diagnostics are not ok.
        lookahead_depth: decisions the look-ahead sees after m: 1 (DESIGN's CVU, the default)
            or 2, with the "g0" continuation only (the rollout sees every decision left). A
            one-step look-ahead cannot value an experiment whose worth shows only two
            decisions later, e.g. a cheap pilot that decides which of several costly tries to
            make; depth 2 costs about `inner_samples` × `inner_draws` / draws one-step
            look-aheads.
        inner_samples: simulated outcomes per candidate of the second step (depth 2).
        inner_draws: draws that carry each next state in the second step (depth 2; at most
            the belief's draws).
        continuation: what stands in for the value V_{t+1} of the rest of the campaign in
            CVU: "g0" (DESIGN's G0, one more decision) or "rollout" (the value of a base
            policy run for `horizon` more decisions in scenarios drawn from the posterior;
            see `bayes_s2r.decision.rollout`).
        horizon: decisions left after this one, for the "rollout" continuation (0: none,
            CVU = 0).
        rollout_margin: with the "rollout" continuation, a try or the stop other than the
            base policy's own choice is made only when its Q is above that choice's by more
            than this many Monte-Carlo standard errors of the paired difference; otherwise the
            base policy's choice is made; a diagnosis that either side chooses stands. 0 (the
            default) is the plain argmax Q. Rollout improves on its base policy in expectation,
            but an argmax over noisy estimates follows the noise where the candidates are close.
        diagnosis_margin: where no try beats the stop, a diagnosis (a pilot, a safety probe)
            is chosen over the stop only when its Q is above the stop's by more than this many
            Monte-Carlo standard errors; otherwise the campaign stops. 0 (the default) is the
            plain argmax Q; a campaign's default is 1 (`CAMPAIGN_DECIDE`). A diagnosis is worth
            what it changes in the few scenarios where it changes a later choice, so its
            estimate is noisy, and where it is worth about its price the argmax over several
            alike follows the noise.
        base_index: how the rollout's base policy values a candidate's gain from its belief's
            mean and sd: "gaussian" (a normal of that mean and sd) or "draws" (that mean and sd
            with the shape of the posterior's draws: exact reservation values on the draws).
    """

    alpha_exec: float = 0.05
    delta: float = 0.05
    beta: float = 1.0
    cvu_samples: int = 1024
    terminal: bool = False
    seed: int = 0
    utility: str = "mean"
    utility_level: float = 0.1
    collapse_ess: float = 50.0
    bucket: int = 8
    chunk_bytes: int = 2**22  # 4 MiB: measured fastest on a 2-core CPU (32 x 4,000 x 256)
    objectives: tuple[str, ...] | None = None
    objective_tol: tuple[float, ...] = ()
    multi: str = "lexicographic"
    allow_bad_belief: bool = False
    lookahead_depth: int = 1
    inner_samples: int = 32
    inner_draws: int = 512
    continuation: str = "g0"
    horizon: int = 1
    rollout_margin: float = 0.0
    base_index: str = "gaussian"
    diagnosis_margin: float = 0.0

    @property
    def functional(self) -> Utility:
        """The decision functional `utility` and `utility_level` name."""
        return Utility.of(self)

    @classmethod
    def make(cls, **kwargs: Any) -> DecideConfig:
        """Validate every option in plain Python; InputError names the field and the value."""
        cfg = cls(**kwargs)
        alpha = require_probability("alpha_exec", cfg.alpha_exec, closed=True)
        delta = require_probability("delta", cfg.delta)
        beta = require_finite_nonneg("beta", cfg.beta)
        k = require_int("cvu_samples", cfg.cvu_samples, 2)
        for flag in ("terminal", "allow_bad_belief"):
            require_bool(flag, getattr(cfg, flag))
        seed = require_seed("seed", cfg.seed)
        require_choice("utility", cfg.utility, UTILITIES)
        level = require_finite("utility_level", cfg.utility_level)
        if not 0 < level <= 0.5:
            raise InputError("utility_level", cfg.utility_level, "a level in (0, 0.5]")
        ess = require_finite_nonneg("collapse_ess", cfg.collapse_ess)
        bucket = require_int("bucket", cfg.bucket, 1)
        chunk = require_int("chunk_bytes", cfg.chunk_bytes, 2**16)
        objectives = cfg.objectives
        if objectives is not None:
            objectives = (objectives,) if isinstance(objectives, str) else tuple(objectives)
            if not objectives or not all(isinstance(o, str) and o for o in objectives) or len(
                set(objectives)) != len(objectives):
                raise InputError("objectives", cfg.objectives, "distinct objective names in priority order")
        tol = tuple(require_finite_nonneg(f"objective_tol[{i}]", t) for i, t in enumerate(cfg.objective_tol))
        if objectives is not None and len(tol) > len(objectives):
            raise InputError("objective_tol", cfg.objective_tol,
                             f"at most one tolerance per objective ({len(objectives)})")
        depth = require_int("lookahead_depth", cfg.lookahead_depth, 1, 2)
        inner_k = require_int("inner_samples", cfg.inner_samples, 2)
        inner_s = require_int("inner_draws", cfg.inner_draws, 16)
        require_choice("multi", cfg.multi, MULTI_MODES)
        require_choice("continuation", cfg.continuation, CONTINUATIONS)
        horizon = require_int("horizon", cfg.horizon, 0)
        margin = require_finite_nonneg("rollout_margin", cfg.rollout_margin)
        diagnosis_margin = require_finite_nonneg("diagnosis_margin", cfg.diagnosis_margin)
        require_choice("base_index", cfg.base_index, BASE_INDEXES)
        if depth == 2 and cfg.continuation == "rollout":  # the rollout already sees every round left
            raise InputError("lookahead_depth", cfg.lookahead_depth,
                             "1 with continuation 'rollout' (it looks over all the decisions left); 2 with 'g0'")
        return cfg._replace(
            alpha_exec=alpha, delta=delta, beta=beta, cvu_samples=k, seed=seed, utility_level=level,
            collapse_ess=ess, bucket=bucket, chunk_bytes=chunk, objectives=objectives, objective_tol=tol,
            lookahead_depth=depth, inner_samples=inner_k, inner_draws=inner_s, horizon=horizon,
            rollout_margin=margin, diagnosis_margin=diagnosis_margin,
        )
