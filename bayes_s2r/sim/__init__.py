"""Brax testbed: a nominal sim world, hidden-parameter real worlds, and the experiments.

Import it explicitly (`from bayes_s2r import sim`); the top-level package does not import
Brax. Worlds wrap Brax's `inverted_pendulum` (generalized backend) with explicit parameters
ξ; every experiment is vectorized (vmap over episodes, scan over time) and compiled once per
(world structure, chunk shape).
"""

from bayes_s2r.sim.interventions import (
    DEFAULTS,
    KINDS,
    CostModel,
    InterventionResult,
    load_costs,
    run_intervention,
)
from bayes_s2r.sim.paired import PairedResult, TransferDelta, paired_eval, paired_interval, transfer_delta
from bayes_s2r.sim.params import (
    DIRECTIONS,
    MAX_LATENCY,
    PARAM_NAMES,
    Direction,
    DRSpec,
    Params,
    broadcast_params,
    nominal_params,
    params_from_mapping,
    perturb,
    sample_params,
    stack_params,
)
from bayes_s2r.sim.real import RealRobot, RealRun, RealTrajectories, make_excitation
from bayes_s2r.sim.rollout import (
    CHUNK,
    TRACE_COUNTS,
    EpisodeStats,
    LinearPolicy,
    Trajectory,
    act,
    policy_id,
    rollout,
    rollout_dr,
    rollout_trajectories,
    sample_init,
    simulate_batch,
)
from bayes_s2r.sim.sweep import SweepResult, rank_directions, sensitivity_sweep
from bayes_s2r.sim.sysid import FITTED, SIConfig, SIResult, identify
from bayes_s2r.sim.train import (
    CEMConfig,
    ESConfig,
    TrainResult,
    es_loop,
    load_policy,
    nominal_policy,
    save_policy,
    train_cem,
    train_es,
)
from bayes_s2r.sim.world import ENVS, Protocol, World, apply_params, list_cards, load_card, make_world

__all__ = [
    # worlds and parameters
    "ENVS", "Protocol", "World", "apply_params", "list_cards", "load_card", "make_world",
    "DIRECTIONS", "MAX_LATENCY", "PARAM_NAMES", "Direction", "DRSpec", "Params", "broadcast_params",
    "nominal_params", "params_from_mapping", "perturb", "sample_params", "stack_params",
    # rollouts and policies
    "CHUNK", "TRACE_COUNTS", "EpisodeStats", "LinearPolicy", "Trajectory", "act", "policy_id",
    "rollout", "rollout_dr", "rollout_trajectories", "sample_init", "simulate_batch",
    # the real robot
    "RealRobot", "RealRun", "RealTrajectories", "make_excitation",
    # experiments
    "ESConfig", "CEMConfig", "TrainResult", "es_loop", "train_es", "train_cem", "save_policy", "load_policy", "nominal_policy",
    "FITTED", "SIConfig", "SIResult", "identify",
    "SweepResult", "rank_directions", "sensitivity_sweep",
    "PairedResult", "TransferDelta", "paired_eval", "paired_interval", "transfer_delta",
    "DEFAULTS", "KINDS", "CostModel", "InterventionResult", "load_costs", "run_intervention",
]
