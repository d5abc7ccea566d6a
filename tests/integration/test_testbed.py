"""The local testbed itself: what the daemon and the learner will rely on.

Each test names one behaviour of Slurm 22.05 / Redis that adaptalloc depends on,
checked on the real thing started by deploy/local/up.sh.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis

from .testbed import PROJECT_ROOT, STATUS_SH, UP_SH, LocalCluster, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration


# --- nodes and configuration ------------------------------------------------------


def test_every_node_is_up_with_the_configured_cpus(
    local_cluster: LocalCluster, slurm: SlurmCLI
) -> None:
    sinfo = slurm.json("sinfo")
    nodes = {node["name"]: node for node in sinfo["nodes"]}
    assert sorted(nodes) == sorted(f"node{k}" for k in range(1, local_cluster.node_count + 1))
    assert {node["cpus"] for node in nodes.values()} == {4}
    assert all({"debug", "batch"} <= set(node["partitions"]) for node in nodes.values())
    # Two node types: the upper half is also partition big, with Feature big.
    half = local_cluster.node_count // 2
    for k, node in enumerate(sorted(nodes.values(), key=lambda n: int(n["name"][4:])), 1):
        kind = "big" if k > half else "std"
        assert ("big" in node["partitions"]) == (kind == "big"), node["name"]
        # sinfo --json of 22.05 leaves features empty; scontrol shows them.
        shown = slurm.run("scontrol", "show", "node", "-o", node["name"]).stdout
        assert f"AvailableFeatures={kind} " in shown, node["name"]


def test_all_nodes_become_idle(local_cluster: LocalCluster, slurm: SlurmCLI) -> None:
    # Jobs of earlier tests are cancelled at their teardown; wait for them to drain.
    slurm.wait_for(
        "every node to be idle",
        lambda: set(slurm.node_states().values()) == {"idle"},
    )
    assert len(slurm.node_states()) == local_cluster.node_count == 8


def test_slurm_config_has_what_adaptalloc_needs(slurm: SlurmCLI) -> None:
    config = slurm.run("scontrol", "show", "config").stdout
    settings = {
        key.strip(): value.strip()
        for key, sep, value in (line.partition("=") for line in config.splitlines())
        if sep
    }
    assert settings["JobSubmitPlugins"] == "lua"
    assert settings["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert settings["SelectType"] == "select/cons_tres"
    assert settings["SchedulerType"] == "sched/backfill"
    assert settings["MinJobAge"] == "300 sec"


def test_job_submit_lua_and_its_module_sit_beside_slurm_conf(local_cluster: LocalCluster) -> None:
    # The composed form a site uses: the example script, which loads the module beside it.
    etc = local_cluster.slurm_conf.parent
    for name in ("job_submit.lua", "adaptalloc_submit.lua"):
        assert (etc / name).resolve() == (PROJECT_ROOT / "deploy" / "slurm" / name).resolve()
    # slurmctld reloads the script (and so the module) only when the script's mtime changes.
    assert (etc / "job_submit.lua").stat().st_mtime >= (
        etc / "adaptalloc_submit.lua"
    ).stat().st_mtime


# --- jobs ---------------------------------------------------------------------------


def _has_nodes(record: dict[str, Any]) -> bool:
    # right after a job ends, its sacct record may say COMPLETED with 0 nodes
    return bool(record["allocation_nodes"] > 0)


def test_moldable_job_runs_completes_and_is_accounted(
    slurm: SlurmCLI, submit_job: SubmitJob
) -> None:
    job_id = submit_job("--nodes=2-4", wrap="sleep 1")

    fields = slurm.wait_job_state(job_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
    assert fields["JobState"] == "COMPLETED"
    assert 2 <= int(fields["NumNodes"]) <= 4

    record = slurm.wait_sacct_job(job_id, {"COMPLETED"}, where=_has_nodes)
    assert 2 <= record["allocation_nodes"] <= 4
    assert record["exit_code"]["return_code"] == 0
    assert record["time"]["elapsed"] >= 1
    assert record["required"]["CPUs"] >= 1


def test_an_unprivileged_user_submits_runs_and_cannot_touch_admin_fields(
    slurm: SlurmCLI, submit_job: SubmitJob
) -> None:
    user = slurm.test_user
    job_id = submit_job("--nodes=1-2", "--hold", wrap="sleep 1", as_user=user)

    assert slurm.show_job(job_id)["UserId"].startswith(f"{user}(")
    refused = slurm.run(
        "scontrol", "update", f"JobId={job_id}", "AdminComment=mine", check=False, as_user=user
    )
    assert refused.returncode != 0
    slurm.run("scontrol", "release", str(job_id), as_user=user)
    assert slurm.wait_job_state(job_id, {"COMPLETED", "FAILED"})["JobState"] == "COMPLETED"


def test_failed_job_is_accounted_with_its_exit_code(slurm: SlurmCLI, submit_job: SubmitJob) -> None:
    job_id = submit_job("--nodes=1", wrap="exit 3")

    slurm.wait_sacct_job(job_id, {"FAILED"})
    # Slurm 22.05's `sacct --json` reports exit_code {"status": "SUCCESS",
    # "return_code": 0} even for this job; the text output has the real code.
    exit_code = slurm.run("sacct", "-n", "-P", "-X", "-o", "ExitCode", f"--jobs={job_id}").stdout
    assert exit_code.strip() == "3:0"


def test_held_moldable_job_can_be_resized_and_released(
    slurm: SlurmCLI, submit_job: SubmitJob
) -> None:
    # What the daemon will do: the job arrives held (priority 0), it picks a size
    # inside the user's range, pins it, sets a time limit, and releases the job.
    job_id = submit_job("--hold", "--nodes=2-4", "--time=30", wrap="sleep 1")
    fields = slurm.show_job(job_id)
    assert fields["JobState"] == "PENDING"
    assert fields["Priority"] == "0"
    assert fields["NumNodes"] == "2-4"

    slurm.run("scontrol", "update", f"JobId={job_id}", "NumNodes=3-3", "TimeLimit=10")
    fields = slurm.show_job(job_id)
    assert fields["NumNodes"] == "3-3"
    assert fields["TimeLimit"] == "00:10:00"

    slurm.run("scontrol", "release", str(job_id))
    fields = slurm.wait_job_state(job_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
    assert fields["JobState"] == "COMPLETED"
    assert fields["NumNodes"] == "3"
    assert slurm.wait_sacct_job(job_id, {"COMPLETED"}, where=_has_nodes)["allocation_nodes"] == 3


def test_numnodes_with_one_value_only_raises_the_minimum(
    slurm: SlurmCLI, submit_job: SubmitJob
) -> None:
    # Slurm 22.05: "NumNodes=3" on a 2-4 job gives 3-4, not 3. The daemon must
    # write "NumNodes=N-N" to pin the size.
    job_id = submit_job("--hold", "--nodes=2-4", wrap="sleep 1")
    slurm.run("scontrol", "update", f"JobId={job_id}", "NumNodes=3")
    assert slurm.show_job(job_id)["NumNodes"] == "3-4"


def test_scontrol_hold_and_release_a_pending_job(slurm: SlurmCLI, submit_job: SubmitJob) -> None:
    # A job that stays pending on its own (begin time in an hour) but is not held.
    job_id = submit_job("--begin=now+3600", "--nodes=2-4", wrap="sleep 1")
    assert slurm.show_job(job_id)["Priority"] != "0"

    slurm.run("scontrol", "hold", str(job_id))
    fields = slurm.show_job(job_id)
    assert fields["Priority"] == "0"
    assert fields["Reason"] == "JobHeldAdmin"

    slurm.run("scontrol", "release", str(job_id))
    fields = slurm.show_job(job_id)
    assert fields["Priority"] != "0"
    assert fields["JobState"] == "PENDING"


def test_cancelled_pending_job_is_accounted_cancelled(
    slurm: SlurmCLI, submit_job: SubmitJob
) -> None:
    job_id = submit_job("--hold", "--nodes=2-4", wrap="sleep 1")
    slurm.run("scancel", str(job_id))
    record = slurm.wait_sacct_job(job_id, {"CANCELLED"})
    assert record["allocation_nodes"] == 0


def test_json_outputs_of_squeue_sinfo_sacct(slurm: SlurmCLI, submit_job: SubmitJob) -> None:
    job_id = submit_job("--hold", "--nodes=2-4", wrap="sleep 1")
    outputs: dict[str, dict[str, Any]] = {
        "squeue": slurm.json("squeue"),
        "sinfo": slurm.json("sinfo"),
        "sacct": slurm.json("sacct"),
    }
    for name, data in outputs.items():
        assert data["errors"] == [], name
        assert "release" in data["meta"]["Slurm"], name
    pending = [job for job in outputs["squeue"]["jobs"] if job["job_id"] == job_id]
    assert len(pending) == 1
    assert pending[0]["job_state"] == "PENDING"
    assert pending[0]["node_count"] == 2  # squeue shows the minimum of the range


# --- Redis --------------------------------------------------------------------------


def test_redis_answers_with_the_password(redis_client: Any) -> None:
    assert redis_client.ping() is True
    assert redis_client.dbsize() == 0  # the scratch db starts empty
    redis_client.set("adaptalloc:test", "1")
    assert redis_client.get("adaptalloc:test") == "1"


def test_redis_refuses_clients_without_the_password(local_cluster: LocalCluster) -> None:
    port = int(local_cluster.env["ADAPTALLOC_REDIS_PORT"])
    anonymous = redis.Redis(host="127.0.0.1", port=port)
    with pytest.raises(redis.AuthenticationError):
        anonymous.ping()
    wrong = redis.Redis(host="127.0.0.1", port=port, password="wrong")  # noqa: S106
    with pytest.raises(redis.AuthenticationError):
        wrong.ping()


# --- the scripts ----------------------------------------------------------------------


def _pid_files(cluster: LocalCluster) -> dict[str, str]:
    run_dir = cluster.state_dir / "run"
    return {path.name: path.read_text().strip() for path in sorted(run_dir.glob("*.pid"))}


def test_up_sh_on_a_running_cluster_changes_nothing(local_cluster: LocalCluster) -> None:
    before = _pid_files(local_cluster)
    proc = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(UP_SH)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "already up and healthy: nothing started" in proc.stdout
    assert _pid_files(local_cluster) == before
    assert len(before) == 5 + local_cluster.node_count  # 5 daemons + one slurmd per node


def test_status_sh_reports_every_component_up(local_cluster: LocalCluster) -> None:
    proc = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(STATUS_SH)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()[1:] if line.split()[:1] != ["state"]]
    states = {row[0]: row[1] for row in rows if len(row) >= 2}
    # the daemon is optional: the session fixture stops one left running, so it is "off" here
    assert states.pop("adaptalloc-daemon") == "off"
    assert set(states.values()) == {"up"}
    assert len(states) == 5 + local_cluster.node_count


def test_env_file_points_at_this_testbed(local_cluster: LocalCluster) -> None:
    env_file = local_cluster.state_dir / "env"
    assert env_file.stat().st_mode & 0o077 == 0  # it holds the Redis password
    assert local_cluster.slurm_conf.is_file()
    assert local_cluster.redis_url.startswith("redis://:")
    port = local_cluster.env["ADAPTALLOC_REDIS_PORT"]  # 16379 unless that was taken
    assert local_cluster.redis_url.endswith(f"@127.0.0.1:{port}/0")
    conf = json.dumps(dict(local_cluster.env))
    assert str(local_cluster.state_dir) in conf
    assert Path(local_cluster.env["ADAPTALLOC_STATE_DIR"]) == local_cluster.state_dir
