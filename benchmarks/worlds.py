"""Random worlds for the allocation benchmark: a documented generator of world families.

A world is a set of candidates (adaptations with their own costs in the three budgets,
optional pilots and safety probes) and the hidden truth the campaign cannot see: each
adaptation's lift, pairwise synergy or conflict, repeat value, and each robot-touching
candidate's unsafe rate. The truth follows the headroom model of `SyntheticWorld`: an
adaptation with lift ℓ ≥ 0 applied to a policy at J adds ℓ·(1 − J), one with ℓ < 0 takes
|ℓ|·J away; a pair (a, c) with interaction f multiplies c's lift by f once a is in the
deployed policy's lineage (f > 1 synergy, f < 1 conflict); a repeat of c already in the
lineage brings `repeat` × its lift. In the "pandora" mode every adaptation is trained from
the starting policy instead, so tries are alternatives and the best one is kept.

Families (each a `Family`; `FAMILIES` below):

| family     | what it is like                                                                 |
| ---------- | ------------------------------------------------------------------------------- |
| `easy`     | 5 adaptations, 1–2 fixes (lift 0.5–0.9), the rest small; ample budget           |
| `needle`   | 6 adaptations, one fix among near-zero and harmful ones; budget for ~3 tries    |
| `small`    | 6 adaptations, many small gains (lift 0–0.2), some harmful, no fix; scarce      |
| `robot`    | the fix is often real fine-tuning, which needs robot hours, a safety probe and  |
|            | sometimes is truly unsafe; pilots can measure costly candidates in simulation    |
| `pilots`   | one fix among near-zero and harmful ones, budget for about two tries, and a      |
|            | cheap pilot of every adaptation: read a few, then make the one try that counts  |
| `pandora`  | alternatives from the start policy, near-exact evaluations: Weitzman's setting   |

Held out (`HELD_OUT`; `--families all` leaves them out): drawn after the rule's defaults were
set and never used to choose them, so they say how the rule does on a shape it was not
tuned to.

| family     | what it is like                                                                 |
| ---------- | ------------------------------------------------------------------------------- |
| `wide`     | 8 adaptations (three DR, two SI, two DA, one FT), 0–2 fixes of lift 0.3–0.8,    |
|            | starts anywhere in J 0.1–0.7, pilots of the SI candidates; room for ~4 tries    |
| `late`     | a policy that already works (J 0.6–0.9): little headroom, at most one fix, two   |
|            | fine-tunings that need the robot, harmful tries common; pilots of the DR ones   |
| `mixed`    | 7 adaptations, 1–2 moderate fixes (lift 0.2–0.5), synergy or conflict common,   |
|            | two fine-tunings with pilots                                                    |
| `failing`  | a policy that mostly fails (J 0.05–0.3), at most one fix, budget for two tries, |
|            | pilots of every adaptation but the fine-tuning                                  |
| `siblings` | 7 adaptations (three DR, two SI, two DA); a method works or not: each works     |
|            | with chance 0.3 and then every one of its candidates is a fix (lift 0.3–0.7)    |
| `rivals`   | 6 adaptations (three DR, SI, DA, FT), exactly one fix, a DR one 85% of the time |
|            | (70% drawn among the DR ones, else among all): siblings that are alternatives   |
| `noisy`    | 6 adaptations, at most one fix, paired evaluations of only 16 episodes per arm: |
|            | the adoption rule keeps or drops policies on weak evidence; pilots of the DA one |
| `sim_fix`  | 5 adaptations (DR, two SI, DA, FT), at most one fix, an SI one 60% of the time; |
|            | synergy or conflict common; a policy that starts at J 0.1–0.5                   |
| `kin`      | 7 adaptations (two DR, two SI, two DA, FT); each method works with chance 0.25  |
|            | (all its candidates fixes, lift 0.4–0.8), and at most one other fix             |

`siblings` and `rivals` were added to decide whether the levels a campaign's candidates share
should be sized from the team's past campaigns by default: in the first, siblings share a
component; in the second, one measured at zero makes the others more likely to be the fix.
`noisy` and `sim_fix` were drawn after `bayes-s2r prior` began to search the one-fix structure
by default, to test that choice on shapes it was not made on: the rule under it should not lose
to the rule under the fit without it with an interval excluding zero in either.
`kin` was drawn after a fix per method (`GainPrior.fix_unit="method"`) was built and measured on
`siblings`, to test it on a shape it was not made on.

Every campaign starts with no execution evidence: robot-touching candidates are shut by
the gate until a probe (or a simulation-based risk prior) opens it. A campaign declares how
its candidates are trained (`CampaignConfig.transition_rule`): "alternatives" in the
pandora mode, "headroom" otherwise.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

import bayes_s2r as bs
from bayes_s2r.belief.team_prior import (
    DEFAULT_FIX_PROBS,
    DEFAULT_LOCS,
    DEFAULT_METHOD_FIX_CONCENTRATIONS,
    DEFAULT_METHOD_LOCS,
    DEFAULT_METHOD_SPREADS,
    DEFAULT_SHARED_SCALES,
    DEFAULT_SKEWS,
)
from bayes_s2r.campaign.executor import Execution
from bayes_s2r.evidence.records import DeploymentEval, ExecutionOutcome, PairedEval

#: λ0, the team's prices (J points per unit): a robot-hour 0.05, a compute unit 0.01, an engineer-hour 0.01.
PRICES = {"real": 0.05, "compute": 0.01, "eng": 0.01}

#: Per method: lens, (real, compute, eng) cost ranges, touches the robot, repeatable, repeat value.
METHODS = {
    "DR": ("data", ((0, 0), (0.5, 2.0), (1.0, 3.0)), False, False, 0.0),
    "SI": ("model", ((0.1, 0.3), (0.2, 1.0), (2.0, 5.0)), False, False, 0.0),
    "DA": ("representation", ((0, 0), (0.5, 1.5), (2.0, 4.0)), False, False, 0.0),
    "FT": ("optimization", ((0.4, 0.8), (0.1, 0.3), (1.0, 2.0)), True, True, 0.4),
}


@dataclasses.dataclass(frozen=True)
class Family:
    """How one family of worlds is drawn.

    Attributes:
        name: the family's id.
        methods: the method of each adaptation, in candidate order.
        fixes: (low, high) number of fixes, drawn uniformly.
        fix_lift: (low, high) lift of a fix.
        small_lift: (low, high) lift of the other adaptations.
        harmful: chance that a non-fix is harmful, with lift −U(0.05, 0.3).
        interaction: chance per ordered pair of a synergy (×1.5) or conflict (×0.3), half each.
        fix_method: if set, the method a fix is drawn from with chance `fix_method_p`.
        fix_method_p: see `fix_method`.
        method_works: chance that a method works in a world; every candidate of a method that
            works is then a fix (on top of `fixes`), so siblings share a component.
        unsafe_p: chance that a robot-touching candidate is truly unsafe (rate U(0.05, 0.25));
            otherwise its rate is U(0, 0.004).
        start_J: (low, high) of the starting policy's J.
        budget: the budget (real, compute, eng).
        pilots: candidates with a pilot, a cheap simulation evaluation of their gain.
        probes: add a safety probe for each robot-touching candidate.
        episodes: episodes per arm of a paired evaluation.
        pandora: tries are alternatives from the starting policy (see the module docstring).
    """

    name: str
    methods: tuple[str, ...]
    fixes: tuple[int, int] = (1, 2)
    fix_lift: tuple[float, float] = (0.5, 0.9)
    small_lift: tuple[float, float] = (-0.02, 0.08)
    harmful: float = 0.2
    interaction: float = 0.1
    fix_method: str | None = None
    fix_method_p: float = 0.0
    method_works: float = 0.0
    unsafe_p: float = 0.25
    start_J: tuple[float, float] = (0.2, 0.6)
    budget: tuple[float, float, float] = (2.0, 8.0, 20.0)
    pilots: tuple[str, ...] = ()
    probes: bool = True
    episodes: int = 48
    pandora: bool = False


FAMILIES = {
    "easy": Family("easy", ("DR", "DR", "SI", "DA", "FT"), budget=(2.0, 10.0, 24.0)),
    "needle": Family("needle", ("DR", "DR", "SI", "DA", "DA", "FT"), fixes=(1, 1), fix_lift=(0.6, 0.95),
                     small_lift=(-0.03, 0.03), harmful=0.35, budget=(1.0, 6.0, 10.0)),
    "small": Family("small", ("DR", "DR", "SI", "DA", "DA", "FT"), fixes=(0, 0), small_lift=(0.0, 0.2),
                    harmful=0.25, budget=(1.2, 5.0, 10.0)),
    "robot": Family("robot", ("DR", "SI", "DA", "FT", "FT"), fixes=(1, 1), fix_lift=(0.5, 0.9),
                    fix_method="FT", fix_method_p=0.6, unsafe_p=0.3, budget=(1.4, 6.0, 12.0),
                    pilots=("FT",)),
    "pilots": Family("pilots", ("DR", "DR", "SI", "DA", "DA"), fixes=(1, 1), fix_lift=(0.5, 0.9),
                     small_lift=(-0.03, 0.05), harmful=0.3, budget=(0.6, 3.0, 6.0), pilots=("DR", "SI", "DA")),
    "pandora": Family("pandora", ("DR", "DR", "SI", "DA", "DA"), fixes=(0, 1), fix_lift=(0.3, 0.7),
                      small_lift=(-0.1, 0.3), harmful=0.2, interaction=0.0, probes=False,
                      budget=(0.0, 8.0, 9.0), episodes=400, pandora=True),
}


#: Families kept out of every choice of the rule's defaults (see the module docstring).
HELD_OUT = {
    "wide": Family("wide", ("DR", "DR", "DR", "SI", "SI", "DA", "DA", "FT"), fixes=(0, 2), fix_lift=(0.3, 0.8),
                   small_lift=(-0.05, 0.12), harmful=0.25, start_J=(0.1, 0.7), budget=(1.5, 10.0, 20.0),
                   pilots=("SI",)),
    "late": Family("late", ("DR", "DR", "SI", "DA", "FT", "FT"), fixes=(0, 1), fix_lift=(0.4, 0.8),
                   small_lift=(-0.05, 0.1), harmful=0.3, start_J=(0.6, 0.9), budget=(2.0, 8.0, 16.0),
                   pilots=("DR",)),
    "mixed": Family("mixed", ("DR", "DR", "SI", "SI", "DA", "FT", "FT"), fixes=(1, 2), fix_lift=(0.2, 0.5),
                    small_lift=(-0.05, 0.15), harmful=0.2, interaction=0.2, start_J=(0.3, 0.6),
                    budget=(2.0, 6.0, 12.0), pilots=("FT",)),
    "failing": Family("failing", ("DR", "SI", "DA", "DA", "FT"), fixes=(0, 1), fix_lift=(0.5, 0.9),
                      small_lift=(-0.02, 0.05), harmful=0.3, start_J=(0.05, 0.3), budget=(0.8, 3.0, 6.0),
                      pilots=("DR", "SI", "DA")),
    "siblings": Family("siblings", ("DR", "DR", "DR", "SI", "SI", "DA", "DA"), fixes=(0, 0), fix_lift=(0.3, 0.7),
                       method_works=0.3, small_lift=(-0.03, 0.06), harmful=0.2, start_J=(0.2, 0.6),
                       budget=(1.0, 8.0, 16.0)),
    "rivals": Family("rivals", ("DR", "DR", "DR", "SI", "DA", "FT"), fixes=(1, 1), fix_lift=(0.5, 0.9),
                     fix_method="DR", fix_method_p=0.7, small_lift=(-0.03, 0.05), harmful=0.3,
                     budget=(1.4, 6.0, 12.0)),
    "noisy": Family("noisy", ("DR", "DR", "SI", "DA", "FT", "FT"), fixes=(0, 1), fix_lift=(0.4, 0.8),
                    small_lift=(-0.05, 0.1), harmful=0.25, start_J=(0.2, 0.6), budget=(1.5, 6.0, 12.0),
                    pilots=("DA",), episodes=16),
    "sim_fix": Family("sim_fix", ("DR", "SI", "SI", "DA", "FT"), fixes=(0, 1), fix_lift=(0.4, 0.9),
                      fix_method="SI", fix_method_p=0.6, small_lift=(-0.03, 0.06), harmful=0.3,
                      interaction=0.15, start_J=(0.1, 0.5), budget=(1.0, 6.0, 10.0)),
    "kin": Family("kin", ("DR", "DR", "SI", "SI", "DA", "DA", "FT"), fixes=(0, 1), fix_lift=(0.4, 0.8),
                  method_works=0.25, small_lift=(-0.04, 0.06), harmful=0.25, start_J=(0.1, 0.5),
                  budget=(1.2, 6.0, 12.0)),
}
#: Every family by name, the held-out ones included.
ALL_FAMILIES = {**FAMILIES, **HELD_OUT}


@dataclasses.dataclass(frozen=True)
class World:
    """One drawn world: its candidates, budget and hidden truth."""

    family: str
    seed: int
    candidates: tuple[bs.Candidate, ...]
    budget: bs.Budget
    start_J: float
    lift: Mapping[str, float]
    repeat: Mapping[str, float]
    interaction: Mapping[tuple[str, str], float]
    unsafe_rate: Mapping[str, float]
    sim_risk: Mapping[str, tuple[float, float]]
    pandora: bool

    def true_gain(self, name: str, J: float, lineage: tuple[str, ...], start_J: float | None = None) -> float:
        """ΔJ of running adaptation `name` on a policy at J with the given lineage."""
        if self.pandora:  # an alternative trained from the start policy
            J0 = self.start_J
            lift = self.lift[name]
            target = J0 + (lift * (1 - J0) if lift >= 0 else lift * J0)
            return float(np.clip(target, 0, 1) - J)
        lift = self.lift[name]
        if name in lineage:
            lift *= self.repeat.get(name, 0.0)
        for a in lineage:
            lift *= self.interaction.get((a, name), 1.0)
        gain = lift * (1.0 - J) if lift >= 0 else lift * J
        return float(np.clip(J + gain, 0.0, 1.0) - J)


def _u(rng, pair):
    return float(rng.uniform(*pair))


def draw_world(family: Family, seed: int) -> World:
    """Draw one world of `family` (same family and seed, same world)."""
    rng = np.random.default_rng([seed, sum(map(ord, family.name))])
    names, cands, lift, repeat, unsafe, sim_risk = [], [], {}, {}, {}, {}
    counts: dict[str, int] = {}
    for m in family.methods:
        counts[m] = counts.get(m, 0) + 1
        names.append(f"{m.lower()}_{counts[m]}" if family.methods.count(m) > 1 else m.lower())
    n_fix = int(rng.integers(family.fixes[0], family.fixes[1] + 1))
    pool = list(range(len(names)))
    fixes = []
    for _ in range(n_fix):
        same = [i for i in pool if family.methods[i] == family.fix_method]
        pick_from = same if same and rng.random() < family.fix_method_p else pool
        i = int(rng.choice(pick_from))
        fixes.append(i)
        pool.remove(i)
    if family.method_works:  # drawn only here, so the other families' worlds are unchanged
        works = {m for m in sorted(set(family.methods)) if rng.random() < family.method_works}
        fixes += [i for i in pool if family.methods[i] in works]
    for i, (name, m) in enumerate(zip(names, family.methods, strict=True)):
        lens, ranges, robot, repeatable, rep = METHODS[m]
        if i in fixes:
            lift[name] = _u(rng, family.fix_lift)
        elif rng.random() < family.harmful:
            lift[name] = -_u(rng, (0.05, 0.3))
        else:
            lift[name] = _u(rng, family.small_lift)
        repeat[name] = rep
        cost = bs.Cost(*(round(_u(rng, r), 3) for r in ranges))
        cands.append(bs.Candidate(name, "adaptation", lens, method=m, cost=cost, touches_robot=robot,
                                  repeatable=repeatable and not family.pandora,
                                  outcome=bs.BinomialPairedOutcome(episodes=family.episodes)))
        if robot:
            bad = rng.random() < family.unsafe_p
            unsafe[name] = _u(rng, (0.05, 0.25)) if bad else _u(rng, (0.0, 0.004))
            # 200 simulated executions at the true rate, each counted as a quarter of a real one
            sim_unsafe = rng.binomial(200, min(1.0, unsafe[name]))
            sim_risk[name] = (0.25 * sim_unsafe, 50.0)
    interaction = {}
    for a in names:
        for c in names:
            if a != c and rng.random() < family.interaction:
                interaction[(a, c)] = 1.5 if rng.random() < 0.5 else 0.3
    extra = []
    for c in cands:
        if c.method in family.pilots:
            extra.append(bs.Candidate(f"pilot_{c.name}", "diagnosis", "data", method="pilot", observes=c.name,
                                      cost=bs.Cost(0.0, 0.3, 0.5), outcome=bs.BinomialPairedOutcome(episodes=24)))
        if c.touches_robot and family.probes:
            extra.append(bs.Candidate(f"probe_{c.name}", "diagnosis", "optimization", method="probe",
                                      observes=f"safety:{c.name}", touches_robot=True, repeatable=False,
                                      cost=bs.Cost(0.1, 0.0, 0.5),
                                      outcome=bs.SafetyProbe(executions=60, risk_bound=0.01)))
    return World(family.name, seed, tuple(cands + extra), bs.Budget(*family.budget), _u(rng, family.start_J),
                 lift, repeat, interaction, unsafe, sim_risk, family.pandora)


#: Worlds of a family that past campaigns ran on: seeds from here on are never benchmark worlds.
HISTORY_SEED = 100_000
#: Seeds between two teams' histories (`history(..., team=k)`): more past campaigns than any team has.
TEAM_STRIDE = 1_000


def history(family: Family, campaigns: int = 12, team: int = 0) -> list[list[PairedEval]]:
    """Past campaigns of a team on other worlds of `family`: on each, one paired evaluation of
    every adaptation from the starting policy (the family's episodes per arm). Each `team`
    has its own past worlds and outcomes (team 0 is the one the stored tables used): twelve
    campaigns measure a method's mean to about ±0.1 logits, so which method looks best in one
    team's history is partly luck, and a table over several teams averages it out."""
    if not 0 < campaigns <= TEAM_STRIDE or team < 0:
        raise ValueError(f"campaigns {campaigns}, team {team}: need 0 < campaigns <= {TEAM_STRIDE} and team >= 0")
    out = []
    for j in range(campaigns):
        i = team * TEAM_STRIDE + j
        world = draw_world(family, HISTORY_SEED + i)
        rng = np.random.default_rng([HISTORY_SEED, i])
        n = min(family.episodes, 48)
        j0 = world.start_J
        out.append([PairedEval(c.name, int(rng.binomial(n, j0 + world.true_gain(c.name, j0, ()))), n,
                               int(rng.binomial(n, j0)), n, policy="pi0")
                    for c in world.candidates if c.role == "adaptation"])
    return out


def history_methods(family: Family) -> dict[str, str]:
    """The method of each adaptation of `family`'s past campaigns (names and methods are the same
    from world to world of a family)."""
    return {c.name: c.method for c in draw_world(family, HISTORY_SEED).candidates if c.role == "adaptation"}


def team_prior(family: Family, fit_location: bool = False, scale_hierarchy: bool = False,
               skew: bool = False, method_means: bool = False, method_contrasts: bool = False,
               method_shrinkage: bool = False, spread_integrated: bool = False, shared_levels: bool = False, baseline_level: bool = False,
               one_fix: bool = False, method_fix: bool = False, fix_per_method: bool = False,
               campaigns: int = 12, team: int = 0) -> dict:
    """The gain prior a team with `history(family, campaigns, team)` behind it brings (`bs.fit_gain_prior`);
    with `fit_location` the effects' prior mean is fitted too (over its `DEFAULT_LOCS`), with
    `scale_hierarchy` the upper levels are sized with the candidate level, with `skew` the
    candidate level's skew is searched (over `DEFAULT_SKEWS`), with `method_means` each
    method's mean (over `DEFAULT_METHOD_LOCS`; the candidates keep their names and methods
    from world to world of a family), with `method_contrasts` only how the methods differ, with
    `method_shrinkage` each method's mean shrunk toward one by the evidence (with `spread_integrated`
    averaged over the spread's posterior instead of at the most evident spread), with
    `shared_levels` the levels a campaign's candidates share sized by the evidence, with
    `baseline_level` the starting policies' level fitted to the past starts, with `one_fix` the
    one-fix structure searched (over `DEFAULT_FIX_PROBS`), with `method_fix` too each method's
    own fix probability, shrunk toward one (over `DEFAULT_METHOD_FIX_CONCENTRATIONS`), with
    `fix_per_method` a fix per method searched against one per campaign (`GainPrior.fix_unit`)."""
    methods = history_methods(family)
    fit = bs.fit_gain_prior(history(family, campaigns, team), gain_locs=DEFAULT_LOCS if fit_location else None,
                            scale_hierarchy=scale_hierarchy, candidate_skews=DEFAULT_SKEWS if skew else (0.0,),
                            methods=methods, method_locs=DEFAULT_METHOD_LOCS if method_means or method_contrasts else None,
                            method_contrasts=method_contrasts,
                            method_spreads=DEFAULT_METHOD_SPREADS if method_shrinkage else None,
                            integrate_method_spread=spread_integrated,
                            shared_scales=DEFAULT_SHARED_SCALES if shared_levels else None,
                            baseline_level=baseline_level, fix_probs=DEFAULT_FIX_PROBS if one_fix or method_fix else None,
                            method_fix_concentrations=DEFAULT_METHOD_FIX_CONCENTRATIONS if method_fix else None,
                            fix_units=("candidate", "method") if fix_per_method else ("candidate",))
    out = {"candidate_scale": fit.prior.candidate_scale, "candidate_df": fit.prior.candidate_df}
    if fit_location:
        out["gain_loc"] = fit.prior.gain_loc
    if skew:
        out["candidate_skew"] = fit.prior.candidate_skew
    if method_means or method_contrasts or method_shrinkage:
        out["method_locs"] = dict(fit.prior.method_locs)
    if baseline_level:
        out.update(baseline_loc=fit.prior.baseline_loc, baseline_scale=fit.prior.baseline_scale)
    if one_fix or method_fix:
        out.update(fix_prob=fit.prior.fix_prob, fix_loc=fit.prior.fix_loc, fix_scale=fit.prior.fix_scale)
    if method_fix:
        out["method_fix_probs"] = dict(fit.prior.method_fix_probs)
    if fix_per_method:
        out["fix_unit"] = fit.prior.fix_unit
    if scale_hierarchy or shared_levels:
        out.update(gain_scale=fit.prior.gain_scale, method_scale=fit.prior.method_scale,
                   group_scale=fit.prior.group_scale)
    return out


def _rng(rng_key) -> np.random.Generator:
    import jax

    return np.random.default_rng(np.asarray(jax.random.key_data(rng_key)).tolist())


class WorldExecutor:
    """Runs a `World`'s candidates: binomial paired evaluations around the true gains, probes
    and robot executions at the true unsafe rates. Each policy's true J and lineage are kept
    in the persisted memory, so a resumed campaign sees the same world."""

    def __init__(self, world: World):
        self.world = world

    def initial_policy(self) -> str:
        return "pi0"

    def truth_of(self, policy: str, memory: Mapping[str, Any]) -> tuple[float, tuple[str, ...]]:
        """The true J and lineage of `policy` (the world's start for a policy it has not made)."""
        known = memory.get("policies", {}).get(policy)
        if known is None:
            return self.world.start_J, ()
        return float(known["J"]), tuple(known["lineage"])

    def true_gains(self, state, ledger) -> dict[str, float]:
        """The true ΔJ of every adaptation from the deployed policy (for the oracles)."""
        from bayes_s2r.campaign import executor_memory

        J, lineage = self.truth_of(state.policy, executor_memory(ledger))
        return {c.name: self.world.true_gain(c.name, J, lineage) for c in state.candidates if c.role == "adaptation"}

    def execute(self, rng_key, candidate, *, round, policy, memory):
        rng = _rng(rng_key)
        J, lineage = self.truth_of(policy, memory)
        records: list = []
        if candidate.observed_safety is not None:
            target = candidate.observed_safety
            n = int(candidate.outcome.params()[1])
            records.append(ExecutionOutcome(target, n, int(rng.binomial(n, self.world.unsafe_rate[target])),
                                            round=round))
            return Execution(tuple(records), candidate.cost)
        n = int(candidate.outcome.params()[1])
        target = candidate.name if candidate.role == "adaptation" else candidate.observes
        J_new = float(np.clip(J + self.world.true_gain(target, J, lineage), 0.0, 1.0))
        records.append(PairedEval(target, int(rng.binomial(n, J_new)), n, int(rng.binomial(n, J)), n,
                                  round=round, policy=policy))
        if candidate.role != "adaptation":
            return Execution(tuple(records), candidate.cost)
        if candidate.touches_robot:
            records.append(ExecutionOutcome(candidate.name, n, int(rng.binomial(n, self.world.unsafe_rate[candidate.name])),
                                            round=round))
        new_policy = f"pi{round + 1}"
        policies = dict(memory.get("policies", {}))
        new_lineage = (lineage if not self.world.pandora else ()) + (candidate.name,)
        policies[new_policy] = {"J": J_new, "lineage": list(new_lineage)}
        return Execution(tuple(records), candidate.cost, new_policy, (), {"policies": policies})

    def evaluate_deployment(self, rng_key, *, round, policy, episodes, memory):
        rng = _rng(rng_key)
        J, _ = self.truth_of(policy, memory)
        return DeploymentEval(policy, episodes, int(rng.binomial(episodes, J)), 0, round=round)


def net_utility(final_J: float, spent: bs.Cost) -> float:
    """J − λ0·spent: what a campaign is worth at the team's prices."""
    return final_J - sum(PRICES[r] * v for r, v in zip(("real", "compute", "eng"), spent.as_array(), strict=True))


def campaign_config(world: World, *, max_rounds: int, seed: int, **overrides) -> bs.CampaignConfig:
    """The campaign settings every strategy shares on `world` (library defaults otherwise)."""
    # a lab knows how its candidates are trained: from the deployed policy (gains shrink with
    # the headroom left) or each from the start policy (alternatives, the best one kept)
    rule = "alternatives" if world.pandora else "headroom"
    return bs.CampaignConfig(budget=world.budget, weights=bs.ResourceWeights(**PRICES, scarcity=0.0),
                             max_rounds=max_rounds, seed=seed, deploy_episodes=50,
                             sim_risk_prior=dict(world.sim_risk), **{"transition_rule": rule, **overrides})


def _json_safe(value: float) -> float | None:
    return None if not math.isfinite(value) else value
