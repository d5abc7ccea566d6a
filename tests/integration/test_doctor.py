"""``adaptalloc doctor`` against the real testbed: the testbed with its daemon passes every
check; each failure mode is made by breaking a *copy* of the testbed's configuration (or by
pointing the doctor somewhere broken), never the shared testbed itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from plugin.cli.env_file import read_env_file

from .daemon_harness import DaemonProcess
from .test_daemon_writes import BOOTSTRAP
from .testbed import (
    DOWN_SH,
    PROJECT_ROOT,
    UP_SH,
    UP_SH_TIMEOUT_S,
    LocalCluster,
    SlurmCLI,
    free_port,
    scratch_url,
)

pytestmark = pytest.mark.integration

Doctor = Callable[..., tuple[int, dict[str, dict[str, str]]]]


@pytest.fixture
def running_daemon(daemon_factory: Callable[..., DaemonProcess]) -> DaemonProcess:
    """The daemon on the testbed's state directory, serving metrics on a port of its own."""
    daemon = daemon_factory(args=("--metrics-port", str(free_port())))
    return daemon.start()


def _metrics_port(daemon: DaemonProcess) -> str:
    return daemon.args[daemon.args.index("--metrics-port") + 1]


def _checks(stdout: str) -> dict[str, dict[str, str]]:
    doc = json.loads(stdout)
    assert list(doc) == ["status", "checks"]
    statuses = {check["status"] for check in doc["checks"]}
    worst = "fail" if "fail" in statuses else "warn" if "warn" in statuses else "ok"
    assert doc["status"] == worst
    for check in doc["checks"]:
        assert set(check) == {"name", "status", "detail", "fix"}
        assert check["status"] in ("ok", "warn", "fail")
        assert (check["fix"] == "") == (check["status"] == "ok"), check
    return {check["name"]: check for check in doc["checks"]}


@pytest.fixture
def doctor(running_daemon: DaemonProcess, tmp_path: Path) -> Doctor:
    """``doctor(*extra, env={...}) -> (exit code, checks by name)``: the doctor pointed at the
    running daemon (its config, state directory, metrics port, the scratch Redis)."""

    def run(*extra: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        args = [
            sys.executable,
            "-m",
            "plugin",
            "doctor",
            "--format",
            "json",
            "--config",
            str(running_daemon.config_path),
            "--state-dir",
            str(running_daemon.state_dir),
            "--metrics-port",
            _metrics_port(running_daemon),
            "--redis-url",
            scratch_url(),
            *extra,
        ]
        proc = subprocess.run(  # noqa: S603 - our interpreter and module, no shell
            args,
            cwd=tmp_path,
            env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), **(env or {})),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode, _checks(proc.stdout)

    return run


@pytest.fixture
def etc_copy(local_cluster: LocalCluster, tmp_path: Path) -> Path:
    """A copy of the testbed's Slurm configuration directory (the hook copied, not linked)."""
    copy = tmp_path / "etc"
    shutil.copytree(local_cluster.slurm_conf.parent, copy, symlinks=False)
    return copy


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


EVERY_CHECK = (
    "slurm_conf",
    "job_submit_plugins",
    "accounting_flags",
    "hook_module",
    "hook_script",
    "submit_conf",
    "state_dir_access",
    "heartbeat",
    "daemon_privileges",
    "enforced_limits",
    "sizing_user_scope",
    "clock_offset",
    "slurm_backend",
    "node_types",
    "accounting_answers",
    "redis",
    "metrics",
    "accuracy_coverage",
    "accuracy_drift",
)


def test_the_testbed_passes_every_check(doctor: Doctor, slurm: SlurmCLI) -> None:
    code, checks = doctor()
    assert {name: c["status"] for name, c in checks.items()} == dict.fromkeys(EVERY_CHECK, "ok"), (
        checks
    )
    assert code == 0
    assert (
        "AdminComment, NumNodes, TimeLimit, release accepted"
        in (checks["daemon_privileges"]["detail"])
    )
    # The probe job was cancelled: nothing of the doctor's is left in the queue.
    queue = slurm.run("squeue", "-h", "-n", "adaptalloc-doctor-probe", "-o", "%i").stdout
    assert queue.strip() == ""


