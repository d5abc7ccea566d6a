"""The daemon's latency aim against the floor this machine allows: daemon, minimal releaser and
Slurm alone side by side, interleaved in one run.

Three modes submit the same stream (same sbatch line, same job_submit.lua, jobs that run
``true`` once eligible):

* ``slurm``: Slurm alone. No heartbeat, so job_submit.lua holds nothing: a job is eligible
  when slurmctld accepts it. The lower bound: what this box's slurmctld does with the stream
  before anyone releases anything.
* ``floor``: the least any releaser must do (floor_releaser.py): the same hold (heartbeat
  kept fresh, the same spool line), released by a loop with no policy, no Redis, no spool
  wake, no journal, no guard, that reads the queue with the daemon's own libslurm reader and
  releases each held job with one update, as fast as it can.
* ``floor-resize`` (opt-in, ``ADAPTALLOC_BENCH_MODES=slurm,floor,floor-resize,daemon``): the
  floor whose update also carries what the daemon's does (the node count pinned, a time
  limit, an admin comment as long as the daemon's record): the least an *adaptive* releaser
  must do, so the part of the daemon's extra time that is slurmctld's, not the daemon's.
* ``daemon``: ``adaptalloc daemon`` with the libslurm backend and a curve for the jobs' app
  (bench-lu, NPB LU's: tests/data/scaling), so each job goes the whole way.
* ``daemon-noprefetch`` (opt-in): the same daemon with ``prefetch_cluster = false``: its
  batches read sinfo, the partitions, the QOS table and the associations themselves when
  their caches expire (the daemon before the cluster prefetch, plugin/daemon/cluster.py),
  for the before/after side by side in one run.
* ``daemon-onefollowup`` (opt-in): the same daemon with ``follow_ups = 1``: one follow-up
  sweep after a wake-up's (the daemon before the follow-up chain, plugin/daemon/loop.py
  FOLLOW_UP_S), for the before/after of the chain.
* ``daemon-before`` (opt-in): ``follow_ups = 1`` and ``straggler_s = 0``: also waiting for
  every update of a batch before the next sweep (plugin/daemon/apply.py, stragglers), the
  daemon before both changes, for the before/after of the pair.
* ``daemon-base`` (opt-in, with ``ADAPTALLOC_BENCH_BASE_TREE=DIR``): the daemon of another
  source tree, same config, for a before/after of code changes in one run. Make the tree
  with ``git archive <commit> | tar -x -C DIR`` and copy the built binding beside it
  (``cp plugin/slurm/_libslurm*.so DIR/plugin/slurm/``).

For each daemon mode the benchmark prints its cycles' parts (its ``batch`` events) and each
held job's latency in parts (its ``decision`` event's timeline, plugin/daemon/loop.py, with
slurmctld's submit and release lines): created -> the sweep that found it began reading,
that read, deciding, decided -> slurmctld's release; each part's p50 / p99 and its mean over
the slowest 5% of the jobs. Beside each mode's latency: slurmctld's own time in its update
RPCs (its log's ``usec=``), and how many sat there ``STALLED_S`` or more (slurmctld stalls
some updates for 1 or 2 s under load, whoever sends them: the floors' too).

Phases, each run for the three modes back to back (slurm, floor, daemon) so the other
engineers' load on this shared 2-core box hits all three alike: ``LIGHT_RATE_PER_S`` jobs/s
for ``LIGHT_S`` s, ``RATE_PER_S`` jobs/s for ``STEADY_S`` s (the aim: p99 <= 250 ms), and a
burst of ``BURST`` jobs from 4 submitters (the aim: the last one eligible within 1.1x of
Slurm alone's accept time, the slurm mode's burst in the same run).

Latency is from sbatch's return to the job being eligible, both on this machine's clock:
eligible is slurmctld's own log line, the release (``_release_job_rec``) for a held job, the
submission (``_slurm_rpc_submit_batch_job``, which says InitPrio=0 for a held job) for one
not held, so Slurm alone's figures are negative (eligible before sbatch's reply arrives). The
releasers' own clocks (the time their update returned) are printed beside it. Each figure is
one run with the 1-minute load average at the end of its phase; only correctness is asserted
(each held job released exactly once, nothing held in the slurm mode).

The constants (rates, durations) come from the latency aims. Quick mode (the default, what CI
runs; about a minute and a half here): 6 s phases and a burst of 500. The full run
(``ADAPTALLOC_FULL_BENCH=1``, ~3 minutes): 10 s phases and a burst of 1,000
(``ADAPTALLOC_BENCH_STEADY_S`` lengthens the phases). The aimed-for 5,000-job burst:
``ADAPTALLOC_BENCH_BURST=5000 deploy/test.sh tests/benchmarks/test_release_floor.py -s``.
The docs' page (docs/benchmarks/release-floor.md) is rendered from the last run
(results.py). Measured once (2026-11-26 20:35-20:50 UTC,
modes slurm, floor, daemon-base, daemon; 1-minute load average at the end of each burst in
brackets): Slurm alone accepted the 5,000 jobs in 42.4 s (12.4); the floor's were accepted
in 284.0 s and the last eligible at 285.6 s, 6.73x (8.7); the daemon's accepted in 209.0 s,
the last eligible at 217.1 s, 5.12x (18.5); the daemon before the per-job changes of that
day 137.8 s, 3.25x (24.9). The ratio there is mostly slurmctld accepting submissions more
slowly with any releaser beside them (the daemon's own cost per job).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from integration.daemon_harness import DaemonProcess, stop_testbed_daemon
from integration.sdiag import reset_rpc_stats, rpc_stats
from integration.testbed import PROJECT_ROOT, LocalCluster
from rich.console import Console
from rich.table import Table

from plugin.slurm.libslurm_backend import import_binding

from .results import full_run, mode_note, record
from .slurm_load import Submitter, bench_store, held, scancel

pytestmark = [pytest.mark.benchmark, pytest.mark.integration, pytest.mark.slow]

RELEASER = Path(__file__).resolve().parent / "floor_releaser.py"
#: The source tree of the ``daemon-base`` mode (module docstring).
BASE_TREE = os.environ.get("ADAPTALLOC_BENCH_BASE_TREE", "")
#: The latency aim: p99 <= 250 ms at this rate.
FULL = full_run()
RATE_PER_S = 50
STEADY_S = float(os.environ.get("ADAPTALLOC_BENCH_STEADY_S", "10" if FULL else "6"))
#: A light stream: the latency a releaser adds while slurmctld is far from saturated.
LIGHT_RATE_PER_S = 10
LIGHT_S = STEADY_S
#: The aimed-for burst is 5,000 jobs; 1,000 keeps the full run near 3 minutes, 500 the quick.
BURST = int(os.environ.get("ADAPTALLOC_BENCH_BURST", "1000" if FULL else "500"))
MODES = tuple(os.environ.get("ADAPTALLOC_BENCH_MODES", "slurm,floor,daemon").split(","))
#: Seconds between looks at the queue while waiting for releases or for the jobs to end.
POLL_S = 1.0
#: The longest a phase may wait for its jobs to be released, then to leave the queue.
WAIT_S = 600.0
LOG_LINE = re.compile(
    r"^\[([0-9T:.-]+)\] (?:_slurm_rpc_submit_batch_job: JobId=(\d+) InitPrio=(\d+)"
    r"|(?:sched: )?_release_job_rec: release hold on JobId=(\d+) )",
    re.M,
)
#: slurmctld's own time in one job update RPC (its throttle and lock waits included).
UPDATE_LINE = re.compile(r"_slurm_rpc_update_job: complete JobId=(\d+) uid=\d+ usec=(\d+)")
#: An update RPC this long (s) waited inside slurmctld before its work (its lines are logged
#: at completion, all at once): 1.0 or 2.0 s under load, for the floors' updates as for the
#: daemon's. The cause inside slurmctld 22.05 is not identified; counted, not ours to fix.
#: 0.9 s: just under the stalls' 1.0 s (slurmctld's log in the runs of 2026-11-26), far above
#: an ordinary update (p99 4-64 ms in the same runs).
STALLED_S = 0.9


@dataclass(frozen=True)
class Phase:
    """A steady stream (`rate` jobs/s for `seconds`) or, with `burst`, that many at once."""

    name: str
    rate: float = 0.0
    seconds: float = 0.0
    burst: int = 0


PHASES = (
    Phase(f"{LIGHT_RATE_PER_S}/s", LIGHT_RATE_PER_S, LIGHT_S),
    Phase(f"{RATE_PER_S}/s", RATE_PER_S, STEADY_S),
    Phase(f"burst {BURST:,}", burst=BURST),
)


@dataclass
class Outcome:
    """One mode's run of one phase."""

    mode: str
    achieved: float
    #: sbatch returned -> eligible by slurmctld's log, per job (seconds).
    eligible: npt.NDArray[np.float64]
    #: sbatch returned -> the releaser's update returned, per released job (seconds).
    own: npt.NDArray[np.float64]
    sbatch: npt.NDArray[np.float64]
    not_held: int
    timed_out: int
    load: float
    #: Burst: seconds from the first sbatch to the last return, and to the last eligible.
    accepted_s: float = 0.0
    last_eligible_s: float = 0.0
    rpcs: dict[str, tuple[int, float]] = field(default_factory=dict)
    #: Seconds slurmctld spent in each update RPC of the phase's jobs (its log).
    ctld_update: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    #: The daemon's ``batch`` log events (its cycle's parts), none for the other modes.
    batches: list[dict[str, Any]] = field(default_factory=list)
    #: Per job (daemon only), seconds from sbatch's return to each point of its way
    #: (`parts`), in the order of PARTS.
    parts: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)


