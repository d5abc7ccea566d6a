"""Submission-to-release latency of the daemon on the local cluster, side by side in one run.

* baseline: a burst of ``BURST`` moldable submissions from 4 submitters with *no* daemon
  (no heartbeat, so job_submit.lua holds nothing): Slurm's own accept time, the yardstick;
* advise (after the daemon's phases, so they run as before): the same burst with a daemon
  in advise mode (``[daemon] mode = "advise"``: the hook holds nothing, reads the modes file
  and appends one spool line per job), then the burst with no daemon once more, right after
  on a slurmctld that remembers as many jobs: the sbatch call's time p50/p99 and the burst's
  accept time of all three (the two no-daemon bursts show the noise), and how many of the
  advise burst's jobs got their advise record;
* light: ``LIGHT_RATE_PER_S`` submissions per second for ``LIGHT_S`` s, the latency the
  daemon adds while it keeps up (wake-up, one sweep, the batch's writes);
* steady: ``RATE_PER_S`` moldable submissions per second for ``STEADY_S`` s; latency from
  sbatch returned to the daemon's release, p50 and p99 (the submitter's view), and the
  daemon's own ``latency_s``; aim: p99 <= 250 ms at 50 jobs/s;
* burst: the same ``BURST`` submissions with the daemon running; the time until the daemon
  released the last one against the baseline's accept time; aim: within 1.1x;
* the daemon's memory (VmRSS now, VmHWM peak) after each phase.

Run once per writer backend, back to back, each with its own Slurm-alone baseline:
``cli`` (``scontrol``: a resize line, a comment update and a release per job), ``cli-sizer``
(the same, the resizes run as the testbed's sizing user: what a cluster that enforces limits
pays, docs/admin/index.md "The daemon's account") and ``libslurm`` (one update RPC per job,
plugin/slurm/libslurm_backend.py; skipped when the binding is not built).
``ADAPTALLOC_BENCH_BACKENDS=libslurm`` runs one. slurmctld's own RPC
statistics (``sdiag``, reset before the steady phase) are printed per job beside the
latencies, with the daemon's CPU time per job.

Quick mode (the default, what CI runs; about a minute here): the ``libslurm`` backend alone
(``cli`` when the binding is not built), light 10/s for 8 s, steady 50/s for 10 s, a burst
of 500. The full run (``ADAPTALLOC_FULL_BENCH=1``, ~8 minutes here): every backend, light
15 s, steady 20 s, a burst of 1,000. The aimed-for 5,000-job burst is
``ADAPTALLOC_BENCH_BURST=5000 .venv/bin/python -m pytest
tests/benchmarks/test_release_latency.py -m benchmark --slow -s``. The docs' page
(docs/benchmarks/release-latency.md) is rendered from the last run (results.py).

Every job is of an app with a curve (bench-lu: NPB LU's, tests/data/scaling), so each goes
the whole way: curve read, policy, resize, comment, release. Only correctness is asserted
(each job released exactly once, by slurmctld's log); the figures are printed (measured on
this machine, shared with other work: compare runs made back to back).
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from integration.daemon_harness import DaemonProcess, stop_testbed_daemon
from integration.sdiag import reset_rpc_stats, rpc_stats
from integration.testbed import LocalCluster, SlurmCLI
from rich.console import Console
from rich.table import Table

from plugin.slurm.libslurm_backend import import_binding

from .results import full_run, mode_note, record
from .slurm_load import SBATCH_TIMEOUT_S, Submitter, bench_store, held, scancel

pytestmark = [pytest.mark.benchmark, pytest.mark.integration, pytest.mark.slow]

FULL = full_run()
RATE_PER_S = 50
STEADY_S = 20 if FULL else 10
#: A light stream first: the latency the daemon adds while it keeps up (the wake, one cycle).
LIGHT_RATE_PER_S = 10
LIGHT_S = 15 if FULL else 8
#: The aimed-for burst is 5,000; 1,000 keeps the full run to minutes, 500 the quick mode.
BURST = int(os.environ.get("ADAPTALLOC_BENCH_BURST", "1000" if FULL else "500"))
#: "run" (default): the jobs run ``true`` once released, so slurmctld also starts and completes
#: 50 jobs/s, as a cluster at that rate would. "stay": each job has a begin time an hour
#: ahead, so it stays pending once released: no job starts or completions, the daemon's own
#: path alone (a synthetic set-up, labelled so where the figures are printed).
JOBS = os.environ.get("ADAPTALLOC_BENCH_JOBS", "run")
#: Seconds between the benchmark's looks at the queue while it waits for releases: each is a
#: full ``squeue`` (REQUEST_JOB_INFO) that slurmctld serves beside the daemon's RPCs, so
#: seldom (the latencies come from the daemon's release times, not from these looks).
POLL_S = 2.0
#: "libslurm-writes" is libslurm's writes with the ``squeue`` queue read (before the libslurm
#: read); "libslurm" reads through libslurm too (after).
WRITERS = tuple(
    os.environ.get(
        "ADAPTALLOC_BENCH_BACKENDS",
        "cli,cli-sizer,libslurm-writes,libslurm" if FULL else "libslurm",
    ).split(",")
)
#: The ``scontrol`` writer with ``[daemon] sizing_user`` (up.sh makes the testbed's; the
#: jobs of its row go to the account it coordinates, ADAPTALLOC_SIZED_ACCOUNT).
SIZER = "cli-sizer"
RELEASE_LINE = re.compile(r"_release_job_rec: release hold on JobId=(\d+) ")


def rss_kib(pid: int) -> tuple[int, int]:
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by process `pid` and its reaped children
    (the daemon's scontrol/squeue processes)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def releases(
    daemon: DaemonProcess, jobs: set[int], name: str, timeout: float
) -> dict[int, dict[str, Any]]:
    """Wait until Slurm holds none of `jobs` (all released, or never held: submitted while
    the daemon was unhealthy); job -> the daemon's released decision."""
    found: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    while held(name):
        if time.monotonic() > deadline:
            pytest.fail(f"the daemon did not release {len(jobs)} jobs within {timeout:.0f} s")
        time.sleep(POLL_S)
    for event in daemon.events("decision"):
        if event.get("job_id") in jobs and event.get("status") == "released":
            found[event["job_id"]] = event
    return found


