"""The closed loop: campaign state, executors, rounds, stopping and resume."""

from bayes_s2r.campaign.config import CampaignConfig
from bayes_s2r.campaign.executor import Execution, Executor, SyntheticExecutor, SyntheticWorld
from bayes_s2r.campaign.loop import (
    RoundReport,
    executor_memory,
    resume_campaign,
    run_campaign,
    run_round,
    start_campaign,
)
from bayes_s2r.campaign.state import CampaignState, RoundSummary, load_state
from bayes_s2r.campaign.strategies import STRATEGY_IDS, Choice, make_chooser

__all__ = [
    "STRATEGY_IDS",
    "CampaignConfig",
    "CampaignState",
    "Choice",
    "Execution",
    "Executor",
    "RoundReport",
    "RoundSummary",
    "SyntheticExecutor",
    "SyntheticWorld",
    "executor_memory",
    "load_state",
    "make_chooser",
    "resume_campaign",
    "run_campaign",
    "run_round",
    "start_campaign",
]
