"""A small synthetic campaign shared by the campaign tests (imported by name)."""

import pytest

import bayes_s2r as bs


def synthetic_candidates():
    out = bs.BinomialPairedOutcome(episodes=60)
    return (
        bs.Candidate("dr_wide", "adaptation", "data", method="DR", batch=2.0,
                     cost=bs.Cost(compute=4.0, eng=0.5), outcome=out),
        bs.Candidate("si_once", "adaptation", "model", method="SI", repeatable=False,
                     cost=bs.Cost(real=0.5, eng=2.0), outcome=out),
        bs.Candidate("ft_real", "adaptation", "optimization", method="FT", touches_robot=True,
                     cost=bs.Cost(real=2.0, eng=1.0), outcome=out),
        bs.Candidate("pilot_dr", "diagnosis", "data", observes="dr_wide",
                     cost=bs.Cost(compute=1.0), outcome=out),
    )


def synthetic_world():
    return bs.SyntheticWorld(start_J=0.3, lift={"dr_wide": 0.35, "si_once": 0.5, "ft_real": 0.1},
                             unsafe_rate={"ft_real": 0.3})


def synthetic_config(**changes):
    base = {"budget": bs.Budget(real=4.0, compute=20.0, eng=8.0),
                "weights": bs.ResourceWeights(real=0.05, compute=0.005, eng=0.01),
                "max_rounds": 3, "cvu_samples": 64, "fit_method": "svi", "deploy_episodes": 100, "seed": 3}
    base.update(changes)
    return bs.CampaignConfig(**base)


@pytest.fixture
def synthetic():
    return synthetic_candidates(), synthetic_world(), synthetic_config()
