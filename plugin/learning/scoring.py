"""Live accuracy: every finished job scored against the prediction that decided it.

The daemon puts the document of the curve that sized a job into the job's decision record
(`DecisionRecord.curve_doc`, plugin/daemon/decider.py). Curves are refitted while jobs wait
and run, so the learner, which sees the job finish much later, scores it against that
snapshot, never against the current curve: the prediction is the one the decision rested
on, evaluated at the size the job actually ran on (`JobRecord.nodes_alloc`: the decided
size when pinned, Slurm's pick within a released range, or Slurm's own choice in advise
mode), and never tuned on (the run becomes an observation only for later curves).

A job is scored when it finished (COMPLETED with exit code 0, or stopped at its limit or
preempted: *censored*, its runtime a lower bound), ran more than 0 s on ≥ 1 node, has a
decision record found by its job id and submit time (the daemon's once-guard holds the
record's stream entry, plugin/store/scores.py), and that record carries a curve and a
size. A job that ran in another partition than the one its curve was decided for (a
typed curve of another node type) is not scored: that prediction was for other nodes.
Everything else is counted by reason in `ScoringResult.skipped`.

What a score holds (plugin/store/scores.py `Score`): the runtime (elapsed), the curve's
runtime and 90% interval (`Curve.runtime_interval`) at the size it ran on and at the
decided size, the decision's mode (``enforce``, or ``advise``: a decision the daemon would
have made, the job unchanged; a record without a mode is enforce's), rule and curve
version, and the key filed under: the one whose curve decided (``curve_app``, the site's,
when it was not the job's own). The interval is computed with this version's calibration
(predictor/intervals.py) from the snapshot's fields; its runtime is the snapshot's exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import predictor
from plugin.slurm import JobRecord
from plugin.store.decisions import DecisionRecord, DecisionRecordError
from plugin.store.score_stream import ScoreStore
from plugin.store.scores import ENFORCE, MODES, Score

__all__ = ["Scorer", "ScoringResult", "decided_partition", "run_of", "score_job"]


@dataclass(frozen=True)
class ScoringResult:
    """One scoring pass: the new scores and why the other jobs were not scored."""

    scores: tuple[Score, ...] = ()
    skipped: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {"scored": len(self.scores), "not_scored": dict(sorted(self.skipped.items()))}


def run_of(job: JobRecord, censored_states: Collection[str]) -> bool | None:
    """Whether the finished job's runtime is a lower bound (True: censored), or None when
    it cannot be scored (it failed, was cancelled, never ran or has no times)."""
    if not job.elapsed_s or job.elapsed_s <= 0 or job.nodes_alloc < 1:
        return None
    if job.end_time is None or job.submit_time is None or job.submit_time < 0:
        return None
    if job.state in censored_states:
        return True
    if job.state == "COMPLETED" and job.exit_code in (None, 0) and not job.exit_signal:
        return False
    return None


def decided_partition(record: DecisionRecord) -> str | None:
    """The partition whose curve the decision read: the one the job was moved to, else its
    only one (None: the job listed several and kept the list)."""
    if record.new_partition:
        return record.new_partition
    return record.partition if record.partition and "," not in record.partition else None


def _why_not(record: DecisionRecord, mode: Any, job: JobRecord) -> str:
    """Why the record cannot score the job ("" when it can)."""
    if mode not in MODES:
        return "unreadable_record"
    if record.curve_doc is None or record.nodes is None or not (record.curve_app or record.app):
        return "not_sized_by_a_curve"
    where = decided_partition(record)
    if where is not None and job.partition and job.partition != where:
        return "ran_elsewhere"
    return ""


def score_job(job: JobRecord, doc: dict[str, Any], censored: bool) -> Score | str:
    """The score of finished `job` against its decision document `doc` (as stored), or the
    reason it has none (a word counted in `ScoringResult.skipped`)."""
    try:
        record = DecisionRecord.from_dict(doc)
    except DecisionRecordError:
        return "unreadable_record"
    mode = doc.get("mode", ENFORCE)  # records written before advise mode are enforce's
    why = _why_not(record, mode, job)
    if why:
        return why
    try:
        curve = predictor.Curve.from_dict(record.curve_doc or {})
    except (ValueError, TypeError, KeyError, OverflowError):
        return "unreadable_curve"
    advised = int(record.nodes or job.nodes_alloc)
    sizes = np.array([float(job.nodes_alloc), float(advised)])
    with np.errstate(all="ignore"):
        runtime = curve.runtime(sizes)
        lower, upper = curve.runtime_interval(sizes, runtime=runtime)
    other = advised != job.nodes_alloc
    try:
        return Score(
            app=str(record.curve_app or record.app),
            job_id=job.job_id,
            submit_time=int(job.submit_time or 0),
            end_time=float(job.end_time or 0.0),
            nodes=job.nodes_alloc,
            runtime_s=float(job.elapsed_s or 0.0),
            predicted_s=float(runtime[0]),
            lower_s=float(lower[0]),
            upper_s=float(upper[0]),
            mode=str(mode),
            rule=record.rule or "",
            censored=censored,
            curve_version=record.curve_version,
            job_app=record.app if record.curve_app and record.app != record.curve_app else None,
            partition=job.partition or None,
            advised_nodes=advised,
            advised_s=float(runtime[1]) if other else None,
            advised_lower_s=float(lower[1]) if other else None,
            advised_upper_s=float(upper[1]) if other else None,
        )
    except ValueError:  # a non-finite or non-positive prediction (Score checks)
        return "no_finite_prediction"


class Scorer:
    """Scores finished jobs and stores the scores (module docstring)."""

    def __init__(self, store: ScoreStore, censored_states: Collection[str]) -> None:
        self.store = store
        self.censored_states = frozenset(censored_states)

    def score(self, jobs: Iterable[JobRecord]) -> ScoringResult:
        """Score the jobs that can be (each once, whatever the learner re-reads); StoreError
        when Redis fails."""
        skipped: Counter[str] = Counter()
        runs: list[tuple[JobRecord, bool]] = []
        seen: set[tuple[int, int]] = set()
        for job in jobs:
            censored = run_of(job, self.censored_states)
            ident = (job.job_id, job.submit_time or 0)
            if censored is None or ident in seen:
                continue
            seen.add(ident)
            runs.append((job, censored))
        if not runs:
            return ScoringResult((), skipped)
        docs = self.store.decisions_of([(j.job_id, j.submit_time or 0) for j, _ in runs])
        made: list[Score] = []
        for (job, censored), doc in zip(runs, docs, strict=True):
            if doc is None or isinstance(doc, str):
                skipped["no_decision" if doc is None else "scored_before"] += 1
                continue
            outcome = score_job(job, doc, censored)
            if isinstance(outcome, str):
                skipped[outcome] += 1
            else:
                made.append(outcome)
        new = self.store.add(made) if made else []
        return ScoringResult(tuple(s for s, fresh in zip(made, new, strict=True) if fresh), skipped)
