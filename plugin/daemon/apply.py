"""Apply a batch of outcomes to Slurm in few commands, and find out what really happened.

Order, for every batch (the journal makes a crash anywhere in it harmless):

1. journal: the batch's changes go to ``inflight.json`` (fsync'd) before any job is touched;

With a backend that sends a job's changes as one update (``combined_updates``: libslurm,
plugin/slurm/libslurm_backend.py), each job's resize, limit, admin comment and release then
go to slurmctld as one RPC (one fence check for the batch); only the jobs Slurm refused
(gone, privileges, a size it would not take) go on through steps 2-4 below, which read
them back and sort out each one exactly as they do for the ``scontrol`` writer.

2. resize: NumNodes=N-N (and TimeLimit) of every resized job, scontrol processes reading a
   line per job (split over ``slurm_parallelism`` processes; Slurm 22.05 refuses NumNodes on
   a ``JobId=<list>``, "Invalid job ID"), and at the same time
3. admin comment: the record, one ``scontrol update JobId=<list>`` per distinct text (the
   two steps touch different fields and wait on slurmctld's round trips, so they overlap);
4. release: one ``scontrol release <list>`` (a job Slurm refuses, e.g. one that vanished,
   does not stop the others: scontrol goes on and exits 1; the ones still held are then
   released one by one);
5. journal: once the batch is recorded (`commit`), the released jobs leave it; a crash
   before that records them at the next start (once: plugin/daemon/record.py).

scontrol goes on past a job that fails and exits 1 at the end; whenever a step fails the
batch's jobs are read back (one ``squeue --json``) and each is judged on what Slurm says:

* gone (cancelled, or no longer pending): nothing more to do (status ``gone``);
* a resize that did not take: the job is put back to its submitted range and limit if it
  was partly changed, then released as submitted with reason ``slurm_error``;
* a comment that did not take: retried once per job, then the job is released anyway (a
  job is never kept held for want of a comment);
* a release that did not take: retried once per job; a job still held stays in the
  journal and is released at the next cycle (status ``pending_release``).

Stragglers (the daemon's batches, ``leave_stragglers``): slurmctld holds some updates for 1
or 2 s before their work (tests/benchmarks/test_release_floor.py), and a batch that waited
for them held every job created meanwhile back by as much: the next sweep came only after
it. Once every update of the batch has been sent and none has returned for ``STRAGGLER_S``,
the batch stops waiting for the ones still out (at most the sender threads' number): they
stay journaled and *in flight* (`inflight`), no sweep decides or finishes them, and
`harvest` sorts each out when its update returns (released, or refused: then the
step-by-step path below), for the loop to record then. Every other caller (recovery, a
stop, ``--release-held``) waits for all of its updates.

Write health: `writes_failed_at` is the monotonic time of the first release the batch could
not make (Slurm refused the writes: no operator privileges, slurmctld refusing updates) and
None again once a release goes through. The loop counts it in the daemon's health, so the
heartbeat stops while Slurm refuses the daemon's writes.

Fencing (HA, plugin/daemon/lease.py): `fence`, when given, is called once before each
group of writes (the journal; the resize and comments; the release; each fallback: undoing,
re-commenting, releasing one by one) and raises LeaseLost when this daemon no longer holds
the lease; that ends the batch there, unwritten, for the new holder to finish from the
journal. One check per group, not per job: a check is a Redis round trip.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

import structlog

from plugin.daemon import reasons
from plugin.daemon.decider import RELEASE, Outcome, release_outcome
from plugin.daemon.journal import Journal, JournalEntry
from plugin.errors import printable
from plugin.slurm import JobRecord, Resize, SlurmClient, SlurmError
from plugin.slurm.writer import JobUpdate, SlurmWriter, check_admin_comment

__all__ = ["Applied", "Applier", "journal_entry", "outcome_from_journal"]

log = structlog.get_logger("adaptalloc.daemon")

#: Applied.status values.
RELEASED = "released"
GONE = "gone"
PENDING_RELEASE = "pending_release"

Timer = Callable[[str], contextlib.AbstractContextManager[None]]
#: Once every update of a batch was sent, the longest it waits with none returning before it
#: leaves the rest in flight (module docstring; ``[daemon] straggler_s``, 0: never). Chosen,
#: not fitted: above an ordinary update inside slurmctld (p99 1-64 ms in the release floor
#: runs of 2026-11-26), far below its 1-2 s stalls.
STRAGGLER_S = 0.1


@dataclass
class InFlight:
    """A job's combined update, sent and not yet returned: its outcome, the future, when it
    was sent and (set by the sender thread) when it returned, wall clock."""

    outcome: Outcome
    future: Future[str | None]
    sent: float
    returned: float | None = None
    #: Called (from the sender thread) when the update returns.
    notify: Callable[[], None] | None = None

    def on_return(self, _: object) -> None:
        self.returned = time.time()
        if self.notify is not None:
            self.notify()


@dataclass(frozen=True)
class Applied:
    """One outcome after the batch: its (possibly changed) outcome and status."""

    outcome: Outcome
    status: str


def journal_entry(outcome: Outcome) -> JournalEntry:
    """What the journal keeps of an outcome: enough to finish applying it after a crash."""
    resize = outcome.resize
    return JournalEntry(
        submit=outcome.job.submit_time or 0,
        action=outcome.action,
        comment=outcome.admin_comment,
        resize=None
        if resize is None
        else (resize.min_nodes, resize.max_nodes, resize.time_limit_min),
        rule=outcome.rule,
        fail_open=outcome.fail_open,
        app=None if outcome.app is None else str(outcome.app),
        reason=outcome.reason[:300],
        nodes_min=outcome.job.nodes_min,
        nodes_max=outcome.job.nodes_max,
        limit=outcome.job.time_limit_min,
        partition=None if resize is None else resize.partition,
    )


def outcome_from_journal(job: JobRecord, entry: JournalEntry | None) -> Outcome | None:
    """The outcome a journal entry describes, for `job` as Slurm shows it now; None if the
    entry is unreadable or belongs to another job with the same id."""
    from plugin.appkey import AppKey, AppKeyError  # noqa: PLC0415 - avoids an import cycle

    if entry is None:
        return None
    if job.submit_time is not None and entry.submit not in (0, job.submit_time):
        return None  # the id was reused by another job
    limit = entry.limit if entry.limit_known else job.time_limit_min
    original = dataclasses.replace(
        job, nodes_min=entry.nodes_min, nodes_max=entry.nodes_max, time_limit_min=limit
    )
    # A job the crashed batch moved to one of its partitions shows that one now; the user's
    # list is not in the entry, so a put-back keeps the job where it is (still one it listed).
    try:
        app = AppKey.parse(entry.app) if entry.app else None
        comment = check_admin_comment(entry.comment)
        resize = (
            None
            if entry.resize is None
            else Resize(job.job_id, *entry.resize, partition=entry.partition)
        )
    except (AppKeyError, ValueError):
        return None
    return Outcome(
        job=original,
        action=entry.action,
        admin_comment=comment,
        reason=entry.reason,
        rule=entry.rule,
        fail_open=entry.fail_open,
        resize=resize,
        app=app,
        recovered=True,
    )


def _held(job: JobRecord | None) -> bool:
    return job is not None and job.state == "PENDING" and job.priority == 0


class Applier:
    """Applies outcomes (module docstring)."""

    def __init__(
        self,
        slurm: SlurmClient,
        journal: Journal,
        timed: Timer,
        clock: Callable[[], float] = time.monotonic,
        fence: Callable[[], object] | None = None,
        parallelism: int = 4,
        on_return: Callable[[], None] | None = None,
        straggler_s: float = STRAGGLER_S,
    ) -> None:
        self.slurm = slurm
        #: Worker threads for one batch's writes (the resize and the comments at once).
        self.parallelism = max(2, parallelism)
        self.fence = fence
        self.journal = journal
        self.timed = timed
        self.clock = clock
        #: Outcomes applied except for the release (journal entries of the running daemon).
        self.unreleased: dict[int, Outcome] = {}
        #: When releases started failing (module docstring); None while they work.
        self.writes_failed_at: float | None = None
        #: Job id -> its update still out (module docstring: stragglers); these jobs are
        #: in `unreleased` too (journaled).
        self.inflight: dict[int, InFlight] = {}
        #: Called (from a sender thread) when an update in flight returns.
        self.on_return = on_return
        self.straggler_s = straggler_s

    def _fenced(self) -> None:
        """Before a write: LeaseLost (propagated, never caught here) unless we may write."""
        if self.fence is not None:
            self.fence()

    def _writes(self, ok: bool) -> None:
        if ok:
            if self.writes_failed_at is not None:
                log.info("writes_recovered")
            self.writes_failed_at = None
        elif self.writes_failed_at is None:
            self.writes_failed_at = self.clock()

    # --- reading back ------------------------------------------------------------------

    def read_jobs(self) -> dict[int, JobRecord] | None:
        try:
            with self.timed("squeue"):
                return {j.job_id: j for j in self.slurm.jobs()}
        except SlurmError as exc:
            log.warning("readback_failed", error=printable(str(exc))[:200])
            return None

    # --- the steps ---------------------------------------------------------------------

    def _write_journal(self, batch: Iterable[Outcome]) -> None:
        entries = {o.job_id: journal_entry(o) for o in self.unreleased.values()}
        entries.update({o.job_id: journal_entry(o) for o in batch})
        self._fenced()
        try:
            self.journal.write(entries)
        except OSError as exc:  # no journal: still apply (a crash then redoes the decision)
            log.error("journal_write_failed", error=printable(str(exc))[:200])

    def apply(self, outcomes: Sequence[Outcome], leave_stragglers: bool = False) -> list[Applied]:
        """Apply `outcomes` (distinct jobs) and return each one's final outcome and status;
        with `leave_stragglers`, the jobs left in flight are not among them (`harvest`)."""
        if not outcomes:
            return []
        self._write_journal(outcomes)
        current = {o.job_id: o for o in outcomes}
        # getattr: clients written before update_jobs existed (tests' fakes) lack the flag.
        combined = getattr(self.slurm, "combined_updates", False)
        leave = leave_stragglers and self.straggler_s > 0
        steps = self._combined(current, leave) if combined else current
        for job_id in self.inflight.keys() & current.keys():
            self.unreleased[job_id] = current.pop(job_id)
        return self._steps(current, steps)

    def _steps(self, current: dict[int, Outcome], steps: dict[int, Outcome]) -> list[Applied]:
        """Steps 2-4 for the outcomes of `steps` (of `current`), then every job's status."""
        gone: set[int] = set()
        pending: set[int] = set()
        if steps:
            self._resize_and_comment(steps, gone)
            pending = self._release([o for o in steps.values() if o.job_id not in gone], gone)
            current.update(steps)
        out = []
        for job_id, outcome in current.items():
            if job_id in gone:
                status = GONE
            elif job_id in pending:
                status = PENDING_RELEASE
                self.unreleased[job_id] = outcome
            else:
                status = RELEASED
            if status != PENDING_RELEASE:
                self.unreleased.pop(job_id, None)
            out.append(Applied(outcome, status))
        return out

    def _combined(self, current: dict[int, Outcome], leave: bool) -> dict[int, Outcome]:
        """Each job's changes and release as one update (one fence check for the batch);
        the outcomes Slurm refused, or that could not be sent, to apply step by step. With
        `leave`, the stragglers go in flight (module docstring)."""
        updates = []
        refused: dict[int, Outcome] = {}
        for job_id, outcome in current.items():
            try:
                updates.append(JobUpdate(job_id, outcome.resize, outcome.admin_comment))
            except ValueError:  # a comment Slurm must not get: the steps release it anyway
                refused[job_id] = outcome
        if not updates:
            return refused
        self._fenced()
        try:
            with self.timed("update"):
                futures = _send(self.slurm, updates)
                sent = time.time()
                out = self._wait(futures, leave)
        except (SlurmError, ValueError) as exc:
            log.warning("update_failed", jobs=len(updates), error=printable(str(exc))[:300])
            return dict(current)
        errors: dict[int, str] = {}
        for update, future in zip(updates, futures, strict=True):
            if future in out:
                entry = InFlight(current[update.job_id], future, sent, notify=self.on_return)
                self.inflight[update.job_id] = entry
                future.add_done_callback(entry.on_return)
            elif (error := _refusal(future)) is not None:
                errors[update.job_id] = error
        self._refused(errors, len(updates) - len(out))
        refused.update({job_id: current[job_id] for job_id in errors})
        return refused

    def _refused(self, errors: dict[int, str], returned: int) -> None:
        """Log the refusals among `returned` updates; writes work if any went through."""
        if errors:
            first = next(iter(errors.items()))
            log.warning("update_refused", jobs=len(errors), job_id=first[0], error=first[1])
        if len(errors) < returned:
            self._writes(ok=True)

    def _wait(self, futures: Sequence[Future[str | None]], leave: bool) -> set[Future[str | None]]:
        """Wait for the updates until every one returned, or (with `leave`) none of the last
        few (at most the sender threads' number) returned for `straggler_s`; the ones still
        out."""
        if not leave:
            wait(futures)
            return set()
        out = set(futures)
        while out:
            before = len(out)
            _, out = wait(out, timeout=self.straggler_s)
            if len(out) == before and before <= self.parallelism:
                break
        return out

    def harvest(self) -> tuple[list[Applied], dict[int, tuple[float, float]]]:
        """The jobs in flight whose update returned: each one's status (a refused update
        went step by step, as in `apply`), and its (sent, returned) wall-clock times."""
        back = {job_id: e for job_id, e in self.inflight.items() if e.future.done()}
        if not back:
            return [], {}
        for job_id in back:
            del self.inflight[job_id]
        errors = {j: error for j, e in back.items() if (error := _refusal(e.future)) is not None}
        self._refused(errors, len(back))
        current = {job_id: e.outcome for job_id, e in back.items()}
        steps = {job_id: current[job_id] for job_id in errors}
        times = {j: (e.sent, e.returned or time.time()) for j, e in back.items()}
        return self._steps(current, steps), times

    def wait_inflight(self) -> None:
        """Wait until every update in flight returned (each ends by Slurm's timeout)."""
        wait([e.future for e in self.inflight.values()])

    def _resize_and_comment(self, current: dict[int, Outcome], gone: set[int]) -> None:
        """Steps 2 and 3 at once: they change different fields of held jobs, and each scontrol
        call waits mostly on slurmctld's round trips, so the comments' processes run beside
        the resize's (one fence check for both). A job whose resize did not take is undone
        and gets its new (slurm_error) comment afterwards."""
        before = {job_id: o.admin_comment for job_id, o in current.items()}
        self._fenced()
        with ThreadPoolExecutor(max_workers=self.parallelism) as pool:
            comments = pool.submit(self._write_comments, before, pool)
            resize_error = self._write_resize(current)
            failed = comments.result()
        if resize_error is not None:
            self._check_resize(current, gone)
        changed = {
            job_id: [job_id]
            for job_id, o in current.items()
            if job_id not in gone and o.admin_comment != before[job_id]
        }
        for job_id in changed:
            failed.append((current[job_id].admin_comment, [job_id]))
        self._fix_comments(current, gone, failed)

    def commit(self) -> None:
        """After the batch was recorded: the journal keeps only what is still unreleased."""
        self._write_journal(())

    def _write_resize(self, current: dict[int, Outcome]) -> SlurmError | None:
        """Every resize of the batch (already fenced); the error, if scontrol reported one."""
        changes = [o.resize for o in current.values() if o.resize is not None]
        if not changes:
            return None
        try:
            with self.timed("resize"):
                self.slurm.resize(changes)
        except SlurmError as exc:
            log.warning("resize_failed", jobs=len(changes), error=printable(str(exc))[:300])
            return exc
        return None

    def _check_resize(self, current: dict[int, Outcome], gone: set[int]) -> None:
        """After a failed resize: read the jobs back; gone ones are gone, the ones whose
        change did not take are undone (one fence check for the undoing)."""
        changes = [o.resize for o in current.values() if o.resize is not None]
        jobs = self.read_jobs()
        fenced = False
        for change in changes:
            job = jobs.get(change.job_id) if jobs is not None else None
            if jobs is not None and not _held(job):
                gone.add(change.job_id)
                continue
            if job is not None and _matches(job, change):
                continue
            if not fenced:
                self._fenced()
                fenced = True
            current[change.job_id] = self._undo(current[change.job_id], job)

    def _undo(self, outcome: Outcome, job: JobRecord | None) -> Outcome:
        """Put a partly resized job back as submitted and turn it into a slurm_error release."""
        original = outcome.job
        moved = (
            outcome.resize is not None
            and outcome.resize.partition is not None
            and job is not None
            and job.partition != original.partition
        )
        if job is not None and (
            (job.nodes_min, job.nodes_max) != (original.nodes_min, original.nodes_max)
            or job.time_limit_min != original.time_limit_min
            or moved
        ):
            low, high = original.nodes_min or 1, original.nodes_max or original.nodes_min or 1
            unlimited = original.time_limit_min is None and job.time_limit_min is not None
            back = original.partition if moved else None
            with contextlib.suppress(SlurmError, ValueError), self.timed("resize"):
                self.slurm.restore(
                    [
                        Resize(
                            original.job_id,
                            low,
                            high,
                            original.time_limit_min,
                            unlimited,
                            partition=back,
                        )
                    ]
                )
        return release_outcome(
            original,
            reasons.SLURM_ERROR,
            "Slurm refused the new size or time limit; released as submitted",
            outcome.app,
            cluster=outcome.cluster,
            policy=outcome.policy,
            curve_version=outcome.curve_version,
        )

    def _write_comments(
        self, comments: dict[int, str], pool: ThreadPoolExecutor
    ) -> list[tuple[str, list[int]]]:
        """One ``scontrol update JobId=<list> AdminComment=...`` per distinct text, on the
        pool's other workers (already fenced); the (text, ids) that failed."""
        groups: dict[str, list[int]] = defaultdict(list)
        for job_id, text in comments.items():
            groups[text].append(job_id)

        def write(text: str, ids: list[int]) -> tuple[str, list[int]] | None:
            try:
                with self.timed("comment"):
                    self.slurm.set_admin_comment(ids, text)
            except (SlurmError, ValueError) as exc:
                log.warning("comment_failed", jobs=len(ids), error=printable(str(exc))[:300])
                return text, ids
            return None

        if len(groups) == 1:
            return [f for f in [write(*next(iter(groups.items())))] if f is not None]
        futures = [pool.submit(write, text, ids) for text, ids in groups.items()]
        return [f for f in (future.result() for future in futures) if f is not None]

    def _fix_comments(
        self, current: dict[int, Outcome], gone: set[int], failed: list[tuple[str, list[int]]]
    ) -> None:
        """Comments that did not take (or changed with an undo): read the jobs back, write
        each still-held job's own comment once more (one fence check for all of them)."""
        if not failed:
            return
        jobs = self.read_jobs() or {}
        self._fenced()
        for _, ids in failed:
            for job_id in ids:
                if job_id in gone:
                    continue
                text = current[job_id].admin_comment
                job = jobs.get(job_id)
                if jobs and not _held(job):
                    gone.add(job_id)
                elif job is None or job.admin_comment != text:
                    with contextlib.suppress(SlurmError, ValueError), self.timed("comment"):
                        self.slurm.set_admin_comment([job_id], text)

    def _release(self, outcomes: Sequence[Outcome], gone: set[int]) -> set[int]:
        """Release; returns the ids still held afterwards (to retry next cycle)."""
        ids = [o.job_id for o in outcomes]
        if not ids:
            return set()
        try:
            self._fenced()
            with self.timed("release"):
                self.slurm.release(ids)
            self._writes(ok=True)
            return set()
        except SlurmError as exc:
            log.warning("release_failed", jobs=len(ids), error=printable(str(exc))[:300])
        jobs = self.read_jobs()
        if jobs is None:
            self._writes(ok=False)
            return set(ids)
        still: set[int] = set()
        retry = []
        for job_id in ids:
            job = jobs.get(job_id)
            # squeue --json lists finished jobs too: one cancelled under the batch is gone,
            # not released (a released job that ran and ended shows another state).
            if job is None or job.state == "CANCELLED":
                gone.add(job_id)
            elif _held(job):  # else released after all (pending, running or ended)
                retry.append(job_id)
        if retry:
            self._fenced()
        for job_id in retry:  # one by one: a job Slurm refuses cannot block the others
            try:
                with self.timed("release"):
                    self.slurm.release([job_id])
            except SlurmError:
                still.add(job_id)
        self._writes(ok=not still)
        return still

    def finish(self, jobs: dict[int, JobRecord]) -> list[Outcome]:
        """The unreleased outcomes whose jobs are still held (to release again)."""
        out = []
        for job_id, outcome in list(self.unreleased.items()):
            if _held(jobs.get(job_id)):
                out.append(outcome)
            else:
                self.unreleased.pop(job_id, None)
        return out


def _matches(job: JobRecord, change: Resize) -> bool:
    if (job.nodes_min, job.nodes_max) != (change.min_nodes, change.max_nodes):
        return False
    if change.partition is not None and job.partition != change.partition:
        return False
    return change.time_limit_min is None or job.time_limit_min == change.time_limit_min


def released(applied: Iterable[Applied]) -> Iterator[Applied]:
    return (a for a in applied if a.status == RELEASED)


def is_fail_open(outcome: Outcome) -> bool:
    return outcome.action == RELEASE


def _send(slurm: SlurmClient, updates: Sequence[JobUpdate]) -> list[Future[str | None]]:
    """`slurm.send_updates`; for clients without it (tests' fakes), the base class's, which
    wraps their `update_jobs` in done futures."""
    send = getattr(slurm, "send_updates", None)
    if send is not None:
        futures: list[Future[str | None]] = send(updates)
        return futures
    return SlurmWriter.send_updates(slurm, updates)


def _refusal(future: Future[str | None]) -> str | None:
    """A returned update's refusal (None: it went through); an exception in the sender
    thread counts as a refusal, so the job goes step by step."""
    try:
        return future.result()
    except Exception as exc:  # the binding failing for this one job
        return printable(repr(exc))[:200]
