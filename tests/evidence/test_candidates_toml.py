"""Candidate sets in TOML: the example file, dump/load round trips, errors naming the candidate."""

from __future__ import annotations

import importlib.resources

import pytest

import bayes_s2r as bs
from bayes_s2r.belief.outcomes import BinomialPairedOutcome, GaussianOutcome, NoOutcome
from bayes_s2r.errors import InputError
from bayes_s2r.evidence.io import candidate_to_mapping, dump_candidates, load_candidates
from bayes_s2r.evidence.ledger import Ledger

EXAMPLES = importlib.resources.files("bayes_s2r") / "examples"


def test_example_candidates_describe_the_cart_pole_campaign():
    cands = {c.name: c for c in bs.load_candidates(EXAMPLES / "candidates.toml")}
    assert {c.method for c in cands.values() if c.role == "adaptation"} == {"SI", "DR", "DA", "FT"}
    assert sorted(c.batch for c in cands.values() if c.method == "DR") == [256.0, 1024.0]
    assert cands["da_obs_noise"].lens == ("representation",)
    ft = cands["ft_real"]
    assert (
        ft.touches_robot and ft.cost.real > 0 and ft.outcome == BinomialPairedOutcome(episodes=50)
    )
    assert cands["sweep_latency"].observed_direction == "latency"
    assert (
        cands["probe_dr_wide"].observes == "dr_wide" and cands["probe_dr_wide"].role == "diagnosis"
    )
    assert cands["refit_sim"].role == "model_update" and cands["refit_sim"].outcome == NoOutcome()
    assert not cands["si_calibrate"].repeatable


def test_example_ledger_is_consistent_with_the_candidates(tmp_path):
    cands = {c.name: c for c in load_candidates(EXAMPLES / "candidates.toml")}
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.import_csv(EXAMPLES / "ledger.csv")
        for rec in ledger.records("paired_eval"):
            assert cands[rec.candidate].role == "adaptation"
            assert 20 <= rec.episodes_treated <= 60
        for rec in ledger.records("execution_outcome"):
            assert cands[rec.candidate].touches_robot
        for rec in ledger.records("realized_cost"):
            assert rec.candidate in cands
        trials = ledger.records("sensitivity_trial")
        proxy = {
            (t.direction, t.level) for t in trials if t.tier == "proxy" and t.pair_direction is None
        }
        assert proxy == {
            (d, lv) for d in ("latency", "mass", "obs_noise") for lv in (0.0, 0.5, 1.0)
        }
        assert len(ledger.records("deployment_eval")) == 1


def test_dump_and_load_round_trip(tmp_path):
    cands = (
        bs.Candidate(
            "dr",
            "adaptation",
            ["data", "model"],
            method="DR",
            batch=512,
            cost=bs.Cost(compute=3.5),
            targets="latency",
            outcome=BinomialPairedOutcome(episodes=30, baseline=0.6),
            objectives=("success", "energy"),
        ),
        bs.Candidate(
            "ft",
            "adaptation",
            "optimization",
            cost=bs.Cost(real=2, eng=1),
            touches_robot=True,
            repeatable=False,
            outcome=GaussianOutcome(noise_sd=0.05),
        ),
        bs.Candidate("probe", "diagnosis", "data", observes="dr"),
        bs.Candidate("refit", "model_update", "model", outcome=NoOutcome()),
    )
    out = tmp_path / "c.toml"
    assert dump_candidates(cands, out) == 4
    assert load_candidates(out) == cands
    assert candidate_to_mapping(cands[2]) == {
        "name": "probe",
        "role": "diagnosis",
        "lens": "data",
        "observes": "dr",
        "cost": {"real": 0.0, "compute": 0.0, "eng": 0.0},
        "touches_robot": False,
        "repeatable": True,
    }
    example = load_candidates(EXAMPLES / "candidates.toml")
    dump_candidates(example, out)
    assert load_candidates(out) == example


def _toml(tmp_path, text):
    f = tmp_path / "c.toml"
    f.write_text(text)
    return f


