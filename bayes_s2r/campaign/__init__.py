"""The closed loop: campaign state, executors, rounds, stopping and resume."""

from bayes_s2r.campaign.config import CampaignConfig
from bayes_s2r.campaign.executor import Execution, Executor, SyntheticExecutor, SyntheticWorld
from bayes_s2r.campaign.loop import (
    RoundReport,
    resume_campaign,
    run_campaign,
    run_round,
    start_campaign,
)
from bayes_s2r.campaign.state import CampaignState, RoundSummary, load_state

__all__ = [
    "CampaignConfig",
    "CampaignState",
    "Execution",
    "Executor",
    "RoundReport",
    "RoundSummary",
    "SyntheticExecutor",
    "SyntheticWorld",
    "load_state",
    "resume_campaign",
    "run_campaign",
    "run_round",
    "start_campaign",
]
