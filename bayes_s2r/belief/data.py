"""Evidence → sufficient statistics of the gains model, validated at the boundary.

`prepare_gains` reads the records once (plain Python, linear in the number of records) and
aggregates them by candidate × policy, so the compiled model sees arrays whose size depends
on the number of candidates and policies, never on the number of trials. Policy and cell
arrays are padded to power-of-two buckets so that refits after a new round usually reuse
the compiled sampler.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from bayes_s2r.errors import InputError
from bayes_s2r.evidence.records import (
    DeploymentEval,
    PairedEval,
    PairedReturns,
    Record,
    SensitivityTrial,
)
from bayes_s2r.models.gains import GainData, GainPrior, GainSpec
from bayes_s2r.vocab import Candidate, validate_candidates

__all__ = ["PreparedGains", "evidence_information", "iter_records", "prepare_gains", "sensitivity_impl"]

NO_METHOD = "(none)"


def sensitivity_impl():
    """`(prepare_sensitivity, sensitivity_block)` from the sensitivity modules, or None."""
    try:
        from bayes_s2r.belief.sensitivity import prepare_sensitivity
        from bayes_s2r.models.sensitivity import sensitivity_block
    except ImportError:
        return None
    return prepare_sensitivity, sensitivity_block


class PreparedGains(NamedTuple):
    """What `prepare_gains` returns.

    Attributes:
        data: `GainData` arrays (padded).
        spec: static `GainSpec`.
        sens: dict of the sensitivity data's array fields, or None.
        names: adaptation candidate names, in the order of the model's `gain` site.
        directions: sensitivity directions, in the order of the `sensitivity` site.
        policies: policy labels (index 0 = the policy the effects are on: the current one, or
            `trained_from`), without padding.
        current_policy: the policy the gains refer to.
        observed: unpadded per-cell and per-policy statistics, for `observed_data`.
        notes: remarks about evidence that was not used.
    """

    data: GainData
    spec: GainSpec
    sens: dict | None
    names: tuple[str, ...]
    directions: tuple[str, ...]
    policies: tuple
    current_policy: Any
    observed: dict
    notes: tuple[str, ...]


def _bucket(n: int, minimum: int = 1) -> int:
    size = minimum
    while size < n:
        size *= 2
    return size


def iter_records(evidence) -> list[Record]:
    """The records of `evidence`: an iterable of records or an object with `.records()`
    (one with `.summed_records()`, a Ledger, is read with its paired evaluations summed)."""
    if callable(getattr(evidence, "summed_records", None)):
        evidence = evidence.summed_records()
    elif hasattr(evidence, "records") and callable(evidence.records):
        evidence = evidence.records()
    if isinstance(evidence, (str, bytes, Mapping)) or not isinstance(evidence, Iterable):
        raise InputError("evidence", type(evidence).__name__,
                         "an iterable of evidence records or a Ledger")
    out = list(evidence)
    if not all(issubclass(t, Record) for t in set(map(type, out))):   # one check per type
        i, r = next((i, r) for i, r in enumerate(out) if not isinstance(r, Record))
        raise InputError(f"evidence[{i}]", r, "an evidence record (PairedEval, SensitivityTrial, ...)")
    return out


def _check_candidate(rec, index: Mapping[str, int], roles: Mapping[str, str]) -> int:
    name = rec.candidate
    if name not in roles:
        raise InputError(f"{rec.KIND}[id={rec.id}].candidate", name,
                         f"a candidate in the set ({sorted(roles)})")
    if roles[name] != "adaptation":
        raise InputError(f"{rec.KIND}[id={rec.id}].candidate", name,
                         f"an adaptation candidate (it has role {roles[name]!r}; only adaptations have gains)")
    return index[name]


def _split_sensitivity(sdata) -> tuple[dict, type | None, tuple]:
    if hasattr(sdata, "_asdict"):
        fields, typ = sdata._asdict(), type(sdata)
    elif isinstance(sdata, Mapping):
        fields, typ = dict(sdata), None
    else:
        raise InputError("sensitivity data", type(sdata).__name__, "a NamedTuple of arrays")
    arrays, static = {}, []
    for k, v in fields.items():
        if isinstance(v, (np.ndarray, jnp.ndarray)) or (
            isinstance(v, (int, float)) and not isinstance(v, bool)
        ):
            arrays[k] = jnp.asarray(v)
        else:
            static.append((k, v))
    return arrays, typ, tuple(static)


def evidence_information(stats: np.ndarray, cells: int, cell_cand, cell_policy, ctl: np.ndarray,
                         age, prior: GainPrior, num_candidates: int) -> tuple[np.ndarray, np.ndarray]:
    """Rough estimate of each candidate's effect δ_m (link scale) and its information.

    Binomial cells give logit(p̂_t) − logit(p̂_c) with information n·p(1 − p) (the J-scale
    difference with n / (p(1 − p)) for the identity link), paired returns their mean
    difference with n / s² (converted to the logit scale by p(1 − p)); a cell under an older
    policy is discounted by its drift, 1 / (1/I + drift²·age). The model uses these only to
    centre its levels (see `models.gains`): they shape the sampler's geometry, never the
    posterior.

    Returns:
        (estimate [C], information [C]); both 0 for a candidate without evidence.
    """
    logit = prior.link == "logit"
    info, wsum = np.zeros(num_candidates), np.zeros(num_candidates)
    for j in range(cells):
        m, p = int(cell_cand[j]), int(cell_policy[j])
        s_t, n_t, r_n, r_sum, r_ss = stats[:, j]
        pc = (ctl[0, p] + 1.0) / (ctl[1, p] + 2.0)
        i_cell, e_cell = 0.0, 0.0
        if n_t > 0:
            pt = (s_t + 0.5) / (n_t + 1.0)
            i_b = n_t * pt * (1 - pt) if logit else n_t / (pt * (1 - pt))
            d = (np.log(pt / (1 - pt)) - np.log(pc / (1 - pc))) if logit else pt - pc
            i_cell, e_cell = i_cell + i_b, e_cell + i_b * d
        if r_n > 1:
            var = max((r_ss - r_sum**2 / r_n) / (r_n - 1), 1e-6)
            i_r = r_n / var * ((pc * (1 - pc)) ** 2 if logit else 1.0)
            d = r_sum / r_n / (pc * (1 - pc)) if logit else r_sum / r_n
            i_cell, e_cell = i_cell + i_r, e_cell + i_r * d
        if i_cell > 0:
            i_eff = 1.0 / (1.0 / i_cell + prior.drift_scale**2 * float(age[p]))
            info[m] += i_eff
            wsum[m] += i_eff * e_cell / i_cell
    return wsum / np.maximum(info, 1e-12), info


class _Cell:
    """Sufficient statistics of one candidate × policy cell."""

    __slots__ = ("episodes", "returns_n", "returns_sum", "returns_sumsq", "successes")

    def __init__(self):
        self.successes = self.episodes = self.returns_n = self.returns_sum = self.returns_sumsq = 0.0

    def as_column(self) -> list[float]:
        """The order of `evidence_information`'s `stats` rows."""
        return [self.successes, self.episodes, self.returns_n, self.returns_sum, self.returns_sumsq]