def advised(daemon: DaemonProcess, jobs: set[int], timeout: float) -> int:
    """Wait (up to `timeout`) until every one of `jobs` has its advise record; how many do."""
    deadline = time.monotonic() + timeout
    while True:
        found = {
            e["job_id"]
            for e in daemon.events("decision")
            if e.get("mode") == "advise" and e.get("job_id") in jobs
        }
        if found >= jobs or time.monotonic() > deadline:
            return len(found)
        time.sleep(POLL_S)


def ms(values: dict[int, float], q: float) -> str:
    return f"{np.percentile(list(values.values()), q) * 1000:.0f}"


def daemon_released(daemon: DaemonProcess) -> list[int]:
    return [e["job_id"] for e in daemon.events("decision") if e.get("status") == "released"]


def released_once(cluster: LocalCluster, offset: int, jobs: set[int]) -> bool:
    text = (cluster.log_dir / "slurmctld.log").read_bytes()[offset:].decode("utf-8", "replace")
    counts = Counter(int(m.group(1)) for m in RELEASE_LINE.finditer(text))
    return all(counts[j] == 1 for j in jobs)


@pytest.mark.parametrize("backend", WRITERS)
def test_release_latency(
    backend: str,
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    daemon_factory: Callable[..., DaemonProcess],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if backend.startswith("libslurm") and import_binding() is None:
        if FULL or "ADAPTALLOC_BENCH_BACKENDS" in os.environ:
            pytest.skip("the libslurm binding is not built (deploy/setup.sh)")
        backend = "cli"  # the quick mode measures the backend the daemon would use
    url, client = bench_store()
    writer = "cli" if backend == SIZER else backend
    sizer = local_cluster.env.get("ADAPTALLOC_SIZING_USER", "aasizer")
    sizing = f'sizing_user = "{sizer}"\n' if backend == SIZER else ""
    # The sizing user coordinates the testbed's user account only (up.sh): its jobs go there.
    account = local_cluster.env.get("ADAPTALLOC_SIZED_ACCOUNT") if backend == SIZER else None

    # --- baseline: the same burst, no daemon (no heartbeat: job_submit.lua holds nothing) ---
    stop_testbed_daemon(local_cluster)
    heartbeat = local_cluster.state_dir / "adaptalloc" / "heartbeat"
    assert not heartbeat.exists(), "a heartbeat without a daemon: jobs would be held"
    baseline = Submitter(tmp_path, "bench-base", stay=JOBS == "stay", account=account)
    try:
        slurm_accept = baseline.burst(BURST)
    finally:
        scancel("bench-base")
    assert len(baseline.done) + baseline.timed_out == BURST

    daemon = daemon_factory(
        config=f'max_hold_s = 600.0\n{sizing}[slurm]\nbackend = "{writer}"\n',
        args=("--redis-url", url),
    )

    log_offset = (local_cluster.log_dir / "slurmctld.log").stat().st_size
    daemon.start()
    assert daemon.events("daemon_started")[0]["backend"] == writer
    idle_rss = rss_kib(daemon.pid)
    all_jobs: set[int] = set()
    try:
        # --- light: LIGHT_RATE_PER_S for LIGHT_S seconds -------------------------------------
        light = Submitter(tmp_path, stay=JOBS == "stay", account=account)
        light_rate = light.steady(LIGHT_RATE_PER_S, LIGHT_S)
        light_jobs = set(light.done)
        all_jobs |= light_jobs
        events = releases(daemon, light_jobs, "bench-daemon", 300)
        light_unheld = len(light_jobs) - len(events)
        light_seen = np.array([e["released_at"] - light.done[j] for j, e in events.items()])

        # --- steady: RATE_PER_S for STEADY_S seconds ---------------------------------------
        steady = Submitter(tmp_path, stay=JOBS == "stay", account=account)
        reset_rpc_stats()
        cpu_before = cpu_s(daemon.pid)
        achieved = steady.steady(RATE_PER_S, STEADY_S)
        steady_jobs = set(steady.done)
        all_jobs |= steady_jobs
        events = releases(daemon, steady_jobs, "bench-daemon", 300)
        rpcs = rpc_stats()
        steady_cpu = cpu_s(daemon.pid) - cpu_before
        steady_unheld = len(steady_jobs) - len(events)
        seen = np.array([e["released_at"] - steady.done[j] for j, e in events.items()])
        own = np.array([e["latency_s"] for e in events.values() if e["latency_s"]])
        steady_rss = rss_kib(daemon.pid)

        # --- burst: BURST submissions from SUBMITTERS threads at once ------------------------
        burst = Submitter(tmp_path, stay=JOBS == "stay", account=account)
        accepted = burst.burst(BURST)
        burst_jobs = set(burst.done)
        all_jobs |= burst_jobs
        events = releases(daemon, burst_jobs, "bench-daemon", 600)
        burst_unheld = len(burst_jobs) - len(events)
        last_release = max(e["released_at"] for e in events.values()) - burst.began
        released_jobs = all_jobs & set(daemon_released(daemon))
        burst_rss = rss_kib(daemon.pid)
        batch_events = daemon.events("batch")
        batches = [e["jobs"] for e in batch_events]
        queue_reads = np.array([e["slurm_ms"].get("squeue", 0.0) for e in batch_events])
        guard_reads = np.array([e["read_ms"] for e in daemon.events("guard_tick")])
    finally:
        daemon.stop()
        scancel("bench-daemon")

    # --- advise: the same burst, a daemon in advise mode (it holds and changes nothing), then
    # no daemon again: the fair comparison is with that burst, made right after on a
    # slurmctld that remembers as many jobs (MinJobAge) ----------------------------------------
    adviser = daemon_factory(
        config=f'mode = "advise"\n{sizing}[slurm]\nbackend = "{writer}"\n',
        args=("--redis-url", url),
    )
    adviser.start()
    advise = Submitter(tmp_path, "bench-advise", stay=JOBS == "stay", account=account)
    try:
        advise_accept = advise.burst(BURST)
        advise_recorded = advised(adviser, set(advise.done), 300)
        advise_held = held("bench-advise")
    finally:
        adviser.stop()
        scancel("bench-advise")
    assert advise_held == 0, "advise mode held jobs"
    # No daemon again, after: how much the same burst's figures move from one burst to the next.
    after = Submitter(tmp_path, "bench-base", stay=JOBS == "stay", account=account)
    try:
        slurm_accept_after = after.burst(BURST)
    finally:
        scancel("bench-base")

    client.flushdb()
    assert len(steady_jobs) + steady.timed_out == RATE_PER_S * STEADY_S
    assert len(burst_jobs) + burst.timed_out == BURST
    assert released_once(local_cluster, log_offset, released_jobs)
    unhealthy = len(daemon.events("unhealthy"))

    jobs_note = "run once released" if JOBS == "run" else "stay pending once released (synthetic)"
    view = Table(
        title=f"adaptalloc release latency, writer backend {backend}, on the local cluster"
        f" (8 nodes, this machine); jobs {jobs_note}; {mode_note(FULL)}"
    )
    view.add_column("measure")
    view.add_column("value", justify="right")
    view.add_column("aim", justify="right")
    view.add_row(
        f"light {LIGHT_RATE_PER_S}/s for {LIGHT_S} s (achieved {light_rate:.1f}/s): "
        "p50 / p99 sbatch returned -> released",
        f"{np.percentile(light_seen, 50) * 1000:.0f} / "
        f"{np.percentile(light_seen, 99) * 1000:.0f} ms",
        "",
    )
    view.add_row(
        f"steady {RATE_PER_S}/s for {STEADY_S} s (achieved {achieved:.1f}/s): "
        "p50 / p99 sbatch returned -> released",
        f"{np.percentile(seen, 50) * 1000:.0f} / {np.percentile(seen, 99) * 1000:.0f} ms",
        "p99 <= 250 ms",
    )
    if own.size:
        view.add_row(
            "  same, as the daemon measures it (held since, to released)",
            f"{np.percentile(own, 50) * 1000:.0f} / {np.percentile(own, 99) * 1000:.0f} ms",
            "",
        )
    view.add_row(
        "  daemon CPU per steady job (its own + its Slurm commands')",
        f"{steady_cpu / len(steady_jobs) * 1000:.1f} ms",
        "",
    )
    view.add_row(
        f"burst of {BURST:,}, no adaptalloc: Slurm accepted them in", f"{slurm_accept:.1f} s", ""
    )
    view.add_row(
        "  advise mode (nothing held), then no daemon again: accepted in",
        f"{advise_accept:.1f} s; {slurm_accept_after:.1f} s",
        "as no daemon",
    )
    view.add_row(
        "  one sbatch call, p50 / p99: no daemon; advise; no daemon again",
        f"{ms(baseline.took, 50)} / {ms(baseline.took, 99)}; "
        f"{ms(advise.took, 50)} / {ms(advise.took, 99)}; "
        f"{ms(after.took, 50)} / {ms(after.took, 99)} ms",
        "as no daemon",
    )
    view.add_row(
        "  advise records written for the burst's jobs",
        f"{advise_recorded} of {len(advise.done)}",
        "all",
    )
    view.add_row("  with adaptalloc: Slurm accepted them in", f"{accepted:.1f} s", "")
    view.add_row(
        "  the daemon released the last one after",
        f"{last_release:.1f} s ({last_release / slurm_accept:.2f}x Slurm alone)",
        "<= 1.1x",
    )
    view.add_row(
        f"sbatch calls slurmctld did not answer within {SBATCH_TIMEOUT_S} s: "
        "burst alone / light / steady / burst",
        f"{baseline.timed_out} / {light.timed_out} / {steady.timed_out} / {burst.timed_out}",
        "0",
    )
    view.add_row(
        "jobs not held (submitted while the daemon was unhealthy): light / steady / burst",
        f"{light_unheld} / {steady_unheld} / {burst_unheld} ({unhealthy} unhealthy spells)",
        "0",
    )
    view.add_row(
        "  batches (jobs per batch: median / max)",
        f"{int(np.median(batches))} / {max(batches)}",
        "",
    )
    view.add_row(
        "  the queue read per batch (libslurm or squeue), p50 / p99 / max",
        f"{np.percentile(queue_reads, 50):.0f} / {np.percentile(queue_reads, 99):.0f} / "
        f"{queue_reads.max():.0f} ms",
        "",
    )
    view.add_row(
        "kill guard: queue reads (squeue --json, its own thread), count; p50 / max",
        f"{guard_reads.size}; {np.percentile(guard_reads, 50):.0f} / {guard_reads.max():.0f} ms"
        if guard_reads.size
        else "0",
        "",
    )
    view.add_row(
        "daemon memory: idle / after steady / after burst (RSS; peak)",
        f"{idle_rss[0] / 1024:.0f} / {steady_rss[0] / 1024:.0f} / "
        f"{burst_rss[0] / 1024:.0f} MiB; {burst_rss[1] / 1024:.0f} MiB",
        "",
    )
    rpc_view = Table(
        title=f"slurmctld RPCs (sdiag) during the steady phase, per job of its {len(steady_jobs)}"
        f" (the benchmark's own squeue, one every {POLL_S:g} s, included)"
    )
    for column in ("message type", "count", "per job", "mean ms", "total s"):
        rpc_view.add_column(column, justify="right" if column != "message type" else "left")
    for name, (count, mean_ms) in sorted(rpcs.items(), key=lambda kv: -kv[1][0] * kv[1][1]):
        rpc_view.add_row(
            name,
            str(count),
            f"{count / len(steady_jobs):.2f}",
            f"{mean_ms:.1f}",
            f"{count * mean_ms / 1000:.1f}",
        )
    with capsys.disabled():
        Console(width=130).print(view)
        Console(width=130).print(rpc_view)
    view.title = f"Latency, backend {backend}; jobs {jobs_note}"
    rpc_view.title = (
        f"slurmctld RPCs (sdiag) in the steady phase, per job of its {len(steady_jobs)}"
    )
    record(
        "release-latency",
        title="Release latency",
        source=__file__,
        full=FULL,
        tables=[view, rpc_view],
        notes=[
            "Synthetic load on the local testbed (8 virtual nodes on this machine, slurmctld "
            "sharing its cores with the daemon and the submitters): compare only figures of "
            "one run.",
            "Every job is of an app with a curve (bench-lu: NPB LU's real study), so each "
            "goes the whole way: curve read, policy, resize, comment, release.",
            "Aims: p99 <= 250 ms at 50 jobs/s; the burst released within 1.1x of Slurm's own "
            "accept time. Slurm alone's accept time is measured in the same run.",
        ],
        section=f"Backend {backend}",
    )
