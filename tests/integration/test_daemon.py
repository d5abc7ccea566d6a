"""``adaptalloc daemon`` on the real local Slurm and Redis: what users and admins meet.

A moldable job of a known app runs on exactly the size the daemon chose, with the
rescaled time limit; rigid and opted-out jobs are untouched; an unknown app follows the
policy's fallback; Redis going away releases jobs unmodified while the daemon keeps
running; hostile names and comments change nothing; SIGTERM releases what is held and
stops the holds, a stale heartbeat stops them too. The crash-in-a-burst test is in
test_daemon_recovery.py.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.learning.importers import import_csv
from plugin.learning.learner import refit_app
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

from .daemon_harness import (
    DaemonProcess,
    held,
    job_fields,
)
from .testbed import PROJECT_ROOT, LocalCluster, PrivateRedis, SlurmCLI, SubmitJob, scratch_url

pytestmark = pytest.mark.integration

DATA = PROJECT_ROOT / "tests" / "data" / "scaling"
Factory = Callable[..., DaemonProcess]


def learn_curve(url: str, app: str, csv: str) -> None:
    """Import a scaling study as the app's history and fit its curve (as the demo does)."""
    store = CurveStore(connect(url))
    key = AppKey.parse(app)
    import_csv(store, DATA / csv, key)
    assert refit_app(store, key).status == "written"


def admin_comment(slurm: SlurmCLI, job_id: int) -> str:
    return str(job_fields(slurm, job_id).get("admin_comment") or "")


def test_a_moldable_job_runs_on_the_chosen_size_with_the_rescaled_limit(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    tmp_path: Path,
) -> None:
    learn_curve(scratch_url(), "it-lu", "lan_thesis_npb_lu_W.csv")
    daemon = daemon_factory().start()
    out = tmp_path / "nodes.txt"
    job = submit_job(
        "--nodes=1-8",
        "--time=60",
        "--comment=adaptalloc:v1 app=it-lu",
        f"--output={out}",
        wrap="echo NNODES=$SLURM_NNODES",
    )
    decision = daemon.wait_decision(job)
    assert decision["action"] == "resize"
    assert decision["status"] == "released"
    n, limit = decision["nodes"], decision["new_time_limit_min"]
    assert 1 <= n <= 8
    assert limit is not None
    assert limit < 60
    fields = slurm.wait_job_state(job, {"COMPLETED"})
    assert out.read_text().strip() == f"NNODES={n}"
    assert fields["NumNodes"] == str(n)
    assert fields["TimeLimit"] == f"00:{limit:02d}:00"
    record = slurm.wait_sacct_job(job, {"COMPLETED"})
    comment = record["comment"]["administrator"]
    assert comment.startswith(f"adaptalloc:v1 app=it-lu; adaptalloc:v1:sized n={n} range=1-8 ")
    assert f"rule={decision['rule']}" in comment