class _Tally(NamedTuple):
    """One pass over the records."""

    cells: dict  # (candidate index, policy) -> _Cell
    control: dict  # policy -> [successes, episodes] of the control arms and deployments
    last_round: dict  # policy -> the latest round with evidence of it
    sensitivity: list  # SensitivityTrial records
    latest_policy: Any  # the policy of the latest round
    unlabelled: Any = None  # with alternatives, the first arm without a policy


def _tally(records, index: Mapping[str, int], roles: Mapping[str, str], objective: str,
           alternatives: tuple[Any, Mapping[Any, int]] | None = None) -> _Tally:
    """Cells and control arms of the records. With `alternatives` = (start, {policy: candidate
    index}) every candidate is trained from `start`: a treated arm is a cell on `start`
    whatever the control was, and an arm of a deployed candidate's policy is a treated arm of
    that candidate (records without a policy are on `start`; `prepare_gains` refuses them once
    another policy is deployed)."""
    cells: dict[tuple[int, Any], _Cell] = {}
    control: dict[Any, list[int]] = {}
    last_round: dict[Any, int] = {}
    sens_records = []
    latest = (-1, None)
    start, as_candidate = alternatives if alternatives is not None else (None, {})
    unlabelled = None

    def level(rec, policy, successes, episodes):
        """An arm that ran `policy` itself: its control level, or its candidate's cell."""
        if alternatives is not None and policy not in (None, start):
            if policy not in as_candidate:
                raise InputError(f"{rec.KIND}[id={rec.id}].policy", policy,
                                 f"{start!r} (trained_from) or a policy that `lineage` reaches by one "
                                 f"adaptation from it")
            cell = cells.setdefault((as_candidate[policy], start), _Cell())
            cell.successes += successes
            cell.episodes += episodes
            return
        ctl = control.setdefault(start if alternatives is not None else policy, [0, 0])
        ctl[0] += successes
        ctl[1] += episodes

    for rec in records:
        on = getattr(rec, "policy", None) if alternatives is None else start  # the policy its effects are on
        if isinstance(rec, (PairedEval, PairedReturns)):
            if rec.objective != objective:
                continue
            if isinstance(rec, PairedReturns) and alternatives is not None and rec.policy not in (None, start):
                raise InputError(f"{rec.KIND}[id={rec.id}].policy", rec.policy,
                                 f"{start!r}: paired returns against another alternative are not modelled "
                                 f"(use paired success counts)")
            cell = cells.setdefault((_check_candidate(rec, index, roles), on), _Cell())
            if isinstance(rec, PairedEval):
                cell.successes += rec.successes_treated
                cell.episodes += rec.episodes_treated
                level(rec, rec.policy, rec.successes_control, rec.episodes_control)
            else:
                d = np.subtract(rec.returns_treated, rec.returns_control)
                cell.returns_n += d.size
                cell.returns_sum += float(d.sum())
                cell.returns_sumsq += float(d @ d)
        elif isinstance(rec, DeploymentEval):
            level(rec, rec.policy, rec.successes, rec.episodes)
        elif isinstance(rec, SensitivityTrial):
            sens_records.append(rec)
            continue
        else:
            continue
        last_round[on] = max(last_round.get(on, -1), rec.round)
        if rec.round >= latest[0]:
            latest = (rec.round, rec.policy)
        if alternatives is not None and rec.policy is None and unlabelled is None:
            unlabelled = rec
    return _Tally(cells, control, last_round, sens_records, latest[1], unlabelled)