BREAKAGES: dict[str, tuple[str, str, str, str, str]] = {
    # name: (file in the copy, text, replaced by, failing check, words in its fix)
    "no lua plugin": (
        "slurm.conf",
        "JobSubmitPlugins=lua",
        "#JobSubmitPlugins=lua",  # (an empty value: Slurm's commands refuse the file)
        "job_submit_plugins",
        "`JobSubmitPlugins=lua`",
    ),
    "no job_comment flag": (
        "slurm.conf",
        "AccountingStoreFlags=job_comment",
        "#",
        "accounting_flags",
        "`AccountingStoreFlags=job_comment`",
    ),
    "edited module": (
        "adaptalloc_submit.lua",
        "\n",
        "\n-- edited by hand\n",
        "hook_module",
        "install -m 644",
    ),
    "site script that does not call the module": (
        "job_submit.lua",
        "return adaptalloc.job_modify(job_desc, job_rec, part_list, modify_uid)",
        "return slurm.SUCCESS",
        "hook_script",
        "the lines marked adaptalloc",
    ),
    "other state_dir": (
        "adaptalloc_submit.conf",
        "state_dir = ",
        "state_dir = /var/tmp/elsewhere#",
        "submit_conf",
        "set `state_dir = ",
    ),
    "SlurmUser who cannot write the spool": (
        "slurm.conf",
        "SlurmUser=root",
        "SlurmUser=aatest",
        "state_dir_access",
        "chown aatest",
    ),
}


@pytest.mark.parametrize("case", list(BREAKAGES))
def test_each_broken_file_fails_its_check(doctor: Doctor, etc_copy: Path, case: str) -> None:
    name, old, new, failing, fix = BREAKAGES[case]
    code, before = doctor("--no-probe", "--slurm-conf", str(etc_copy / "slurm.conf"))
    assert before[failing]["status"] == "ok", before[failing]  # the copy passes as it is
    _edit(etc_copy / name, old, new)
    code, checks = doctor("--no-probe", "--slurm-conf", str(etc_copy / "slurm.conf"))
    assert code == 1
    assert checks[failing]["status"] == "fail", checks[failing]
    assert fix in checks[failing]["fix"]
    failed = {n for n, c in checks.items() if c["status"] == "fail"}
    assert failed == {failing}, checks


@pytest.mark.parametrize(
    ("stamp", "words", "fix"),
    [(-100, "s old", "restart the daemon"), (+100, "in the future", "synchronise the clocks")],
)
def test_stale_or_future_heartbeat_fails(
    doctor: Doctor, tmp_path: Path, stamp: int, words: str, fix: str
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "heartbeat").write_text(f"{int(time.time()) + stamp}\n")
    code, checks = doctor("--no-probe", "--state-dir", str(state))
    assert code == 1
    assert checks["heartbeat"]["status"] == "fail"
    assert words in checks["heartbeat"]["detail"]
    assert fix in checks["heartbeat"]["fix"]
    # The hook's state_dir is the testbed's, not this one: that is caught too.
    assert checks["submit_conf"]["status"] == "fail"


def test_no_daemon_means_no_heartbeat_and_no_metrics(doctor: Doctor, tmp_path: Path) -> None:
    code, checks = doctor(
        "--no-probe", "--state-dir", str(tmp_path), "--metrics-port", str(free_port())
    )
    assert code == 1
    assert checks["heartbeat"]["status"] == "fail"
    assert "does not exist" in checks["heartbeat"]["detail"]
    assert checks["metrics"]["status"] == "fail"
    assert "does not answer" in checks["metrics"]["detail"]


def test_wrong_redis_password_fails(doctor: Doctor) -> None:
    url = scratch_url()
    scheme, rest = url.split("://", 1)
    wrong = f"{scheme}://:not-the-password@{rest.split('@', 1)[-1]}"
    code, checks = doctor("--no-probe", "--redis-url", wrong)
    assert code == 1
    assert checks["redis"]["status"] == "fail"
    assert "refused our credentials" in checks["redis"]["detail"]
    assert "password_file" in checks["redis"]["fix"]
    assert "not-the-password" not in json.dumps(checks)


