"""Submitting to the testbed's Slurm for the latency benchmarks (test_release_latency.py,
test_release_floor.py): sbatch at a steady rate or in a burst, timed, and the queue's held jobs."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from integration.testbed import scratch_url

from plugin.appkey import AppKey
from plugin.learning.importers import import_csv
from plugin.learning.learner import refit_app
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

#: The benchmarks' own Redis database: a long benchmark must not share db 15 with tests that
#: flush it.
BENCH_DB = 14
#: The application the benchmarks' jobs belong to, and the real study its curve comes from.
BENCH_APP = AppKey.parse("bench-lu")
BENCH_STUDY = Path(__file__).resolve().parents[1] / "data" / "scaling" / "lan_thesis_npb_lu_W.csv"
#: Threads submitting at once in a burst.
SUBMITTERS = 4
#: Threads that keep the steady rate (one sbatch takes longer than 1/rate here).
PACERS = 8
#: Every job's own time limit: the policy shortens it with the curve's prediction, so the
#: daemon's kill guard watches the released jobs and reads the queue (``squeue --json``) every
#: GUARD_INTERVAL_S, as it does on a cluster whose users give limits (plugin/daemon/guard.py).
USER_LIMIT_MIN = 10
#: How long one sbatch may take before the benchmark counts it as not accepted.
SBATCH_TIMEOUT_S = 60


class Submitter:
    """sbatch as an argument list; remembers each job's id and when sbatch returned."""

    def __init__(
        self,
        workdir: Path,
        name: str = "bench-daemon",
        stay: bool = False,
        account: str | None = None,
    ) -> None:
        """`stay`: each job begins an hour ahead, so it stays pending once released.
        `account`: charge the jobs to it (default: the submitter's default account)."""
        self.workdir = workdir
        self.name = name
        self.stay = stay
        self.account = account
        self.done: dict[int, float] = {}
        #: Seconds each sbatch call took (slurmctld's accept, job_submit.lua's hold included).
        self.took: dict[int, float] = {}
        #: sbatch calls that did not return within SBATCH_TIMEOUT_S (slurmctld too busy to
        #: answer; the job may still have been created): counted, not fatal.
        self.timed_out = 0
        self.lock = threading.Lock()

    def submit(self) -> int | None:
        called = time.time()
        try:
            out = self._sbatch()
        except subprocess.TimeoutExpired:
            with self.lock:
                self.timed_out += 1
            return None
        job = int(out.strip().split(";", 1)[0])
        returned = time.time()
        with self.lock:
            self.done[job] = returned
            self.took[job] = returned - called
        return job

    def _sbatch(self) -> str:
        return subprocess.run(  # noqa: S603 - fixed argument list, no shell
            [  # noqa: S607 - Slurm's client from PATH
                "sbatch",
                "--parsable",
                "--nodes=1-2",
                f"--job-name={self.name}",
                "--comment=adaptalloc:v1 app=bench-lu",
                f"--time={USER_LIMIT_MIN}",
                *(["--begin=now+3600"] if self.stay else []),
                *([f"--account={self.account}"] if self.account else []),
                "--output=/dev/null",
                f"--chdir={self.workdir}",
                "--wrap",
                "true",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=SBATCH_TIMEOUT_S,
        ).stdout

    def burst(self, count: int) -> float:
        """`count` submissions from SUBMITTERS threads at once; seconds until the last returned."""
        began = time.time()
        threads = [
            threading.Thread(target=lambda: [self.submit() for _ in range(count // SUBMITTERS)])
            for _ in range(SUBMITTERS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.began = began
        return max(self.done.values()) - began

    def steady(self, rate: float, seconds: float) -> float:
        """Submission k at start + k/rate, for `seconds`; the rate achieved (jobs/s)."""
        total = int(rate * seconds)
        counter = iter(range(total))
        lock = threading.Lock()
        start = time.monotonic()

        def pace() -> None:
            while True:
                with lock:
                    k = next(counter, None)
                if k is None:
                    return
                delay = start + k / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                self.submit()

        threads = [threading.Thread(target=pace) for _ in range(PACERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return total / (time.monotonic() - start)


def scancel(name: str) -> None:
    subprocess.run(  # noqa: S603 - fixed argument list, no shell
        ["scancel", f"--name={name}"],  # noqa: S607
        check=False,
        capture_output=True,
        timeout=180,
    )


def held(name: str) -> int:
    """How many of the jobs called `name` Slurm still holds (pending at priority 0)."""
    out = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        ["squeue", "--noheader", f"--name={name}", "--states=PENDING", "--format=%Q"],  # noqa: S607
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return sum(1 for line in out.split() if line.strip() == "0")


def bench_store() -> tuple[str, Any]:
    """(URL, client) of BENCH_DB, emptied, holding BENCH_APP's curve fitted from BENCH_STUDY."""
    url = scratch_url(BENCH_DB)
    client = connect(url)
    client.flushdb()
    store = CurveStore(client)
    import_csv(store, BENCH_STUDY, BENCH_APP)
    assert refit_app(store, BENCH_APP).status == "written"
    return url, client
