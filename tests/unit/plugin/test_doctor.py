"""plugin.doctor's judgements on files and values (no Slurm, no Redis): the install checks
on real copies of the shipped files, access from permission bits, heartbeat and clock."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugin.config import Config
from plugin.doctor import FAIL, OK, WARN, Check, DoctorSettings, document, failed
from plugin.doctor.access import Identity, judge_heartbeat, missing_access, state_dir_access
from plugin.doctor.conf_files import parse_slurm_conf, parse_submit_conf
from plugin.doctor.install import (
    accounting_flags,
    hook_module,
    hook_script,
    job_submit_plugins,
    submit_conf,
)
from plugin.doctor.limits import enforced_limits
from plugin.doctor.probe import ProbeResult, clock_offset, judge_offset
from plugin.doctor.services import metrics_endpoint, redis_answers
from plugin.doctor.shipped import shipped_file
from plugin.metrics import Metrics
from plugin.slurm.writer import CliSlurm

REPO = Path(__file__).resolve().parents[3]
SLURM_CONF = """\
# a comment
SlurmUser=slurm
jobsubmitplugins=lua   # keys are case-insensitive
AccountingStorageType=accounting_storage/slurmdbd
AccountingStoreFlags=job_comment,job_env
NodeName=node[1-4] CPUs=2
"""
#: Someone who is neither root nor the owner of anything in tmp_path.
STRANGER = Identity("stranger", 54321, frozenset({54321}))


def test_check_refuses_an_unknown_status() -> None:
    with pytest.raises(ValueError, match="status must be one of ok, warn, fail"):
        Check("x", "fine", "")


def test_document_and_exit() -> None:
    checks = [Check("a", OK, "seen"), Check("b", WARN, "hm", "do this")]
    assert document(checks) == {
        "status": "warn",
        "checks": [
            {"name": "a", "status": "ok", "detail": "seen", "fix": ""},
            {"name": "b", "status": "warn", "detail": "hm", "fix": "do this"},
        ],
    }
    assert not failed(checks)
    assert failed([*checks, Check("c", FAIL, "no")])
    assert document([*checks, Check("c", FAIL, "no")])["status"] == "fail"
    assert document(checks[:1])["status"] == "ok"


def test_slurm_conf_lines() -> None:
    conf = parse_slurm_conf(Path("/etc/slurm/slurm.conf"), SLURM_CONF)
    assert conf.values("JobSubmitPlugins") == ["lua"]
    assert conf.values("AccountingStoreFlags") == ["job_comment", "job_env"]
    assert conf.slurm_user == "slurm"
    assert conf.get("NodeName") == "node[1-4]"
    assert parse_slurm_conf(Path("x"), "").slurm_user == "root"  # Slurm's default
    assert job_submit_plugins(conf).status == OK
    assert accounting_flags(conf).status == OK


def test_slurm_conf_without_lua_or_comments_fails_with_the_line_to_add() -> None:
    conf = parse_slurm_conf(Path("/etc/slurm/slurm.conf"), "JobSubmitPlugins=pbs\n")
    check = job_submit_plugins(conf)
    assert check.status == FAIL
    assert "`JobSubmitPlugins=pbs,lua` in /etc/slurm/slurm.conf" in check.fix
    flags = accounting_flags(conf)
    assert flags.status == FAIL
    assert "`AccountingStorageType=accounting_storage/slurmdbd`" in flags.fix
    assert "`AccountingStoreFlags=job_comment`" in flags.fix


def test_submit_conf_comments_anywhere() -> None:
    text = "state_dir = /var/lib/adaptalloc  # the daemon's\n# x = y\nheartbeat_max_age=15\n"
    assert parse_submit_conf(text) == {
        "state_dir": "/var/lib/adaptalloc",
        "heartbeat_max_age": "15",
    }


def test_the_shipped_hook_is_the_checkout_s() -> None:
    for name in ("adaptalloc_submit.lua", "job_submit.lua"):
        hook = shipped_file(f"slurm/{name}")
        assert hook is not None
        assert hook.read_bytes() == (REPO / "deploy" / "slurm" / name).read_bytes()


def test_hook_module_checksum(tmp_path: Path) -> None:
    ours = REPO / "deploy" / "slurm" / "adaptalloc_submit.lua"
    assert hook_module(tmp_path).status == FAIL  # missing
    (tmp_path / "adaptalloc_submit.lua").write_bytes(ours.read_bytes())
    assert hook_module(tmp_path).status == OK
    (tmp_path / "adaptalloc_submit.lua").write_bytes(ours.read_bytes() + b"-- local edit\n")
    check = hook_module(tmp_path)
    assert check.status == FAIL
    assert "is not this version's adaptalloc_submit.lua" in check.detail
    assert check.fix.startswith("`install -m 644 ")
    assert f"touch {tmp_path / 'job_submit.lua'}" in check.fix


SITE_SCRIPT = """\
-- routing and account checks of the site; adaptalloc.job_submit( in a comment is no call
local adaptalloc = require("adaptalloc_submit")
function slurm_job_submit(job_desc, part_list, submit_uid)
    if job_desc.account == nil then
        slurm.log_user("--account is required")
        return slurm.ERROR
    end
    return adaptalloc.job_submit(job_desc, part_list, submit_uid)
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return adaptalloc.job_modify(job_desc, job_rec, part_list, modify_uid)
end
return slurm.SUCCESS
"""


def _script_check(tmp_path: Path, text: str) -> Check:
    (tmp_path / "job_submit.lua").write_text(text)
    module = tmp_path / "adaptalloc_submit.lua"
    module.write_bytes((REPO / "deploy" / "slurm" / "adaptalloc_submit.lua").read_bytes())
    os.utime(module, (1_000_000_000, 1_000_000_000))  # older than the script
    return hook_script(tmp_path)


@pytest.mark.parametrize(
    ("text", "status", "words"),
    [
        (SITE_SCRIPT, OK, "loads adaptalloc_submit and calls its job_submit and job_modify"),
        ((REPO / "deploy" / "slurm" / "job_submit.lua").read_text(), OK, "calls its"),
        (
            SITE_SCRIPT.replace(
                "    return adaptalloc.job_modify(job_desc, job_rec, part_list, modify_uid)\n",
                "    return slurm.SUCCESS\n",
            ),
            FAIL,
            "lacks a call of <module>.job_modify",
        ),
        (
            SITE_SCRIPT.replace('local adaptalloc = require("adaptalloc_submit")', ""),
            FAIL,
            'lacks require("adaptalloc_submit")',
        ),
        (
            SITE_SCRIPT.replace(
                "return adaptalloc.job_submit(", "-- return adaptalloc.job_submit("
            ),
            FAIL,
            "lacks a call of <module>.job_submit",
        ),
        (
            "--[[ require('adaptalloc_submit') adaptalloc.job_submit( adaptalloc.job_modify(\n"
            "--]]\nfunction slurm_job_submit() return slurm.SUCCESS end\n"
            "function slurm_job_modify() return slurm.SUCCESS end\n",
            FAIL,
            'lacks require("adaptalloc_submit")',
        ),
    ],
)
def test_hook_script_reads_the_site_script(
    tmp_path: Path, text: str, status: str, words: str
) -> None:
    check = _script_check(tmp_path, text)
    assert check.status == status, check
    assert words in check.detail
    if status == FAIL:
        assert "adaptalloc" in check.fix


def test_hook_script_missing_or_older_than_the_module(tmp_path: Path) -> None:
    missing = hook_script(tmp_path)
    assert missing.status == FAIL
    assert "does not exist" in missing.detail
    assert missing.fix.startswith("`install -m 644 ")
    _script_check(tmp_path, SITE_SCRIPT)
    os.utime(tmp_path / "job_submit.lua", (999_999_000, 999_999_000))  # module now newer
    stale = hook_script(tmp_path)
    assert stale.status == WARN
    assert stale.fix == f"`touch {tmp_path / 'job_submit.lua'}`"


@pytest.mark.parametrize(
    ("text", "status", "words"),
    [
        ("state_dir = {state}\nheartbeat_max_age = 15\n", OK, "is the daemon's"),
        ("state_dir = /elsewhere\nheartbeat_max_age = 15\n", FAIL, "but the daemon's is"),
        ("heartbeat_max_age = 15\n", FAIL, "sets no state_dir"),
        ("state_dir = {state}\nheartbeat_max_age = 1.5\n", FAIL, "not a whole number"),
        ("state_dir = state\nheartbeat_max_age = 15\n", FAIL, "is relative"),
    ],
)
def test_submit_conf_state_dir(tmp_path: Path, text: str, status: str, words: str) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "adaptalloc_submit.conf").write_text(text.format(state=state))
    check = submit_conf(tmp_path, state)
    assert check.status == status
    assert words in check.detail


@pytest.fixture
def searchable_dir() -> Iterator[Path]:
    """A directory whose every parent others may search (pytest's tmp_path sits in a 700 one)."""
    path = Path(tempfile.mkdtemp(prefix="adaptalloc-doctor-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def test_missing_access_follows_the_path(searchable_dir: Path) -> None:
    # A stranger is stopped at the first parent it may not search. (Not pytest's tmp_path:
    # integration fixtures open its parents to the test user, so their mode depends on order.)
    closed = searchable_dir / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    (closed / "inside").mkdir()
    found = str(missing_access(closed / "inside", STRANGER, "r"))
    assert found.startswith(f"{closed} (mode 700")
    assert found.endswith("is not searchable")
    state = searchable_dir / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    heartbeat = state / "heartbeat"
    heartbeat.write_text("1\n")
    heartbeat.chmod(0o644)
    assert missing_access(heartbeat, STRANGER, "r") is None
    assert "lacks w" in str(missing_access(heartbeat, STRANGER, "w"))
    state.chmod(0o700)
    assert "is not searchable" in str(missing_access(heartbeat, STRANGER, "r"))
    me = Identity("me", os.getuid(), frozenset({os.getgid()}))
    assert missing_access(heartbeat, me, "r") is None
    root = Identity("root", 0, frozenset({0}))
    assert missing_access(heartbeat, root, "w") is None


def test_state_dir_access_names_the_account(tmp_path: Path) -> None:
    check = state_dir_access(tmp_path, "no-such-user-adaptalloc")
    assert check.status == FAIL
    assert "is not an account on this host" in check.detail


@pytest.mark.parametrize(
    ("text", "status", "words"),
    [
        ("1000\n", OK, "is 5 s old"),
        ("990\n", OK, "is 15 s old"),
        ("989\n", FAIL, "is 16 s old"),
        ("1100\n", FAIL, "95 s in the future"),
        ("1000.5\n", FAIL, "not whole Unix seconds"),
        ("", FAIL, "not whole Unix seconds"),
    ],
)
def test_judge_heartbeat(text: str, status: str, words: str) -> None:
    got, seen = judge_heartbeat(text, now=1005.0, max_age=15)
    assert got == status
    assert words in seen


@pytest.mark.parametrize(
    ("before", "after", "stamped", "offset"),
    [
        (100.2, 100.9, 100.0, 0.0),  # truncated to the second: inside the window
        (100.2, 101.3, 101.0, 0.0),
        (100.2, 100.9, 104.0, 3.1),  # slurmctld ahead
        (100.2, 100.9, 90.0, -10.0),  # behind
    ],
)
def test_judge_offset(before: float, after: float, stamped: float, offset: float) -> None:
    assert judge_offset(before, after, stamped) == pytest.approx(offset)


@pytest.mark.parametrize(
    ("offset", "status"), [(0.0, OK), (2.0, OK), (3.0, WARN), (-14.0, WARN), (15.0, FAIL)]
)
def test_clock_offset_against_the_heartbeat_age(offset: float, status: str) -> None:
    check = clock_offset(ProbeResult(7, (), offset_s=offset), max_age=15)
    assert check.status == status
    if status != OK:
        assert "synchronise" in check.fix
    assert clock_offset(None, 15).status == WARN


def _run_fix(fix: str) -> None:
    """Run the command a check's fix quotes first (between backticks), as an admin would."""
    command = fix.split("`")[1]
    subprocess.run(["/bin/sh", "-c", command], check=True)  # noqa: S603 - the fix under test


def test_the_fixes_run_as_written(tmp_path: Path) -> None:
    # Each fix below is pasted into a shell; afterwards its check passes.
    state = tmp_path / "state"
    me = pwd.getpwuid(os.geteuid()).pw_name
    missing = state_dir_access(state, me)
    assert missing.status == FAIL
    assert "does not exist" in missing.detail
    _run_fix(missing.fix)
    assert state_dir_access(state, me).status == OK

    no_conf = submit_conf(tmp_path, state)
    assert no_conf.status == FAIL
    _run_fix(no_conf.fix)
    assert submit_conf(tmp_path, state).status == OK

    no_module = hook_module(tmp_path)
    _script_check(tmp_path, SITE_SCRIPT)
    (tmp_path / "adaptalloc_submit.lua").unlink()
    _run_fix(no_module.fix)  # the module installed, the script touched after it
    assert hook_module(tmp_path).status == OK
    assert hook_script(tmp_path).status == OK


def _doctor_settings(state: Path, port: int, redis_url: str | None = None) -> DoctorSettings:
    config = Config()
    return DoctorSettings(
        slurm_conf=Path("/nonexistent/slurm.conf"),
        state_dir=state,
        metrics_port=port,
        metrics_address="127.0.0.1",
        redis_url=redis_url,
        redis=config.redis,
        config=config,
        probe=False,
    )


def test_metrics_must_be_this_state_dir_s_daemon(tmp_path: Path) -> None:
    # A real endpoint (prometheus-client's server on a free port) with the daemon's metrics.
    metrics = Metrics()
    metrics.info.labels("0.1.0", "cli").set(1)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    metrics.serve(port)
    settings = _doctor_settings(tmp_path, port)
    try:
        never = metrics_endpoint(settings)
        assert never.status == WARN  # a daemon that has not beaten (an HA standby)
        metrics.heartbeat.set(1_700_000_000.4)
        (tmp_path / "heartbeat").write_text("1700000000\n")
        assert metrics_endpoint(settings).status == OK
        (tmp_path / "heartbeat").write_text("1700000600\n")  # another daemon's state dir
        other = metrics_endpoint(settings)
        assert other.status == FAIL
        assert "another adaptalloc daemon's" in other.detail
        assert "--state-dir" in other.fix
        (tmp_path / "heartbeat").unlink()
        assert metrics_endpoint(settings).status == FAIL
    finally:
        metrics.close()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("redis://localhost:notaport/0", "fix the URL in --redis-url"),
        ("redis//localhost:6379/0", "fix the URL in --redis-url"),
    ],
)
def test_a_malformed_redis_url_asks_for_the_url_to_be_fixed(
    tmp_path: Path, url: str, words: str
) -> None:
    check = redis_answers(_doctor_settings(tmp_path, 0, redis_url=url))
    assert check.status == FAIL
    assert words in check.fix
    assert "start Redis" not in check.fix


def test_a_sizing_user_needs_a_root_daemon() -> None:
    # The daemon refuses to start with a sizing user unless it is root (it runs scontrol as
    # that account): the doctor, run as the daemon's account, says so before it does, and
    # its fix is the drop-in that runs the unit as root. No Slurm command is needed for it.
    check = enforced_limits(CliSlurm(), "root", allowed=False, euid=4242)
    assert check.status == FAIL
    assert "the daemon runs scontrol as the sizing user" in check.detail
    assert "adaptalloc.service.d/root.conf" in check.fix
    assert "User=root" in check.fix