def _policy_axis(tally: _Tally, current: Any) -> tuple[tuple, np.ndarray, np.ndarray]:
    """(policies with the current one first, age [P], control [2, P]), padded to a bucket P."""
    last_round = tally.last_round
    now = max(last_round.values(), default=0)
    others = sorted((p for p in last_round if p != current), key=lambda p: (-last_round[p], str(p)))
    policies = (current, *others)
    size = _bucket(len(policies))
    age = np.ones(size)
    age[0] = 0.0
    for i, p in enumerate(policies[1:], 1):
        age[i] = max(1.0, now - last_round[p])
    ctl = np.zeros((2, size))
    pindex = {p: i for i, p in enumerate(policies)}
    for p, (s, n) in tally.control.items():
        ctl[:, pindex[p]] = s, n
    return policies, age, ctl


def alternatives_fit(policy: Any, adoptions: Mapping[Any, Mapping[str, Any]] | None) -> dict[str, Any]:
    """`fit_gains` keywords for candidates that are alternatives, from how each deployed policy
    came about ({policy: {"parent": ..., "candidate": ...}}, a campaign's adoptions): the
    current policy, the start they are all trained from (the root of `policy`'s parents) and
    each adopted policy's one adaptation."""
    adoptions = dict(adoptions or {})
    start, seen = policy, {policy}
    while start in adoptions:
        parent = adoptions[start].get("parent") if isinstance(adoptions[start], Mapping) else None
        if parent is None or parent in seen:
            raise InputError(f"adoptions[{start!r}]", adoptions[start],
                             "{'parent': the policy it was trained from, 'candidate': ...}, the parents ending "
                             "at the start policy (no cycle)")
        start = parent
        seen.add(start)
    return {"current_policy": policy, "trained_from": start,
            "lineage": {p: [o["candidate"]] for p, o in adoptions.items()}}


