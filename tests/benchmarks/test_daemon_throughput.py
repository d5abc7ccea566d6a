"""The daemon on the local cluster, side by side in one run: a steady stream and a burst.

* steady: 20 moldable submissions per second for 30 s; decision latency held -> released,
  p50 and p99, as the submitter sees it (sbatch returned -> the daemon's release) and as the
  daemon measures it (its ``latency_s``); aim: p99 under 1 s;
* burst: 1,000 moldable submissions from 4 submitters at once; the time Slurm took to accept
  them against the time until the daemon released the last one; aim: within 1.5x;
* the daemon's memory (VmRSS now, VmHWM peak) after each phase.

Every job is of an app with a curve (bench-lu: NPB LU's), so each goes the whole way:
curve read, policy, its own resize line, comment, release. Only correctness is asserted
(each job released exactly once, by slurmctld's log); the figures are printed, machines
here are shared.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from integration.daemon_harness import DaemonProcess
from integration.testbed import LocalCluster, SlurmCLI, scratch_url
from rich.console import Console
from rich.table import Table

from plugin.appkey import AppKey
from plugin.learning.importers import import_csv
from plugin.learning.learner import refit_app
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

pytestmark = [pytest.mark.benchmark, pytest.mark.integration, pytest.mark.slow]

DATA = Path(__file__).resolve().parents[1] / "data" / "scaling"
RATE_PER_S = 20
STEADY_S = 30
BURST = 1000
SUBMITTERS = 4
#: Its own Redis database: a long benchmark must not share db 15 with tests that flush it.
BENCH_DB = 14
RELEASE_LINE = re.compile(r"_release_job_rec: release hold on JobId=(\d+) ")


class Submitter:
    """sbatch as an argument list; remembers each job's id and when sbatch returned."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.done: dict[int, float] = {}
        self.lock = threading.Lock()

    def submit(self) -> int:
        out = subprocess.run(  # noqa: S603 - fixed argument list, no shell
            [  # noqa: S607 - Slurm's client from PATH
                "sbatch",
                "--parsable",
                "--nodes=1-2",
                "--job-name=bench-daemon",
                "--comment=adaptalloc:v1 app=bench-lu",
                "--output=/dev/null",
                f"--chdir={self.workdir}",
                "--wrap",
                "true",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        job = int(out.strip().split(";", 1)[0])
        with self.lock:
            self.done[job] = time.time()
        return job


def rss_kib(pid: int) -> tuple[int, int]:
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def releases(daemon: DaemonProcess, jobs: set[int], timeout: float) -> dict[int, dict[str, Any]]:
    """Wait until the daemon logged a released decision for every job; job -> event."""
    found: dict[int, dict[str, Any]] = {}

    def all_released() -> bool:
        for event in daemon.events("decision"):
            if event.get("job_id") in jobs and event.get("status") == "released":
                found[event["job_id"]] = event
        return len(found) == len(jobs)

    daemon.wait_for(f"the daemon to release {len(jobs)} jobs", all_released, timeout)
    return found


def released_once(cluster: LocalCluster, offset: int, jobs: set[int]) -> bool:
    text = (cluster.log_dir / "slurmctld.log").read_bytes()[offset:].decode("utf-8", "replace")
    counts = Counter(int(m.group(1)) for m in RELEASE_LINE.finditer(text))
    return all(counts[j] == 1 for j in jobs)


def test_daemon_keeps_pace(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    daemon_factory: Callable[..., DaemonProcess],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = scratch_url(BENCH_DB)
    client = connect(url)
    client.flushdb()
    store = CurveStore(client)
    import_csv(store, DATA / "lan_thesis_npb_lu_W.csv", AppKey.parse("bench-lu"))
    assert refit_app(store, AppKey.parse("bench-lu")).status == "written"
    log_offset = (local_cluster.log_dir / "slurmctld.log").stat().st_size
    daemon = daemon_factory(config="max_hold_s = 600.0\n", args=("--redis-url", url)).start()
    idle_rss = rss_kib(daemon.pid)
    all_jobs: set[int] = set()
    try:
        # --- steady: RATE_PER_S for STEADY_S seconds ---------------------------------------
        steady = Submitter(tmp_path)
        start = time.monotonic()
        for k in range(RATE_PER_S * STEADY_S):
            delay = start + k / RATE_PER_S - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            steady.submit()
        steady_jobs = set(steady.done)
        all_jobs |= steady_jobs
        events = releases(daemon, steady_jobs, 300)
        seen = np.array([events[j]["released_at"] - steady.done[j] for j in steady_jobs])
        own = np.array([events[j]["latency_s"] for j in steady_jobs if events[j]["latency_s"]])
        steady_rss = rss_kib(daemon.pid)

        # --- burst: BURST submissions from SUBMITTERS threads at once ------------------------
        burst = Submitter(tmp_path)
        began = time.time()
        threads = [
            threading.Thread(target=lambda: [burst.submit() for _ in range(BURST // SUBMITTERS)])
            for _ in range(SUBMITTERS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        accepted = max(burst.done.values()) - began
        burst_jobs = set(burst.done)
        all_jobs |= burst_jobs
        events = releases(daemon, burst_jobs, 600)
        last_release = max(events[j]["released_at"] for j in burst_jobs) - began
        burst_rss = rss_kib(daemon.pid)
        batches = [e["jobs"] for e in daemon.events("batch")]
    finally:
        daemon.stop()
        subprocess.run(
            ["scancel", "--name=bench-daemon"],  # noqa: S607
            check=False,
            capture_output=True,
            timeout=120,
        )
    client.flushdb()
    assert len(steady_jobs) == RATE_PER_S * STEADY_S
    assert len(burst_jobs) == BURST
    assert released_once(local_cluster, log_offset, all_jobs)

    view = Table(title="adaptalloc daemon on the local cluster (8 nodes, this machine)")
    view.add_column("measure")
    view.add_column("value", justify="right")
    view.add_column("aim", justify="right")
    view.add_row(
        f"steady {RATE_PER_S}/s for {STEADY_S} s: latency p50 / p99 (submitter)",
        f"{np.percentile(seen, 50):.2f} s / {np.percentile(seen, 99):.2f} s",
        "p99 < 1 s",
    )
    if own.size:
        view.add_row(
            "  same, as the daemon measures it (held since, to released)",
            f"{np.percentile(own, 50):.2f} s / {np.percentile(own, 99):.2f} s",
            "",
        )
    view.add_row(f"burst of {BURST:,}: Slurm accepted them in", f"{accepted:.1f} s", "")
    view.add_row(
        "  the daemon released the last one after",
        f"{last_release:.1f} s ({last_release / accepted:.2f}x)",
        "<= 1.5x",
    )
    view.add_row(
        "  batches (jobs per batch: median / max)",
        f"{int(np.median(batches))} / {max(batches)}",
        "",
    )
    view.add_row(
        "daemon memory: idle / after steady / after burst (RSS; peak)",
        f"{idle_rss[0] / 1024:.0f} / {steady_rss[0] / 1024:.0f} / "
        f"{burst_rss[0] / 1024:.0f} MiB; {burst_rss[1] / 1024:.0f} MiB",
        "",
    )
    with capsys.disabled():
        Console(width=120).print(view)
