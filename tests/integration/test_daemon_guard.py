"""The kill guard on the real testbed: a job that outruns the limit the daemon shortened is
not killed; the guard gives it the user's own limit back and the job completes.

The app's curve (the thesis' NPB LU class W study) predicts a run far shorter than the one
the job really makes (it sleeps past its new limit): the curve is wrong, which is what the
guard is for. The policy lets the daemon cut the limit to whole minutes (floor 1 min, no
safety factor) so the test stays short. The testbed enforces no accounting limits, so the
guard may raise (plugin/daemon/guard.py), and the user's 5 minutes are below every maximum.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from plugin.store.connection import connect
from plugin.store.curves import CurveStore

from .daemon_harness import (
    DaemonProcess,
)
from .test_daemon import learn_curve
from .testbed import SlurmCLI, SubmitJob, own, scratch_url

pytestmark = pytest.mark.integration

POLICY = "[defaults]\ntime_limit_floor_min = 1\ntime_limit_safety_factor = 1.0\n"
USER_LIMIT_MIN = 5
#: Longer than any limit the curve's calibrated interval shortens the user's 5 minutes to
#: (2 minutes here), shorter than the user's own.
SLEEP_S = 200


def test_a_job_that_outruns_its_shortened_limit_gets_the_users_limit_and_completes(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Callable[..., DaemonProcess],
    redis_client: Any,
) -> None:
    learn_curve(scratch_url(), "it-guard", "lan_thesis_npb_lu_W.csv")
    daemon = daemon_factory(policy=POLICY).start()
    job = submit_job(
        "--nodes=1-8",
        f"--time={USER_LIMIT_MIN}",
        "--comment=adaptalloc:v1 app=it-guard",
        wrap=f"sleep {SLEEP_S}",
    )
    decision = daemon.wait_decision(job)
    assert decision["action"] == "resize"
    shortened = decision["new_time_limit_min"]
    assert shortened is not None
    assert shortened * 60 < SLEEP_S  # the job really outruns the limit it was given
    slurm.wait_job_state(job, {"RUNNING"})
    assert slurm.show_job(job)["TimeLimit"] == f"00:{shortened:02d}:00"

    def raised() -> bool:
        return any(e.get("job_id") == job for e in daemon.events("limit_raised"))

    daemon.wait_for("the guard to raise the limit", raised, shortened * 60 + 30)
    [event] = [e for e in daemon.events("limit_raised") if e.get("job_id") == job]
    assert (event["from_min"], event["to_min"]) == (shortened, USER_LIMIT_MIN)
    print(f"limit {shortened} min raised to {USER_LIMIT_MIN} after {event['elapsed_s']} s")
    assert slurm.show_job(job)["TimeLimit"] == f"00:{USER_LIMIT_MIN:02d}:00"

    final: dict[str, str] = {}

    def ended() -> bool:
        final.update(slurm.show_job(job))
        return final.get("JobState") in {"COMPLETED", "TIMEOUT", "FAILED", "CANCELLED"}

    slurm.wait_for(f"job {job} to end", ended, SLEEP_S + 60)
    assert final["JobState"] == "COMPLETED"
    record = slurm.wait_sacct_job(job, {"COMPLETED"})
    elapsed = record["time"]["elapsed"]
    assert elapsed >= SLEEP_S > shortened * 60
    print(f"completed after {elapsed} s; adaptalloc's limit was {shortened * 60} s")

    store = CurveStore(connect(scratch_url()))
    counts = store.guard_counts(own("it-guard"))  # the user's own raises
    assert counts["limits_raised"] == 1
    assert counts["killed_at_our_limit"] == 0
    assert counts["limit_safety"] == 1.25
    [(_, fields_)] = redis_client.xrange("adaptalloc:v2:{global}:guard:raises")
    assert json.loads(fields_["doc"])["job_id"] == job
    assert redis_client.hlen("adaptalloc:v2:{global}:guard:watch") == 0

    # The app's next shortened limit is lengthened by its safety.
    fresh = submit_job(
        "--nodes=1-8",
        f"--time={USER_LIMIT_MIN}",
        "--comment=adaptalloc:v1 app=it-guard",
        wrap="true",
    )
    later = daemon.wait_decision(fresh)
    assert "kill guard" in later["time_limit_reason"]
    assert later["new_time_limit_min"] >= shortened
