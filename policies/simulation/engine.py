"""The event-driven scheduler: one partition of `machine` nodes, FCFS with EASY backfilling.

Events are submits (the trace, in submit order) and finishes (a heap by end time). At each
event time every finish is processed first (its nodes come back), then every submit (the
job's sizing policy fixes its allocation, sizing.py, seeing the cluster as it is then), and
then one scheduling pass:

1. FCFS: while the first waiting job fits in the free nodes it starts. Waiting jobs are kept in
   submit order (ties in trace order); no job passes the first one except by step 2.
2. EASY backfilling (backfill.py), unless disabled: the first waiting job gets a reservation
   from the running jobs' time limits; every later waiting job, in order, starts now if it fits
   in what it may take without delaying that reservation.

A job with a node range (greedy, or an adaptive job left as submitted) takes at start as many
nodes as are free, up to its maximum, or as backfilling allows; it waits while fewer than its
minimum are. Nodes are counted, not placed: one partition with no topology.

A job started on n nodes runs T(n) (workload.JobCurves.runtime); one still running at its time
limit is killed then, as a real scheduler does: that run ends at start + limit.

Kills cost what they cost (`max_time`, the partition's longest limit): a killed job is
submitted again by its user at once, the same request with the user's limit doubled up to
`max_time` (the sizer allocates it again, with that `user_limit`), and again after each kill
while the user's limit is below `max_time`; a job killed with the user's limit at `max_time`
is abandoned (its user gives up). Its response runs from its first submit to the end of its
last run, every run's node-hours count, and the killed runs' are wasted. Without `max_time`
a killed job is not submitted again and its response ends at the kill (for tests of the
scheduling alone).

A job the trace records as failed or cancelled (`TraceJob.completed` False) runs as recorded
in every policy: its size, its trace run time, a limit it cannot outrun; its sizer is never
asked, nor told of its end.

The kill guard: a job whose allocation carries a `guard_limit` above its limit and that is
still running GUARD_MARGIN_S before its limit gets that limit then (as the daemon does, as
root: plugin/daemon/guard.py); it counts as raised, and is killed only at the raised limit.
Until the raise, the scheduler plans with the shorter limit (EASY's reservations may then
come late, as on the real cluster). A sizer with a `raised(job, now)` method is told of it.
A sizer with a `finished(job, nodes, runtime, killed, now)` method is told of every run's
end, in end order, before the jobs submitted at that time are sized (the learning policies).
Node counts never exceed the machine (the tests check it over the whole schedule).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np

from policies.simulation.backfill import Reservation, backfill_cap, shadow
from policies.simulation.sizing import Allocation, ClusterView, Sizer
from policies.simulation.workload import TraceJob
from predictor.downey import BoolArray, FloatArray, IntArray

#: Runtime of job `job` on `n` nodes, in seconds.
RuntimeModel = Callable[[int, int], float]
#: Told the number of finished jobs now and then (a progress bar); must not raise.
Progress = Callable[[int], None]
#: Finished jobs between two progress calls.
PROGRESS_EVERY = 500
#: The kill guard raises a limit this long before it (the daemon's RAISE_MARGIN_S: slurmctld's
#: 30 s enforcement pass, two 5 s guard intervals and a 5 s command timeout).
GUARD_MARGIN_S = 45.0
#: A resubmitted job's user limit: the previous one times this, up to the partition's maximum.
RESUBMIT_FACTOR = 2.0
#: The rule of a job replayed as recorded (failed or cancelled in the trace).
RECORDED = "as recorded"


@dataclass(frozen=True, eq=False)
class Runs:
    """Every run of every job, in start order: its job, start, end, nodes, whether it was
    killed at its limit, and (when known) its limit (the raised one, if raised) and its
    submission's user limit."""

    job: IntArray
    start: FloatArray
    end: FloatArray
    nodes: IntArray
    killed: BoolArray
    limit: FloatArray | None = None
    user_limit: FloatArray | None = None

    def __len__(self) -> int:
        return len(self.job)