@dataclass
class LogTimes:
    """What slurmctld's log says of some jobs: submission time and InitPrio, release times."""

    submitted: dict[int, tuple[float, int]] = field(default_factory=dict)
    released: dict[int, list[float]] = field(default_factory=dict)
    #: Seconds slurmctld spent in each update RPC per job (its ``usec=``).
    updates: dict[int, list[float]] = field(default_factory=dict)


def log_times(path: Path, offset: int) -> LogTimes:
    """slurmctld's submit and release lines after byte `offset` (ms timestamps, local time)."""
    text = path.read_bytes()[offset:].decode("utf-8", "replace")
    found = LogTimes()
    for match in LOG_LINE.finditer(text):
        stamp = datetime.fromisoformat(match[1]).timestamp()
        if match[2] is not None:
            found.submitted[int(match[2])] = (stamp, int(match[3]))
        else:
            found.released.setdefault(int(match[4]), []).append(stamp)
    for match in UPDATE_LINE.finditer(text):
        found.updates.setdefault(int(match[1]), []).append(int(match[2]) / 1e6)
    return found


def queued(name: str) -> int:
    """How many jobs called `name` are still pending or running."""
    out = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        ["squeue", "--noheader", f"--name={name}", "--format=%i"],  # noqa: S607
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return len(out.split())


