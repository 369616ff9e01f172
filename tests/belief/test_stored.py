"""A stored belief reads back bit for bit, only under its own key; the key follows the fit's inputs."""

from __future__ import annotations

import json

import numpy as np

from bayes_s2r.belief.posterior import GainBelief
from bayes_s2r.belief.stored import fit_key, from_json, to_json
from bayes_s2r.evidence.ledger import Ledger
from bayes_s2r.evidence.records import DecisionRecord, ExecutionOutcome, PairedEval
from bayes_s2r.vocab import Candidate

CANDS = [Candidate("a", "adaptation", "model"), Candidate("b", "adaptation", "data")]
RECORDS = [PairedEval("a", 30, 50, 25, 50), ExecutionOutcome("a", 10, 0)]


def _same(x: GainBelief, y: GainBelief) -> None:
    assert x.names == y.names and x.chains == y.chains and x.method == y.method
    assert x.draws.tobytes() == y.draws.tobytes()
    assert json.dumps(x.diagnostics, sort_keys=True) == json.dumps(y.diagnostics, sort_keys=True)


def test_draws_read_back_exactly_through_a_ledger(tmp_path):
    wide = GainBelief.from_gaussian(["a", "b"], [0.1, 0.0], [0.05, 0.02], num_draws=400)  # float64 draws
    narrow = GainBelief(["a"], np.linspace(-0.5, 0.5, 64, dtype=np.float32), chains=2,
                        diagnostics={"ok": np.bool_(True), "rhat_max": np.float32(1.001), "ess_min": np.nan},
                        extra={"baseline": 0.61, "prior": object(), "policies": ("pi0",)})
    with Ledger(tmp_path / "l.sqlite") as led:
        for i, b in enumerate((wide, narrow)):
            stored = to_json(b, "k")
            assert stored["dtype"] == ("float64", "float32")[i]
            led.set_meta(f"fit.{i}", stored)
            back = from_json(led.get_meta(f"fit.{i}"), "k")
            _same(back, GainBelief(b.names, b.draws, chains=b.chains, method=b.method,
                                   diagnostics=json.loads(stored["diagnostics"])))
    assert back.extra == {"baseline": 0.61, "policies": ["pi0"]}  # JSON data only
    assert back.diagnostics["rhat_max"] == float(np.float32(1.001)) and back.diagnostics["ok"] is True
    assert np.isnan(back.diagnostics["ess_min"])  # an SVI fit's R-hat and ESS are NaN


def test_another_key_or_a_damaged_value_reads_as_nothing():
    stored = to_json(GainBelief.from_gaussian(["a"], [0.1], [0.05], num_draws=10), "k")
    assert from_json(stored, "other") is None
    assert from_json({**stored, "format": 0}, "k") is None
    assert from_json({**stored, "draws": stored["draws"][:-8]}, "k") is None
    assert from_json({**stored, "draws": "not base64!"}, "k") is None
    assert from_json(None, "k") is None


def test_the_key_follows_evidence_candidates_and_settings_but_not_decisions():
    key = fit_key(RECORDS, CANDS, {"method": "nuts", "seed": 0})
    decision = DecisionRecord(round=1, chosen="a")
    assert fit_key([*RECORDS, decision], CANDS, {"method": "nuts", "seed": 0}) == key
    assert fit_key(RECORDS[:1], CANDS, {"method": "nuts", "seed": 0}) != key
    assert fit_key([*RECORDS, PairedEval("b", 1, 2, 1, 2)], CANDS, {"method": "nuts", "seed": 0}) != key
    assert fit_key(RECORDS, CANDS[:1], {"method": "nuts", "seed": 0}) != key
    assert fit_key(RECORDS, CANDS, {"method": "nuts", "seed": 1}) != key
    assert fit_key(RECORDS, CANDS, {"method": "svi", "seed": 0}) != key