@dataclass(frozen=True, eq=False)
class Schedule:
    """What happened to every job, in the order of the jobs given (times in seconds).

    start, end, nodes, limit: of the job's last run (its completion, or the kill it was
    abandoned at); limit the raised one, if raised; killed: some run of it hit its limit;
    raised: the kill guard raised its limit; rule: why it got its (last) allocation (adaptive;
    RECORDED for a job replayed as recorded) or "". reservations: every EASY reservation, in
    order, when recorded (`simulate(record_reservations=True)`). runs: every run (engine
    module doc: a killed job runs again); None for a schedule built without them, which
    then has one run per job. abandoned: killed with the user's limit at the maximum.
    """

    machine: int
    submit: FloatArray
    start: FloatArray
    end: FloatArray
    nodes: IntArray
    limit: FloatArray
    killed: BoolArray
    rule: tuple[str, ...]
    reservations: tuple[Reservation, ...] = ()
    raised: BoolArray | None = None
    runs: Runs | None = None
    abandoned: BoolArray | None = None

    @property
    def raised_limits(self) -> int:
        """How many limits the kill guard raised."""
        return 0 if self.raised is None else int(np.sum(self.raised))

    @property
    def runtime(self) -> FloatArray:
        """The last run's length, per job."""
        out: FloatArray = self.end - self.start
        return out

    def all_runs(self) -> Runs:
        """Every run (one per job when the schedule has no `runs`)."""
        if self.runs is not None:
            return self.runs
        return Runs(np.arange(len(self)), self.start, self.end, self.nodes, self.killed)

    def per_job(self, values: FloatArray) -> FloatArray:
        """Σ of a per-run value over each job's runs."""
        runs = self.all_runs()
        out: FloatArray = np.bincount(runs.job, weights=values, minlength=len(self)).astype(float)
        return out

    @property
    def work(self) -> FloatArray:
        """Node-seconds of every run of each job."""
        runs = self.all_runs()
        return self.per_job(runs.nodes * (runs.end - runs.start))

    @property
    def wasted(self) -> FloatArray:
        """Node-seconds of each job's killed runs."""
        runs = self.all_runs()
        return self.per_job(np.where(runs.killed, runs.nodes * (runs.end - runs.start), 0.0))

    @property
    def ran(self) -> FloatArray:
        """Seconds each job spent running, over all its runs."""
        runs = self.all_runs()
        return self.per_job(runs.end - runs.start)

    @property
    def kills(self) -> IntArray:
        """Killed runs per job."""
        runs = self.all_runs()
        out: IntArray = np.bincount(runs.job[runs.killed], minlength=len(self)).astype(np.int64)
        return out

    @property
    def resubmitted(self) -> int:
        """How many times users submitted a killed job again."""
        return len(self.all_runs()) - len(self)

    def __len__(self) -> int:
        return len(self.submit)


def simulate(
    jobs: Sequence[TraceJob],
    machine: int,
    sizer: Sizer,
    runtime: RuntimeModel,
    backfill: bool = True,
    record_reservations: bool = False,
    progress: Progress | None = None,
    max_time: float | None = None,
) -> Schedule:
    """Run the trace through the scheduler (module doc) and return the schedule; with
    `max_time` (s) a killed job is submitted again (module doc)."""
    if machine < 1:
        raise ValueError(f"machine must have at least 1 node, got {machine}")
    state = PartitionScheduler(
        jobs, machine, sizer, runtime, backfill, record_reservations, max_time
    )
    state.run(progress)
    return state.schedule()


