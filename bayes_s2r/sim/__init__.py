"""Brax testbed: a nominal sim world, hidden-parameter real worlds, and the experiments.

Import it explicitly (`from bayes_s2r import sim`); the top-level package does not import
Brax. Worlds wrap Brax's `inverted_pendulum` (generalized backend) with explicit parameters
ξ; every experiment is vectorized (vmap over episodes, scan over time) and compiled once per
(world structure, chunk shape).

A lab's own simulator and policy: `Task.from_brax(env, ...)` over any Brax environment (MJX
included), `ParamSpace` of named mismatch directions with `DR` distributions and a Brax/
Playground `randomization_fn`, and `Policy(apply, params)` for any JAX policy. `rollout`,
`rollout_dr`, `sensitivity_sweep`, `paired_eval` and `identify` (on `TaskData`) take a `Task`
where they take a `World`. `as_task(world)` turns a built-in world into such a task, and
`World(backend="mjx")` runs a built-in world on MJX.
"""

import contextlib as _contextlib
import io as _io
import warnings as _warnings

# Brax warns on every model load that its own pipelines are no longer maintained; the testbed
# knows (MJX through Brax's environments is the maintained path it supports). Only that notice
# is dropped, so other warnings still reach the user.
_warnings.filterwarnings("ignore", message=r"Brax System, piplines and environments are not actively",
                         category=UserWarning)

# mujoco.mjx prints a notice when its optional GPU backend (warp) is missing, which this
# CPU/JAX testbed does not use; import it here with that notice dropped, so that JSON on
# stdout stays parseable and a command's one-line error on stderr stays one line.
with _contextlib.redirect_stdout(_io.StringIO()):
    import mujoco.mjx  # noqa: F401

from bayes_s2r.sim.builtin import BuiltinEnv, BuiltinTask, as_task, builtin_space
from bayes_s2r.sim.interventions import (
    DEFAULTS,
    KINDS,
    CostModel,
    InterventionResult,
    load_costs,
    run_intervention,
)
from bayes_s2r.sim.paired import (
    PairedResult,
    TransferDelta,
    paired_eval,
    paired_interval,
    transfer_delta,
)
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
from bayes_s2r.sim.policy import Policy, as_policy
from bayes_s2r.sim.ppo import PPOConfig, PPOResult, train_ppo
from bayes_s2r.sim.real import RealRobot, RealRun, RealTrajectories, make_excitation
from bayes_s2r.sim.robot import Robot, is_robot, require_robot
from bayes_s2r.sim.rollout import (
    CHUNK,
    EpisodeStats,
    LinearPolicy,
    Trajectory,
    act,
    policy_id,
    policy_label,
    rollout,
    rollout_dr,
    rollout_trajectories,
    sample_init,
    simulate_batch,
)
from bayes_s2r.sim.space import DR, Latency, ModelField, ObsBias, ObsNoise, ParamSpace, SysFn
from bayes_s2r.sim.sweep import SweepResult, pair_effects, rank_directions, sensitivity_sweep
from bayes_s2r.sim.sysid import FITTED, SIConfig, SIResult, identify
from bayes_s2r.sim.sysid_task import TaskData
from bayes_s2r.sim.task import Episode, Task, TaskStats, episode_fn, never, simulate_task, survived
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
from bayes_s2r.sim.world import (
    BACKENDS,
    ENVS,
    Protocol,
    World,
    apply_params,
    list_cards,
    load_card,
    make_world,
)

__all__ = [
    # rollouts and policies
    "BACKENDS",
    "CHUNK",
    "DEFAULTS",
    "DIRECTIONS",
    # a lab's own simulator, mismatch space and policy
    "DR",
    # worlds and parameters
    "ENVS",
    "FITTED",
    "KINDS",
    "MAX_LATENCY",
    "PARAM_NAMES",
    # experiments
    "BuiltinEnv",
    "BuiltinTask",
    "CEMConfig",
    "CostModel",
    "DRSpec",
    "Direction",
    "ESConfig",
    "Episode",
    "EpisodeStats",
    "InterventionResult",
    "Latency",
    "LinearPolicy",
    "ModelField",
    "ObsBias",
    "ObsNoise",
    "PPOConfig",
    "PPOResult",
    "PairedResult",
    "ParamSpace",
    "Params",
    "Policy",
    "Protocol",
    # the real robot
    "RealRobot",
    "RealRun",
    "RealTrajectories",
    "Robot",
    "SIConfig",
    "SIResult",
    "SweepResult",
    "SysFn",
    "Task",
    "TaskData",
    "TaskStats",
    "TrainResult",
    "Trajectory",
    "TransferDelta",
    "World",
    "act",
    "apply_params",
    "as_policy",
    "as_task",
    "broadcast_params",
    "builtin_space",
    "episode_fn",
    "es_loop",
    "identify",
    "is_robot",
    "list_cards",
    "load_card",
    "load_costs",
    "load_policy",
    "make_excitation",
    "make_world",
    "never",
    "nominal_params",
    "nominal_policy",
    "pair_effects",
    "paired_eval",
    "paired_interval",
    "params_from_mapping",
    "perturb",
    "policy_id",
    "policy_label",
    "rank_directions",
    "require_robot",
    "rollout",
    "rollout_dr",
    "rollout_trajectories",
    "run_intervention",
    "sample_init",
    "sample_params",
    "save_policy",
    "sensitivity_sweep",
    "simulate_batch",
    "simulate_task",
    "stack_params",
    "survived",
    "train_cem",
    "train_es",
    "train_ppo",
    "transfer_delta",
]