def _alternative_policies(trained_from: Any, lineage, names: tuple[str, ...]) -> dict[Any, int]:
    """{policy: index of the one adaptation that reaches it from `trained_from`} (`lineage`)."""
    if not isinstance(trained_from, str):
        raise InputError("trained_from", trained_from, "a policy label")
    if lineage is None:
        return {}
    if not isinstance(lineage, Mapping):
        raise InputError("lineage", lineage, "a mapping policy -> [the adaptation that reaches it]")
    index = {n: i for i, n in enumerate(names)}
    out = {}
    for p, applied in lineage.items():
        if p == trained_from:  # the start of every alternative: nothing applied to it
            if applied not in (None, [], ()):
                raise InputError(f"lineage[{p!r}]", applied, f"[] ({p!r} is trained_from, the policy every "
                                                             f"alternative is trained from)")
            continue
        applied = [applied] if isinstance(applied, str) else applied
        if not isinstance(applied, Iterable) or len(applied := list(applied)) != 1 or applied[0] not in index:
            raise InputError(f"lineage[{p!r}]", applied, f"one adaptation candidate among {list(names)} (with "
                             f"trained_from, each policy is one alternative trained from {trained_from!r})")
        out[p] = index[applied[0]]
    return out


def _fix_units(adapt: Sequence[Candidate]) -> list[int]:
    """Each candidate's unit under `fix_unit="method"`: its method, or a unit of its own."""
    units: dict = {}
    return [units.setdefault(c.method if c.method else ("", c.name), len(units)) for c in adapt]


def _order_effects(lineage, policies: tuple, names: tuple[str, ...], method_of: Sequence[int],
                   num_methods: int, size: int) -> np.ndarray:
    """[P, methods]: per policy, how many more adaptations of each method than the current
    policy has had applied (the pooled order effects' design)."""
    applied_count = np.zeros((size, num_methods))
    if lineage is not None:
        if not isinstance(lineage, Mapping):
            raise InputError("lineage", lineage, "a mapping policy -> list of adaptation names")
        pindex = {p: i for i, p in enumerate(policies)}
        index = {n: i for i, n in enumerate(names)}
        for p, applied in lineage.items():
            if isinstance(applied, str) or not isinstance(applied, Iterable):
                raise InputError(f"lineage[{p!r}]", applied, "a list of adaptation candidate names")
            for name in applied:
                if name not in index:
                    raise InputError(f"lineage[{p!r}]", name, f"an adaptation candidate among {list(names)}")
                if p in pindex:
                    applied_count[pindex[p], method_of[index[name]]] += 1.0
    order_diff = applied_count - applied_count[0]
    order_diff[len(policies):] = 0.0
    return order_diff


def _sensitivity(sens_records: list, use_sensitivity: bool, notes: list) -> tuple:
    """(array fields, block, type, static fields, directions) of the sensitivity data, or Nones."""
    if not (sens_records and use_sensitivity):
        return None, None, None, (), ()
    impl = sensitivity_impl()
    if impl is None:
        notes.append(f"{len(sens_records)} sensitivity trials ignored (no sensitivity model)")
        return None, None, None, (), ()
    prepare_sensitivity, block = impl
    sdata = prepare_sensitivity(sens_records)
    sens, stype, sstatic = _split_sensitivity(sdata)
    return sens, block, stype, sstatic, tuple(sdata.directions)