class PartitionScheduler:
    """One partition's state; `run` is the event loop, each step a method. A simulation of
    several partitions (pooled.py) drives one per partition with `ends`, `enqueue` and
    `schedule_pass` in `run`'s order."""

    def __init__(
        self,
        jobs: Sequence[TraceJob],
        machine: int,
        sizer: Sizer,
        runtime: RuntimeModel,
        backfill: bool,
        record_reservations: bool,
        max_time: float | None = None,
    ) -> None:
        if max_time is not None and not (math.isfinite(max_time) and max_time > 0.0):
            raise ValueError(f"max_time must be finite and > 0, got {max_time!r}")
        count = len(jobs)
        self.jobs, self.machine, self.sizer, self.runtime = jobs, machine, sizer, runtime
        self.backfill, self.record = backfill, record_reservations
        self.max_time = max_time
        # A sizer that learns (adaptive.AdaptiveSizer) is told of every run's end.
        self.on_finish = getattr(sizer, "finished", None)
        self.on_raise = getattr(sizer, "raised", None)
        self.submit = [float(j.submit) for j in jobs]
        self.order = sorted(range(count), key=self.submit.__getitem__)
        self.recorded = [not j.completed for j in jobs]
        self.start = [math.nan] * count
        self.end = [math.nan] * count
        self.nodes = [0] * count
        self.limit = [0.0] * count
        self.killed = [False] * count
        self.raised = [False] * count
        self.abandoned = [False] * count
        #: The user's limit of each job's latest submission (None: the job's own).
        self.user_limit: list[float | None] = [None] * count
        self.guard = [0.0] * count  # the kill guard's limit; 0: not watched
        self.rule = [""] * count
        self.lo = [0] * count
        self.hi = [0] * count
        self.finishes: list[tuple[float, int]] = []  # heap of (end, job)
        self.raises: list[tuple[float, int]] = []  # heap of (the kill guard's raise, job)
        self.running: dict[int, tuple[float, int]] = {}  # job -> (end by its limit, nodes)
        self.queue: list[int] = []  # waiting jobs in submit order
        self.reservations: list[Reservation] = []
        #: Every run: (job, start, end, nodes, killed, limit, user limit).
        self.runs: list[tuple[int, float, float, int, bool, float, float]] = []
        self.free = machine
        self.pending = 0  # nodes the waiting jobs want, each at its minimum
        self.submitted = 0

    def run(self, progress: Progress | None) -> None:
        """The event loop: finishes, then submits, then one scheduling pass per event time."""
        count, finished = len(self.jobs), 0
        while self.submitted < count or self.finishes:
            now = self.submit[self.order[self.submitted]] if self.submitted < count else math.inf
            if self.finishes and self.finishes[0][0] < now:
                now = self.finishes[0][0]
            for _ in range(self.ends(now)):
                finished += 1
                if progress is not None and finished % PROGRESS_EVERY == 0:
                    progress(finished)
            self._arrive(now)
            self.schedule_pass(now)
        if self.queue:  # unreachable: a waiting head always has running jobs to wait for
            raise RuntimeError(f"{len(self.queue)} jobs never started")
        if progress is not None:
            progress(finished)

    def ends(self, now: float) -> int:
        """The kill guard's raises, then the ends, up to `now`; how many jobs ended."""
        self._raise(now)
        return self._finish(now)

    def schedule_pass(self, now: float) -> None:
        """One scheduling pass at `now`: FCFS, then EASY backfilling when on."""
        self._fcfs(now)
        if self.backfill and len(self.queue) > 1 and self.free > 0:
            self._easy(now)

    def enqueue(self, job: int, now: float) -> None:
        """Size `job` as its policy sees the partition at `now` and queue it."""
        self._enqueue(job, now)

    def _raise(self, now: float) -> None:
        """The kill guard: every job reaching its shortened limit by `now` gets the guard's
        limit; the scheduler plans with it from then on. No scheduling pass is needed: a
        longer limit frees nothing, so it is applied before the next event's pass."""
        while self.raises and self.raises[0][0] <= now:
            at, job = heapq.heappop(self.raises)
            raised = self.guard[job]
            self.limit[job] = raised
            self.raised[job] = True
            self.running[job] = (self.start[job] + raised, self.nodes[job])
            if self.on_raise is not None:
                self.on_raise(job, at)

    def _finish(self, now: float) -> int:
        """Give back the nodes of every run ending at `now`, then submit again the killed
        jobs whose users will (module doc); return how many runs ended."""
        ended = 0
        again: list[int] = []
        while self.finishes and self.finishes[0][0] <= now:
            end, job = heapq.heappop(self.finishes)
            self.free += self.nodes[job]
            del self.running[job]
            killed = self.killed[job]
            if self.on_finish is not None and not self.recorded[job]:
                self.on_finish(job, self.nodes[job], end - self.start[job], killed, end)
            if killed and self.max_time is not None:
                again.append(job)
            ended += 1
        for job in again:
            self._resubmit(job, now)
        return ended

    def _resubmit(self, job: int, now: float) -> None:
        """The user of killed `job` submits it again with twice the limit (at most
        max_time), or gives up when the limit was at max_time already."""
        if self.max_time is None:  # _finish resubmits only with a maximum
            return
        user = self.user_limit[job]
        previous = self.jobs[job].limit if user is None else user
        if previous >= self.max_time * (1.0 - 1e-12):
            self.abandoned[job] = True
            return
        self.user_limit[job] = min(self.max_time, RESUBMIT_FACTOR * previous)
        self.start[job] = math.nan
        self._enqueue(job, now)

    def _arrive(self, now: float) -> None:
        """Size every job submitted at `now` (its policy sees the cluster now) and queue it."""
        count = len(self.jobs)
        while self.submitted < count and self.submit[self.order[self.submitted]] <= now:
            job = self.order[self.submitted]
            self.submitted += 1
            self._enqueue(job, now)

    def view(self, now: float) -> ClusterView:
        """The partition as a sizing policy sees it at `now`."""
        return ClusterView(now, self.free, self.pending, self.machine)

    def _enqueue(self, job: int, now: float) -> None:
        """Size `job` (its policy sees the cluster now) and put it at the end of the queue; a
        job replayed as recorded gets its own size and a limit it cannot outrun."""
        j = self.jobs[job]
        if self.recorded[job]:
            alloc = Allocation(j.nodes, j.nodes, max(j.limit, j.runtime), RECORDED)
        else:
            alloc = self.sizer.allocate(job, self.view(now), self.user_limit[job])
        if not 1 <= alloc.min_nodes <= alloc.max_nodes <= self.machine:
            raise ValueError(
                f"job {j.job_id}: {self.sizer.name} asked for "
                f"{alloc.min_nodes}-{alloc.max_nodes} nodes on a machine of {self.machine}"
            )
        if not (math.isfinite(alloc.limit) and alloc.limit > 0.0):
            raise ValueError(f"job {j.job_id}: time limit {alloc.limit}")
        self.lo[job], self.hi[job] = alloc.min_nodes, alloc.max_nodes
        self.limit[job], self.rule[job] = alloc.limit, alloc.rule
        self.guard[job] = 0.0
        guard = alloc.guard_limit
        if guard is not None and guard > alloc.limit:
            if not math.isfinite(guard):
                raise ValueError(f"job {j.job_id}: guard limit {guard}")
            self.guard[job] = guard
        self.queue.append(job)
        self.pending += alloc.min_nodes

    def _fcfs(self, now: float) -> None:
        """Start the first waiting jobs while they fit, each on up to all free nodes."""
        queue, head = self.queue, 0
        while head < len(queue) and self.lo[queue[head]] <= self.free:
            job = queue[head]
            self._start(job, min(self.hi[job], self.free), now)
            head += 1
        if head:
            del queue[:head]

    def _easy(self, now: float) -> None:
        """EASY: reserve for the first waiting job; start later ones that cannot delay it."""
        lo, hi, limit = self.lo, self.hi, self.limit
        first = self.queue[0]
        reserved = shadow(now, self.free, lo[first], self.running.values())
        if self.record:
            self.reservations.append(Reservation(now, first, reserved[0], reserved[1]))
        started = False
        for job in islice(self.queue, 1, None):
            if lo[job] > self.free:
                continue
            cap = backfill_cap(now, limit[job], self.free, reserved)
            if lo[job] > cap:
                continue
            size = min(hi[job], cap)
            self._start(job, size, now)
            started = True
            if now + limit[job] > reserved[0]:
                reserved = (reserved[0], reserved[1] - size)
            if self.free == 0:
                break
        if started:
            self.queue = [job for job in self.queue if math.isnan(self.start[job])]

    def _start(self, job: int, size: int, now: float) -> None:
        """Run `job` on `size` nodes from `now`: ends after T(size) or is killed at its limit
        (a job replayed as recorded runs its trace run time)."""
        j = self.jobs[job]
        actual = j.runtime if self.recorded[job] else self.runtime(job, size)
        if not (math.isfinite(actual) and actual > 0.0):
            raise ValueError(f"job {j.job_id}: runtime on {size} nodes is {actual}")
        limit = self.limit[job]
        final = limit
        if actual > limit - GUARD_MARGIN_S and self.guard[job] > limit:
            heapq.heappush(self.raises, (now + max(0.0, limit - GUARD_MARGIN_S), job))
            final = self.guard[job]
        cut = actual > final
        self.killed[job] = cut
        self.start[job] = now
        self.end[job] = now + (final if cut else actual)
        self.nodes[job] = size
        self.free -= size
        self.pending -= self.lo[job]
        self.running[job] = (now + limit, size)
        user = self.user_limit[job]
        self.runs.append(
            (job, now, self.end[job], size, cut, final, j.limit if user is None else user)
        )
        heapq.heappush(self.finishes, (self.end[job], job))

    def schedule(self) -> Schedule:
        runs = self.runs
        job = np.array([r[0] for r in runs], dtype=np.int64)
        killed_any = np.zeros(len(self.jobs), dtype=bool)
        run_killed = np.array([r[4] for r in runs], dtype=bool)
        killed_any[job[run_killed]] = True
        return Schedule(
            machine=self.machine,
            submit=np.asarray(self.submit, dtype=float),
            start=np.asarray(self.start, dtype=float),
            end=np.asarray(self.end, dtype=float),
            nodes=np.asarray(self.nodes, dtype=np.int64),
            limit=np.asarray(self.limit, dtype=float),
            killed=killed_any,
            rule=tuple(self.rule),
            reservations=tuple(self.reservations),
            raised=np.asarray(self.raised, dtype=bool),
            runs=Runs(
                job=job,
                start=np.array([r[1] for r in runs], dtype=float),
                end=np.array([r[2] for r in runs], dtype=float),
                nodes=np.array([r[3] for r in runs], dtype=np.int64),
                killed=run_killed,
                limit=np.array([r[5] for r in runs], dtype=float),
                user_limit=np.array([r[6] for r in runs], dtype=float),
            ),
            abandoned=np.asarray(self.abandoned, dtype=bool),
        )