GOOD = '[[candidate]]\nname = "dr"\nrole = "adaptation"\nlens = "data"\n'


@pytest.mark.parametrize(
    "extra, match",
    [
        (
            '[[candidate]]\nname = "b"\nrole = "oracle"\n',
            r"candidate\[1\] \(b\): candidate.role='oracle'",
        ),
        (
            '[[candidate]]\nname = "b"\nrole = "adaptation"\nlens = ["data", "vibes"]\n',
            r"candidate\[1\] \(b\): candidate.lens='vibes'",
        ),
        (
            '[[candidate]]\nname = "b"\nrole = "adaptation"\ncost = { real = -1 }\n',
            r"candidate\[1\] \(b\): candidate.cost.real=-1",
        ),
        (
            '[[candidate]]\nname = "b"\nrole = "adaptation"\ncost = { gpu = 1 }\n',
            r"candidate.cost.gpu=1",
        ),
        ('[[candidate]]\nname = "b"\nrole = "adaptation"\ncost = 5\n', r"candidate.cost=5"),
        ('[[candidate]]\nname = "b"\nrole = "diagnosis"\n', r"\(b\): candidate.observes=None"),
        (
            '[[candidate]]\nname = "b"\nrole = "diagnosis"\nobserves = "ghost"\n',
            r"candidates\[1\].observes='ghost'",
        ),
        ('[[candidate]]\nname = "dr"\nrole = "adaptation"\n', r"candidates\[1\].name='dr'"),
        (
            '[[candidate]]\nname = "b"\nrole = "adaptation"\noutcome = { kind = "poisson" }\n',
            r"candidate.outcome.kind='poisson'",
        ),
        (
            (
                '[[candidate]]\nname = "b"\nrole = "adaptation"\n'
                'outcome = { kind = "binomial_paired", episodes = 0 }\n'
            ),
            r"outcome.episodes=0",
        ),
        (
            '[[candidate]]\nname = "b"\nrole = "adaptation"\nprice = 3\n',
            r"\(b\): candidate.price=3",
        ),
        ('[[candidate]]\nrole = "adaptation"\n', r"candidate\[1\]: candidate.name=None"),
        (
            '[[candidate]]\nname = "b"\nrole = "adaptation"\nobjectives = 5\n',
            r"\(b\): candidate.objectives=5",
        ),
        (
            '[[candidate]]\nname = "b"\nrole = "adaptation"\nbatch = 0\n',
            r"\(b\): candidate.batch=0",
        ),
        (
            '[[candidate]]\nname = "b"\nrole = "adaptation"\ntouches_robot = "yes"\n',
            r"candidate.touches_robot='yes'",
        ),
    ],
)
def test_bad_candidate_names_index_name_and_field(tmp_path, extra, match):
    f = _toml(tmp_path, GOOD + extra)
    with pytest.raises(InputError, match=match) as err:
        load_candidates(f)
    assert str(f) in str(err.value)


@pytest.mark.parametrize(
    "text, match",
    [
        ("", r"candidate=None: expected one or more \[\[candidate\]\] tables"),
        ('[[candidates]]\nname = "x"\n', "one or more"),
        ("candidate = 3\n", "one or more"),
        ("candidate = [1]\n", r"candidate\[0\]: candidate=1"),
        ("[[candidate]\nname = 1", "well-formed TOML"),
    ],
)
def test_malformed_candidate_files(tmp_path, text, match):
    with pytest.raises(InputError, match=match):
        load_candidates(_toml(tmp_path, text))
    with pytest.raises(InputError, match="an existing TOML file"):
        load_candidates(tmp_path / "missing.toml")


def test_other_top_level_tables_are_left_alone(tmp_path):
    cands = load_candidates(_toml(tmp_path, "[budget]\nreal = 10\n" + GOOD))
    assert [c.name for c in cands] == ["dr"]


def test_dump_refuses_an_invalid_set(tmp_path):
    c = bs.Candidate("a", "adaptation")
    with pytest.raises(InputError, match="name"):
        dump_candidates([c, c], tmp_path / "c.toml")
    assert not (tmp_path / "c.toml").exists()