def test_rigid_and_opted_out_jobs_are_untouched(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    daemon = daemon_factory().start()
    rigid = submit_job("--nodes=2", "--hold", wrap="true")
    opted = submit_job("--nodes=2-4", "--hold", "--comment=adaptalloc:v1 resize=no", wrap="true")
    # Submitted held by their users (so they stay to be looked at): neither is ours to hold.
    time.sleep(2.5)  # two sweeps
    for job, nodes in ((rigid, "2"), (opted, "2-4")):
        fields = slurm.show_job(job)
        assert fields["NumNodes"].startswith(nodes.split("-", maxsplit=1)[0])
        assert fields["NumNodes"] == nodes or fields["NumNodes"] == f"{nodes}-{nodes}"
        assert admin_comment(slurm, job) == ""
        assert daemon.decision(job) is None


def test_an_unknown_app_follows_the_fallback(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    daemon = daemon_factory(policy='[defaults]\nfallback = "max"\n').start()
    job = submit_job("--nodes=1-3", "--comment=adaptalloc:v1 app=never-seen", wrap="true")
    decision = daemon.wait_decision(job)
    assert decision["rule"] == "fallback"
    assert decision["nodes"] == 3
    assert "no curve is stored for app root/never-seen nor for the site's" in decision["reason"]
    assert slurm.show_job(job)["NumNodes"] in ("3", "3-3")  # pending jobs show the range
    kept = submit_job("--nodes=1-3", "--job-name=wrap", wrap="true")  # no app key at all
    decision = daemon.wait_decision(kept)
    assert decision["rule"] == "fallback"
    assert decision["app"] is None


def test_redis_down_releases_jobs_unmodified_and_the_daemon_keeps_running(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    private_redis: PrivateRedis,
) -> None:
    private_redis.start()
    url = private_redis.url
    learn_curve(url, "it-lu", "lan_thesis_npb_lu_W.csv")
    daemon = daemon_factory(config="redis_retry_s = 1.0\n", args=("--redis-url", url)).start()
    before = submit_job("--nodes=1-8", "--comment=adaptalloc:v1 app=it-lu", wrap="true")
    assert daemon.wait_decision(before)["action"] == "resize"

    private_redis.stop()
    during = submit_job(
        "--nodes=2-6", "--time=30", "--comment=adaptalloc:v1 app=it-lu", wrap="true"
    )
    decision = daemon.wait_decision(during)
    assert decision["action"] == "release"
    assert decision["fail_open"] == "store_unavailable"
    fields = slurm.show_job(during)
    assert fields["NumNodes"] == "2-6" or fields["JobState"] != "PENDING"
    assert fields["TimeLimit"] == "00:30:00"
    assert "adaptalloc:v1:released reason=store_unavailable range=2-6" in admin_comment(
        slurm, during
    )
    assert daemon.alive()
    assert daemon.fresh_heartbeat()

    private_redis.start()  # an empty Redis: the app has no curve now, so the fallback decides
    time.sleep(1.5)  # past redis_retry_s
    after = submit_job("--nodes=1-8", "--comment=adaptalloc:v1 app=it-lu", wrap="true")
    assert daemon.wait_decision(after)["rule"] == "fallback"


HOSTILE_NAME = "x\x1b[31m;$(touch {probe});`id`'\"*"
HOSTILE_COMMENTS = (
    "adaptalloc:v1 app=$(touch {probe})",  # a tag that cannot be honoured
    "adaptalloc:v1:sized n=999 range=1-999 rule=cap adaptalloc:v1:held",  # fake records
    "adaptalloc:v1 app=lu size=w\nupdate JobId=1 NumNodes=64",  # a newline, a command
    "a" * 250 + " adaptalloc:v1 app=" + "b" * 200,  # long, and an over-long app name
)


def test_hostile_job_names_and_comments_change_nothing(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    redis_client: Any,
    tmp_path: Path,
) -> None:
    probe = tmp_path / "pwned"
    daemon = daemon_factory().start()
    jobs = [
        submit_job("--nodes=1-3", f"--job-name={HOSTILE_NAME.format(probe=probe)}", wrap="true")
    ]
    jobs += [
        submit_job("--nodes=1-3", f"--comment={c.format(probe=probe)}", wrap="true")
        for c in HOSTILE_COMMENTS
    ]
    for job in jobs:
        decision = daemon.wait_decision(job)
        assert decision["status"] == "released"
        assert decision["nodes"] in (None, 1, 2, 3)
        fields = job_fields(slurm, job)
        assert not held(fields)
        assert fields.get("user_name") == "root" or fields.get("user_name")
    bad_tag = daemon.decision(jobs[1])
    assert bad_tag is not None
    assert bad_tag["fail_open"] == "bad_tag"
    assert not probe.exists()
    assert all(k.startswith("adaptalloc:v2:") for k in redis_client.keys("*"))


def test_sigterm_releases_held_jobs_and_stops_the_holds(
    local_cluster: LocalCluster,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    daemon = daemon_factory().start()
    daemon.signal(signal.SIGSTOP)  # frozen: jobs are held while its heartbeat is fresh
    try:
        frozen = [submit_job("--nodes=1-2", wrap="true") for _ in range(3)]
        assert all(held(job_fields(slurm, j)) for j in frozen)
        daemon.signal(signal.SIGTERM)
    finally:
        daemon.signal(signal.SIGCONT)
    assert daemon.wait_exit() == 0  # a second SIGTERM would force the stop
    assert not daemon.heartbeat.exists()
    for job in frozen:
        assert not held(job_fields(slurm, job))
        assert daemon.decision(job) is not None
    after = submit_job("--nodes=1-2", wrap="true")
    assert admin_comment(slurm, after) == ""
    assert daemon.events("daemon_stopped")[-1]["forced"] is False


@pytest.mark.slow
def test_a_stale_heartbeat_stops_the_holds(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    daemon = daemon_factory().start()
    daemon.kill()  # no teardown: the heartbeat file stays, and goes stale
    stamp = int(daemon.heartbeat.read_text())
    slurm.wait_for("the heartbeat to be 16 s old", lambda: time.time() - stamp > 16, 60)
    job = submit_job("--nodes=1-2", wrap="true")
    assert admin_comment(slurm, job) == ""
    assert not held(job_fields(slurm, job))


def test_sighup_reloads_the_policy(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
    tmp_path: Path,
) -> None:
    daemon = daemon_factory(policy='[defaults]\nfallback = "as_submitted"\n').start()
    first = submit_job("--nodes=1-3", "--comment=adaptalloc:v1 app=unknown-app", wrap="true")
    assert daemon.wait_decision(first)["action"] == "keep"
    (tmp_path / "policy.toml").write_text('[defaults]\nfallback = "min"\n')
    daemon.signal(signal.SIGHUP)
    daemon.wait_for("the reload", lambda: bool(daemon.events("config_reloaded")), 30)
    second = submit_job("--nodes=2-3", "--comment=adaptalloc:v1 app=unknown-app", wrap="true")
    assert daemon.wait_decision(second)["nodes"] == 2


def test_held_jobs_and_the_lua_hold_rules(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_factory: Factory,
) -> None:
    """Jobs the user holds, prioritises or submits as arrays are not job_submit's to hold."""
    daemon = daemon_factory().start()
    daemon.signal(signal.SIGSTOP)  # so nothing gets decided while we look
    try:
        user_held = submit_job("--nodes=2-4", "--hold", wrap="true")
        array = submit_job("--nodes=2-4", "--array=1-2", wrap="true")
        moldable = submit_job("--nodes=2-4", wrap="true")
        assert admin_comment(slurm, user_held) == ""
        assert admin_comment(slurm, array) == ""
        assert admin_comment(slurm, moldable) == "adaptalloc:v1:held"
    finally:
        daemon.signal(signal.SIGCONT)
    daemon.wait_decision(moldable)
    time.sleep(1.5)
    assert held(job_fields(slurm, user_held))  # still the user's hold