def test_accounting_that_does_not_answer_fails(
    doctor: Doctor, etc_copy: Path, local_cluster: LocalCluster
) -> None:
    # sacct reads slurmdbd's address from the slurm.conf it is given: a port nobody serves.
    conf = etc_copy / "slurm.conf"
    port = local_cluster.env.get("ADAPTALLOC_SLURMDBD_PORT") or _conf_value(
        conf, "AccountingStoragePort"
    )
    _edit(conf, f"AccountingStoragePort={port}", f"AccountingStoragePort={free_port()}")
    # --slurm-conf alone: the doctor's Slurm commands read the slurm.conf it is given.
    code, checks = doctor("--no-probe", "--slurm-conf", str(conf))
    assert code == 1
    assert checks["accounting_answers"]["status"] == "fail", checks["accounting_answers"]
    assert "slurmdbd" in checks["accounting_answers"]["fix"]


def _conf_value(conf: Path, key: str) -> str:
    for line in conf.read_text().splitlines():
        if line.startswith(f"{key}="):
            return line.split("=", 1)[1].strip()
    raise AssertionError(f"{key} not in {conf}")


def test_an_account_without_admin_rights_fails_the_probe(
    running_daemon: DaemonProcess, slurm: SlurmCLI, tmp_path: Path
) -> None:
    # The doctor run as the unprivileged test user: its own probe job is submitted, Slurm
    # refuses the AdminComment, and the job is cancelled all the same.
    user = slurm.test_user
    site = PROJECT_ROOT / ".venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    proc = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [  # noqa: S607 - runuser from PATH, as the daemon tests run the test user
            "runuser",
            "-u",
            user,
            "--",
            "env",
            f"PYTHONPATH={PROJECT_ROOT}:{site / 'site-packages'}",
            f"SLURM_CONF={os.environ['SLURM_CONF']}",
            "HOME=/tmp",
            "/usr/bin/python3",
            "-c",
            BOOTSTRAP,
            "doctor",
            "--format",
            "json",
            # (no --config: the daemon's sits in root's tmp_path; the rest is named here)
            "--state-dir",
            str(running_daemon.state_dir),
            "--metrics-port",
            _metrics_port(running_daemon),
            "--redis-url",
            scratch_url(),
        ],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    checks = _checks(proc.stdout)
    assert checks["metrics"]["status"] == "ok"  # the daemon's endpoint, seen by anyone
    privileges = checks["daemon_privileges"]
    assert privileges["status"] == "fail"
    assert "AdminComment refused" in privileges["detail"]
    assert f"sacctmgr modify user {user} set adminlevel=Admin" in privileges["fix"]
    assert checks["clock_offset"]["status"] == "ok"  # measured on the probe all the same
    queue = slurm.run("squeue", "-h", "-u", user, "-n", "adaptalloc-doctor-probe", "-o", "%i")
    assert queue.stdout.strip() == ""


def test_the_testbed_as_up_sh_leaves_it_passes_every_check(
    local_cluster: LocalCluster, tmp_path: Path
) -> None:
    """What an admin trying it meets: ``up.sh --with-daemon``, ``source .local/env``, then
    ``adaptalloc doctor`` with no option at all. The env file's ADAPTALLOC_CONFIG gives the
    doctor the daemon's state directory and metrics port."""
    up = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(UP_SH), "--with-daemon"],
        cwd=PROJECT_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=UP_SH_TIMEOUT_S,
        check=False,
    )
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        env = read_env_file(local_cluster.state_dir / "env")
        assert Path(env["ADAPTALLOC_CONFIG"]).is_file()
        shell = 'set -a && . "$1" && set +a && shift && exec "$@"'  # what `source .local/env` does
        proc = subprocess.run(  # noqa: S603 - our interpreter and module, no shell input
            [
                "/bin/sh",
                "-c",
                shell,
                "sh",
                str(local_cluster.state_dir / "env"),
                sys.executable,
                "-m",
                "plugin",
                "doctor",
                "--format",
                "json",
            ],
            cwd=tmp_path,
            env={
                "PATH": os.environ["PATH"],
                "HOME": os.environ.get("HOME", "/root"),
                "PYTHONPATH": str(PROJECT_ROOT),
            },
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["status"] == "ok", doc
        assert {c["name"]: c["status"] for c in doc["checks"]} == dict.fromkeys(
            EVERY_CHECK, "ok"
        ), doc
        assert proc.returncode == 0
    finally:
        subprocess.run(  # noqa: S603 - fixed argument list, no shell
            [str(DOWN_SH), "--daemon-only"],
            cwd=PROJECT_ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=UP_SH_TIMEOUT_S,
            check=False,
        )
