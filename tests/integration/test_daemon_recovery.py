"""The daemon killed (SIGKILL) in the middle of a burst of 200 moldable jobs, then restarted:
every job is released exactly once, and none is lost.

"Exactly once" is checked three ways: slurmctld logs each hold release
(``_release_job_rec: release hold on JobId=X``) and each job has exactly one; each job's
admin_comment carries exactly one daemon record and no held marker; the decision stream has
exactly one entry per job (the journal finishes what the crash interrupted, the once-guard
keeps the recovered records single).
"""

from __future__ import annotations

import re
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plugin.daemon import marks
from plugin.store import keys

from .daemon_harness import DaemonProcess, job_fields, journal_kept_before_release
from .testbed import LocalCluster, SlurmCLI, SubmitJob

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BURST = 200
RELEASE_LINE = re.compile(r"_release_job_rec: release hold on JobId=(\d+) ")


def releases_logged(cluster: LocalCluster, since_offset: int) -> Counter[int]:
    text = (
        (cluster.log_dir / "slurmctld.log").read_bytes()[since_offset:].decode("utf-8", "replace")
    )
    return Counter(int(m.group(1)) for m in RELEASE_LINE.finditer(text))


def test_killed_mid_burst_every_job_is_released_exactly_once(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Callable[..., DaemonProcess],
    redis_client: Any,
) -> None:
    log_offset = (local_cluster.log_dir / "slurmctld.log").stat().st_size
    first = daemon_factory().start()
    jobs: list[int] = []
    for k in range(BURST):
        jobs.append(submit_job("--nodes=1-2", "--comment=adaptalloc:v1 app=burst", wrap="true"))
        if k == BURST // 2:
            first.kill()  # mid-burst, mid-batch; its heartbeat stays fresh for a while
    second = daemon_factory().start()

    def all_released() -> bool:
        queue = {j["job_id"]: j for j in slurm.json("squeue").get("jobs", [])}
        return not any(
            q.get("job_state") == "PENDING" and q.get("priority") == 0
            for q in (queue.get(j) for j in jobs)
            if q is not None
        )

    slurm.wait_for("every job of the burst to be released", all_released, 240)
    second.stop()

    # slurmctld: one release per job, none missing
    released = releases_logged(local_cluster, log_offset)
    assert sorted(released[j] for j in jobs) == [1] * BURST
    # admin_comment: one record each, no marker left (sacct keeps them after the jobs end)
    comments: dict[int, str] = {}
    for job in jobs:
        fields = job_fields(slurm, job)
        if fields:
            comments[job] = str(fields.get("admin_comment") or "")
    missing = [j for j in jobs if j not in comments]
    for job in missing:
        record = slurm.wait_sacct_job(job, {"COMPLETED", "CANCELLED", "FAILED"})
        comments[job] = str(record["comment"]["administrator"] or "")
    for job, text in comments.items():
        words = text.split()
        assert marks.HELD not in words, (job, text)
        assert sum(w.rstrip(";") in marks.RECORDS for w in words) == 1, (job, text)
    # the decision stream: exactly one entry per job
    entries = redis_client.xrange(keys.DECISIONS, "-", "+")
    per_job = Counter(int(fields["job_id"]) for _, fields in entries)
    assert sorted(per_job[j] for j in jobs) == [1] * BURST
    # the second daemon found jobs held while the first was dead
    assert second.events("recovery")[0]["held"] + second.events("recovery")[0]["to_finish"] > 0


def test_a_crash_between_the_record_and_the_release_is_finished_from_the_journal(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Callable[..., DaemonProcess],
    redis_client: Any,
) -> None:
    """The narrowest window: the record replaced the held marker, the release never came.

    The fast admin-comment read sees no marker on such a job; the journal must still finish
    it (one release, the journaled decision, recorded once), not leave it held for ever.
    """
    first = daemon_factory().start()
    first.signal(signal.SIGSTOP)  # its heartbeat stays fresh: job_submit.lua holds the jobs
    jobs = [
        submit_job("--nodes=1-2", "--comment=adaptalloc:v1 app=window", wrap="true")
        for _ in range(3)
    ]
    first.kill()
    for job in jobs:
        fields = job_fields(slurm, job)
        assert fields.get("priority") == 0
        assert marks.is_held(fields.get("admin_comment"))
    reason = "journaled by a daemon that crashed before the release"
    journal_kept_before_release(slurm, jobs, first.state_dir, "window", reason)
    log_offset = (local_cluster.log_dir / "slurmctld.log").stat().st_size

    second = daemon_factory().start()
    slurm.wait_for(
        "the journaled jobs to be released",
        lambda: not any(job_fields(slurm, job).get("priority") == 0 for job in jobs),
        60,
    )
    assert second.stop() == 0

    assert second.events("recovery")[0]["to_finish"] == len(jobs)
    released = releases_logged(local_cluster, log_offset)
    assert [released[job] for job in jobs] == [1] * len(jobs)
    for job in jobs:
        decision = second.decision(job)
        assert decision is not None
        assert (decision["recovered"], decision["reason"]) == (True, reason)
    entries = redis_client.xrange(keys.DECISIONS, "-", "+")
    assert sorted(int(fields["job_id"]) for _, fields in entries) == sorted(jobs)
    assert not (first.state_dir / "inflight.json").exists()


def test_a_crash_between_the_release_and_the_record_still_records_jobs_that_ran(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Callable[..., DaemonProcess],
    redis_client: Any,
) -> None:
    """Released, then the daemon died before recording: by the time another starts the jobs
    ran and finished, so they are no longer pending; the journal must still record each
    once (the burst test above found jobs that were released but never recorded)."""
    first = daemon_factory().start()
    first.signal(signal.SIGSTOP)  # its heartbeat stays fresh: job_submit.lua holds the jobs
    jobs = [
        submit_job("--nodes=1-2", "--comment=adaptalloc:v1 app=ran", wrap="true") for _ in range(3)
    ]
    first.kill()
    reason = "journaled by a daemon that crashed before the record"
    journal_kept_before_release(slurm, jobs, first.state_dir, "ran", reason)
    slurm.run("scontrol", "release", ",".join(str(job) for job in jobs))
    for job in jobs:
        slurm.wait_job_state(job, {"COMPLETED"})

    second = daemon_factory().start()
    slurm.wait_for(
        "the recovered records", lambda: redis_client.xlen(keys.DECISIONS) >= len(jobs), 60
    )
    second.stop()

    assert second.events("recovery")[0]["to_record"] == len(jobs)
    entries = redis_client.xrange(keys.DECISIONS, "-", "+")
    assert sorted(int(fields["job_id"]) for _, fields in entries) == sorted(jobs)
    for job in jobs:
        decision = second.decision(job)
        assert decision is not None
        assert (decision["recovered"], decision["reason"]) == (True, reason)
    assert not (first.state_dir / "inflight.json").exists()


def _loaded(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def test_a_daemon_stopped_while_it_starts_stops_gracefully(
    slurm: SlurmCLI, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    """SIGTERM while the daemon still loads its modules (numpy is loaded then, seconds before
    the handlers are installed): before, the default action killed it (exit -15, no
    teardown); now the signal waits for the handlers and the stop is graceful."""
    daemon = daemon_factory()
    daemon.start(wait=False)
    deadline = time.monotonic() + 120
    while not _loaded(daemon.pid, "_multiarray_umath") and daemon.alive():
        assert time.monotonic() < deadline, "the daemon never loaded numpy"
        time.sleep(0.005)
    assert daemon.alive()
    assert daemon.stop() == 0
    assert daemon.events("stop_requested")