def wait_until(what: str, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {WAIT_S:.0f} s waiting for {what}", pytrace=False)
        time.sleep(POLL_S)


class TreeDaemon(DaemonProcess):
    """The harness's daemon, run from the source tree `tree` (the ``daemon-base`` mode)."""

    def __init__(self, tree: Path, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tree = tree


@contextmanager
def floor_releaser(state_dir: Path, name: str, out: Path, resize: bool) -> Iterator[None]:
    """floor_releaser.py running (its heartbeat fresh) for the block."""
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    flags = ["--resize"] if resize else []
    proc = subprocess.Popen(  # noqa: S603 - our interpreter and script, no shell
        [sys.executable, str(RELEASER), str(state_dir), name, str(out), *flags],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=PROJECT_ROOT,
    )
    heartbeat = state_dir / "heartbeat"
    try:
        wait_until("the floor releaser's heartbeat", lambda: heartbeat.exists() or dead(proc))
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, f"the floor releaser failed: {err.decode()[-2000:]}"


def dead(proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        pytest.fail("the floor releaser exited at start", pytrace=False)
    return False


@contextmanager
def releaser(
    mode: str, make_daemon: Callable[[str], DaemonProcess], state_dir: Path, name: str, out: Path
) -> Iterator[DaemonProcess | None]:
    """The mode's releaser running for the block: none, a floor, or the daemon."""
    if mode == "slurm":
        assert not (state_dir / "heartbeat").exists(), "a heartbeat: Slurm alone would hold"
        yield None
    elif mode.startswith("floor"):
        with floor_releaser(state_dir, name, out, resize=mode == "floor-resize"):
            yield None
    else:
        daemon = make_daemon(mode).start()
        try:
            yield daemon
        finally:
            daemon.stop()


def run_phase(
    phase: Phase,
    mode: str,
    cluster: LocalCluster,
    make_daemon: Callable[[str], DaemonProcess],
    workdir: Path,
) -> Outcome:
    """Submit the phase's stream in `mode`, wait until Slurm holds none of it, measure."""
    name = f"floor-{mode}"
    log_path = cluster.log_dir / "slurmctld.log"
    state_dir = cluster.state_dir / "adaptalloc"
    out = workdir / f"{name}-{time.monotonic_ns()}.released"
    submitter = Submitter(workdir, name)
    with releaser(mode, make_daemon, state_dir, name, out) as daemon:
        offset = log_path.stat().st_size
        reset_rpc_stats()
        if phase.burst:
            accepted = submitter.burst(phase.burst)
            achieved = phase.burst / accepted
        else:
            achieved = submitter.steady(phase.rate, phase.seconds)
        wait_until(f"{mode}: every job released", lambda: held(name) == 0)
        rpcs = rpc_stats()
        load = os.getloadavg()[0]
        own_times = releaser_times(daemon, out)
        batches = daemon.events("batch") if daemon is not None else []
        timelines = job_timelines(daemon)
    # The next mode starts on an empty queue (cancelling is quicker than letting them run).
    scancel(name)
    wait_until(f"{mode}: its jobs to leave the queue", lambda: queued(name) == 0)
    outcome = measure(
        phase, mode, submitter, log_times(log_path, offset), own_times, achieved, load, rpcs
    )
    outcome.batches = batches
    outcome.parts = parts(submitter, log_times(log_path, offset), timelines)
    return outcome


def job_timelines(daemon: DaemonProcess | None) -> dict[int, dict[str, float]]:
    """Job -> the ``timeline`` of its decision event (plugin/daemon/loop.py), daemon only."""
    if daemon is None:
        return {}
    return {
        e["job_id"]: e["timeline"]
        for e in daemon.events("decision")
        if e.get("status") == "released" and isinstance(e.get("timeline"), dict)
    }


#: The points of a held job's way, in order: slurmctld created it (its log), the sweep that
#: first found it held began its queue read, that read returned, the batch was decided,
#: slurmctld released it (its log). Each part of the latency is the time between two.
PARTS = ("created", "read", "seen", "decided", "released")


def parts(
    submitter: Submitter, times: LogTimes, timelines: dict[int, dict[str, float]]
) -> dict[str, npt.NDArray[np.float64]]:
    """Per point of PARTS, each timed job's seconds after its sbatch returned."""
    rows = []
    for job, line in sorted(timelines.items()):
        if job not in submitter.done or job not in times.submitted or job not in times.released:
            continue
        points = {"created": times.submitted[job][0], "released": times.released[job][0], **line}
        woke = points.get("woke", math.nan)  # absent: a periodic sweep found it
        rows.append([points[p] - submitter.done[job] for p in PARTS] + [woke - points["created"]])
    table = np.array(rows, dtype=float).reshape(-1, len(PARTS) + 1)
    out = {p: table[:, i] for i, p in enumerate(PARTS)}
    out["woke_after_created"] = table[:, -1]
    return out


def releaser_times(daemon: DaemonProcess | None, out: Path) -> dict[int, float]:
    """Job -> when the releaser's update returned, by its own account."""
    if daemon is not None:
        return {
            e["job_id"]: e["released_at"]
            for e in daemon.events("decision")
            if e.get("status") == "released"
        }
    if not out.exists():
        return {}
    return {int(j): float(t) for j, t in (line.split() for line in out.read_text().splitlines())}


def measure(
    phase: Phase,
    mode: str,
    submitter: Submitter,
    times: LogTimes,
    own_times: dict[int, float],
    achieved: float,
    load: float,
    rpcs: dict[str, tuple[int, float]],
) -> Outcome:
    """The outcome; asserts each held job was released exactly once, and none in `slurm`."""
    jobs = sorted(submitter.done)
    missing = [j for j in jobs if j not in times.submitted]
    assert not missing, f"{mode}: no submit line in slurmctld's log for {missing[:5]}"
    held_jobs = [j for j in jobs if times.submitted[j][1] == 0]
    if mode == "slurm":
        assert not held_jobs, f"Slurm alone held {len(held_jobs)} jobs"
    counts = Counter({j: len(times.released.get(j, [])) for j in held_jobs})
    assert all(c == 1 for c in counts.values()), f"{mode}: released other than once: {counts}"
    eligible = {j: times.released[j][0] if j in counts else times.submitted[j][0] for j in jobs}
    outcome = Outcome(
        mode=mode,
        achieved=achieved,
        eligible=np.array([eligible[j] - submitter.done[j] for j in jobs]),
        own=np.array([own_times[j] - submitter.done[j] for j in held_jobs if j in own_times]),
        sbatch=np.array([submitter.took[j] for j in jobs]),
        not_held=len(jobs) - len(held_jobs),
        timed_out=submitter.timed_out,
        load=load,
        rpcs=rpcs,
    )
    outcome.ctld_update = np.array([u for j in jobs for u in times.updates.get(j, [])])
    if phase.burst:
        outcome.accepted_s = max(submitter.done.values()) - submitter.began
        outcome.last_eligible_s = max(eligible.values()) - submitter.began
    return outcome


def ms(values: npt.NDArray[np.float64], *qs: int) -> str:
    if not values.size:
        return "-"
    return " / ".join(f"{np.percentile(values, q) * 1000:.0f}" for q in qs)


def latency_table(results: dict[Phase, dict[str, Outcome]]) -> Table:
    view = Table(
        title="sbatch returned -> eligible, ms (slurmctld's log; jobs run `true` once eligible)"
        "; one run each, modes interleaved per phase; load = 1-min load average, this 2-core"
        f" box shared with other work; {mode_note(FULL)}"
    )
    for column in (
        "phase",
        "mode",
        "achieved /s",
        "p50 / p95 / p99",
        "own clock p50/p95/p99",
        "sbatch call p50/p99",
        f"slurmctld update RPC p50/p99, >= {STALLED_S:g} s",
        "not held",
        "load",
    ):
        view.add_column(column, justify="left" if column in ("phase", "mode") else "right")
    for phase, by_mode in results.items():
        if phase.burst:
            continue
        for mode, o in by_mode.items():
            view.add_row(
                phase.name,
                mode,
                f"{o.achieved:.1f}",
                ms(o.eligible, 50, 95, 99),
                ms(o.own, 50, 95, 99),
                ms(o.sbatch, 50, 99),
                f"{ms(o.ctld_update, 50, 99)}, {int((o.ctld_update >= STALLED_S).sum())}",
                str(o.not_held),
                f"{o.load:.2f}",
            )
    return view


def burst_table(phase: Phase, by_mode: dict[str, Outcome]) -> Table:
    base = by_mode["slurm"].accepted_s
    view = Table(
        title=f"burst of {phase.burst:,} from 4 submitters: the last job eligible, against Slurm"
        f" alone's accept time in the same run ({base:.1f} s); aim <= 1.1x"
    )
    for column in ("mode", "accepted in", "last eligible after", "ratio", "p50/p99 ms", "load"):
        view.add_column(column, justify="left" if column == "mode" else "right")
    for mode, o in by_mode.items():
        view.add_row(
            mode,
            f"{o.accepted_s:.1f} s",
            f"{o.last_eligible_s:.1f} s",
            f"{o.last_eligible_s / base:.2f}x",
            ms(o.eligible, 50, 99),
            f"{o.load:.2f}",
        )
    return view


def rpc_table(phase: Phase, by_mode: dict[str, Outcome]) -> Table:
    """slurmctld's RPCs (sdiag) in one phase, per mode: count per job and mean ms."""
    view = Table(title=f"slurmctld RPCs (sdiag) in the {phase.name} phase: count per job, mean ms")
    view.add_column("message type")
    for mode in by_mode:
        view.add_column(mode, justify="right")
    names = sorted({n for o in by_mode.values() for n in o.rpcs})
    for name in names:
        cells = []
        for o in by_mode.values():
            count, mean = o.rpcs.get(name, (0, 0.0))
            jobs = max(o.eligible.size, 1)
            cells.append(f"{count / jobs:.2f} x {mean:.1f}" if count else "")
        view.add_row(name, *cells)
    return view


#: The batch event's Slurm timers that run before the batch (the sweep's queue read), not in
#: its total_ms.
READ_TIMERS = frozenset({"squeue", "admin_comment", "squeue_json"})


def own_ms_per_job(batches: list[dict[str, Any]]) -> float:
    """The daemon's own time per job: its batches' total_ms less the Slurm calls made in
    them (cluster reads, updates), over the jobs they handled: deciding, the journal,
    recording and logging, in ms per job (CPU and, under load, waiting for a core)."""
    jobs = sum(b["jobs"] for b in batches)
    own = sum(
        b["total_ms"] - sum(v for k, v in b["slurm_ms"].items() if k not in READ_TIMERS)
        for b in batches
    )
    return own / jobs if jobs else math.nan


def cycle_table(by_phase: dict[Phase, Outcome], mode: str) -> Table:
    """Where the daemon's time goes, per phase: its batches' parts (the daemon's own log)."""
    view = Table(
        title=f"{mode}: the daemon's cycles (its batch events): ms p50 / p99; read = its libslurm"
        " queue read, before the batch; update = the batch's slurm_update_job calls (4 threads);"
        " own = the batches' time outside Slurm calls per job (own_ms_per_job)"
    )
    for column in (
        "phase",
        "batches",
        "jobs/batch p50 / max",
        "read",
        "decide",
        "update",
        "batch total",
        "own ms/job",
    ):
        view.add_column(column, justify="left" if column == "phase" else "right")
    for phase, o in by_phase.items():
        if not o.batches:
            continue
        parts = {
            "read": [b["slurm_ms"].get("squeue", 0.0) for b in o.batches],
            "decide": [b["decide_ms"] for b in o.batches],
            "update": [b["slurm_ms"].get("update", 0.0) for b in o.batches],
            "total": [b["total_ms"] for b in o.batches],
        }
        jobs = [b["jobs"] for b in o.batches]
        view.add_row(
            phase.name,
            str(len(o.batches)),
            f"{int(np.median(jobs))} / {max(jobs)}",
            *(" / ".join(f"{np.percentile(v, q):.0f}" for q in (50, 99)) for v in parts.values()),
            f"{own_ms_per_job(o.batches):.2f}",
        )
    return view


def parts_table(by_phase: dict[Phase, Outcome], mode: str) -> Table:
    """The daemon's jobs' latency in parts (module docstring of plugin/daemon/loop.py):
    each part's p50 / p99, and its mean over the slowest 5% of the jobs (the tail); of the
    tail, how many a periodic sweep found (no wake-up before it) and how many a wake-up 0.1 s
    or more after their creation (a later job's spool line: their own wake-up's sweeps,
    FOLLOW_UP_S included, did not find them held)."""
    view = Table(
        title=f"{mode}: the daemon's held jobs, sbatch returned -> eligible in parts (slurmctld's"
        " log, the daemon's decision timelines), ms p50 / p99 | mean over the slowest 5%"
    )
    names = (
        "jobs",
        "created -> sweep read",
        "read",
        "decide",
        "decided -> released",
        "total",
        "tail found by: periodic sweep / a wake ≥ 0.1 s after its creation",
    )
    for column in ("phase", *names):
        view.add_column(column, justify="left" if column == "phase" else "right")
    for phase, o in by_phase.items():
        if not o.parts or not o.parts["released"].size:
            continue
        points = [o.parts[p] for p in PARTS]
        spans = [b - a for a, b in itertools.pairwise(points)] + [o.parts["released"]]
        total = o.parts["released"]
        tail = total >= np.percentile(total, 95)
        cells = [
            f"{np.percentile(v, 50) * 1000:.0f} / {np.percentile(v, 99) * 1000:.0f}"
            f" | {v[tail].mean() * 1000:.0f}"
            for v in spans
        ]
        woke = o.parts["woke_after_created"][tail]
        late = int(np.count_nonzero(woke >= 0.1))
        found = f"{int(np.count_nonzero(np.isnan(woke)))} / {late} of {int(tail.sum())}"
        view.add_row(phase.name, str(total.size), *cells, found)
    return view


def test_release_floor(
    local_cluster: LocalCluster,
    daemon_factory: Callable[..., DaemonProcess],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if import_binding() is None:
        pytest.skip("the libslurm binding is not built (deploy/setup.sh)")
    url, client = bench_store()
    stop_testbed_daemon(local_cluster)

    def make_daemon(mode: str) -> DaemonProcess:
        before = {
            "daemon-noprefetch": "prefetch_cluster = false\n",
            "daemon-onefollowup": "follow_ups = 1\n",
            "daemon-before": "follow_ups = 1\nstraggler_s = 0\n",
        }.get(mode, "")
        config = f'{before}max_hold_s = 600.0\n[slurm]\nbackend = "libslurm"\n'
        if mode == "daemon-base":
            if not BASE_TREE:
                pytest.fail("daemon-base needs ADAPTALLOC_BENCH_BASE_TREE", pytrace=False)
            return TreeDaemon(
                Path(BASE_TREE), local_cluster, tmp_path, url, config, None, ("--redis-url", url)
            )
        return daemon_factory(config=config, args=("--redis-url", url))

    results: dict[Phase, dict[str, Outcome]] = {}
    try:
        for phase in PHASES:
            results[phase] = {
                mode: run_phase(phase, mode, local_cluster, make_daemon, tmp_path) for mode in MODES
            }
    finally:
        for mode in MODES:
            scancel(f"floor-{mode}")
        client.flushdb()
    tables = [latency_table(results)]
    for phase, by_mode in results.items():
        if phase.burst and "slurm" in by_mode:  # the ratio is to Slurm alone's
            tables.append(burst_table(phase, by_mode))
    steady = next(p for p in PHASES if p.rate == RATE_PER_S)
    tables.append(rpc_table(steady, results[steady]))
    for mode in (m for m in MODES if m.startswith("daemon")):
        daemon = {p: by_mode[mode] for p, by_mode in results.items()}
        tables += [cycle_table(daemon, mode), parts_table(daemon, mode)]
    with capsys.disabled():
        console = Console(width=150)
        for table in tables:
            console.print(table)
    record(
        "release-floor",
        title="Release latency against the floor",
        source=__file__,
        full=FULL,
        tables=tables,
        notes=[
            "Modes interleaved per phase on the local testbed (8 virtual nodes on this "
            "machine): slurm = Slurm alone (nothing held), floor = the least any releaser "
            "must do (floor_releaser.py: one release update per held job, no policy), "
            "daemon = adaptalloc's daemon with the libslurm backend.",
            "Latency is sbatch's return to eligible by slurmctld's own log; Slurm alone's is "
            "negative (eligible before sbatch's reply arrives). One run per figure: the "
            "load average beside each is part of the answer.",
            "Aims: p99 <= 250 ms at 50 jobs/s; a burst's last job eligible within 1.1x of "
            "Slurm alone's accept time.",
        ],
    )