def prepare_gains(evidence, candidates: Sequence[Candidate], *, current_policy: Any = None,
                  lineage: Mapping[Any, Sequence[str]] | None = None, trained_from: str | None = None,
                  prior: GainPrior | None = None, objective: str = "success",
                  use_sensitivity: bool = True) -> PreparedGains:
    """Validate evidence and candidates and reduce them to the gains model's arrays.

    Args:
        evidence: iterable of records, or an object with `.records()` (a Ledger).
            PairedEval and PairedReturns (with the given objective) inform gains,
            DeploymentEval informs a policy's level, SensitivityTrial the sensitivity block;
            other records are ignored.
        candidates: the candidate set; only adaptation candidates get a gain.
        current_policy: policy the gains refer to; default: the policy of the latest round.
        lineage: policy -> names of the adaptations applied (in order) to reach it; gives the
            pooled order effects. Policies without an entry have an empty lineage.
        trained_from: the policy every candidate is trained from, when the candidates are
            alternatives (a lab keeps the best one: `AlternativesTransition`). A treated arm
            then measures its candidate's J from this policy whatever the control was, every
            other evaluated policy must be one adaptation from it (`lineage`: policy -> [name]),
            and its arms measure that adaptation. The gains still refer to `current_policy`:
            what each candidate adds over the deployed one. None: each candidate is trained from
            the policy it is evaluated against.
        prior: `GainPrior` (default settings when None).
        objective: the objective whose evidence is used.
        use_sensitivity: include the sensitivity block when there is sensitivity evidence.

    Returns:
        `PreparedGains`.
    """
    prior = GainPrior() if prior is None else prior
    if not isinstance(prior, GainPrior):
        raise InputError("prior", prior, "a GainPrior")
    cands = validate_candidates(candidates)
    roles = {c.name: c.role for c in cands}
    adapt = [c for c in cands if c.role == "adaptation"]
    if not adapt:
        raise InputError("candidates", [c.name for c in cands], "at least one adaptation candidate")
    fix_probs = [prior.fix_prob_of(c.method) for c in adapt]
    if prior.fix_unit == "candidate" and sum(fix_probs) >= 1.0:
        field, value = (("prior.method_fix_probs", prior.method_fix_probs) if prior.method_fix_probs
                        else ("prior.fix_prob", prior.fix_prob))
        raise InputError(field, value, f"fix probabilities that sum below 1 over the {len(adapt)} candidates "
                         f"(they sum to {sum(fix_probs):g}; at most one candidate is the fix)")
    names = tuple(c.name for c in adapt)
    alternatives = None if trained_from is None else (trained_from, _alternative_policies(trained_from, lineage, names))
    tally = _tally(iter_records(evidence), {n: i for i, n in enumerate(names)}, roles, objective, alternatives)

    if current_policy is not None and not isinstance(current_policy, str):
        raise InputError("current_policy", current_policy, "a policy label or None")
    current = tally.latest_policy if current_policy is None else current_policy
    deployed = None
    if alternatives is not None and current not in (None, trained_from):
        if current not in alternatives[1]:
            raise InputError("current_policy", current, f"{trained_from!r} (trained_from) or a policy that "
                             f"`lineage` reaches by one adaptation from it")
        deployed = alternatives[1][current]
        if (rec := tally.unlabelled) is not None:
            raise InputError(f"{rec.KIND}[id={rec.id}].policy", None,
                             f"a policy label: with {current!r} deployed, an arm without one could have run it or "
                             f"{trained_from!r} (trained_from)")
    policies, age, ctl = _policy_axis(tally, current if trained_from is None else trained_from)
    pindex = {p: i for i, p in enumerate(policies)}

    # methods, groups (method × lens) and dose (batch relative to the method's median)
    method_names = tuple(dict.fromkeys(c.method or NO_METHOD for c in adapt))
    hindex = {h: i for i, h in enumerate(method_names)}
    groups = tuple(dict.fromkeys((c.method or NO_METHOD, c.lens) for c in adapt))
    gindex = {g: i for i, g in enumerate(groups)}
    ref = {}
    for h in method_names:
        batches = [c.batch for c in adapt if (c.method or NO_METHOD) == h and c.batch is not None]
        ref[h] = statistics.median(batches) if batches else 1.0
    dose = np.array([1.0 if c.batch is None else c.batch / ref[c.method or NO_METHOD] for c in adapt])
    method_of = [hindex[c.method or NO_METHOD] for c in adapt]
    order_diff = _order_effects(lineage if trained_from is None else None, policies, names, method_of,
                                len(method_names), len(age))

    # cells, padded to a bucket Q
    keys = sorted(tally.cells, key=lambda k: (k[0], pindex[k[1]]))
    num_cells = _bucket(len(keys), 8)
    cc = np.zeros(num_cells, np.int32)
    cp = np.zeros(num_cells, np.int32)
    stats = np.zeros((5, num_cells))
    for j, k in enumerate(keys):
        cc[j], cp[j] = k[0], pindex[k[1]]
        stats[:, j] = tally.cells[k].as_column()
    rn = stats[2]
    rmean = np.where(rn > 0, stats[3] / np.maximum(rn, 1), 0.0)
    rss = np.maximum(stats[4] - rn * rmean**2, 0.0)

    notes = []
    sens, block, stype, sstatic, directions = _sensitivity(tally.sensitivity, use_sensitivity, notes)
    dindex = {k: i for i, k in enumerate(directions)}
    target = np.array([dindex.get(c.targets, -1) for c in adapt], np.int32)

    est, info = evidence_information(stats, len(keys), cc, cp, ctl, age, prior, len(adapt))
    data = GainData(
        cand_group=jnp.asarray([gindex[(c.method or NO_METHOD, c.lens)] for c in adapt], jnp.int32),
        cand_method=jnp.asarray(method_of, jnp.int32),
        cand_dose=jnp.asarray(dose, jnp.float32),
        cand_target=jnp.asarray(target),
        group_method=jnp.asarray([hindex[g[0]] for g in groups], jnp.int32),
        control_successes=jnp.asarray(ctl[0], jnp.float32),
        control_episodes=jnp.asarray(ctl[1], jnp.float32),
        age=jnp.asarray(age, jnp.float32),
        order_diff=jnp.asarray(order_diff, jnp.float32),
        cell_cand=jnp.asarray(cc),
        cell_policy=jnp.asarray(cp),
        treated_successes=jnp.asarray(stats[0], jnp.float32),
        treated_episodes=jnp.asarray(stats[1], jnp.float32),
        returns_n=jnp.asarray(rn, jnp.float32),
        returns_mean=jnp.asarray(rmean, jnp.float32),
        returns_ss=jnp.asarray(rss, jnp.float32),
        cand_est=jnp.asarray(est, jnp.float32),
        cand_info=jnp.asarray(info, jnp.float32),
        method_offset=jnp.asarray([dict(prior.method_locs).get(h, prior.gain_loc) - prior.gain_loc
                                   for h in method_names], jnp.float32),
        deployed=None if deployed is None else jnp.int32(deployed),
        cand_fix_prob=jnp.asarray(fix_probs, jnp.float32) if prior.has_fix else None,
        cand_fix_unit=(jnp.asarray(_fix_units(adapt), jnp.int32)
                       if prior.has_fix and prior.fix_unit == "method" else None),
    )
    spec = GainSpec(
        num_candidates=len(adapt), num_groups=len(groups), num_methods=len(method_names),
        num_policies=len(age), num_cells=num_cells, num_directions=len(directions),
        has_batch=any(c.batch is not None for c in adapt),
        has_targets=bool(np.any(target >= 0)),
        has_drift=bool(np.any(cp[: len(keys)] != 0)),
        has_order=bool(np.any(order_diff[cp[: len(keys)]] != 0)), has_returns=bool(np.any(rn > 0)), prior=prior,
        sensitivity_block=block, sensitivity_type=stype, sensitivity_static=sstatic,
    )
    n = len(keys)
    observed = {
        "cell_candidate": np.array([names[k[0]] for k in keys], dtype=object),
        "cell_policy": np.array([str(k[1]) for k in keys], dtype=object),
        "treated_successes": stats[0, :n], "treated_episodes": stats[1, :n],
        "returns_n": rn[:n], "returns_mean": rmean[:n],
        "control_successes": ctl[0, : len(policies)], "control_episodes": ctl[1, : len(policies)],
    }
    return PreparedGains(data, spec, sens, names, directions, policies, current, observed, tuple(notes))
