"""Whether the daemon may resize where Slurm enforces limits (plugin/slurm/enforcement.py),
without Slurm: what it reads of ``scontrol show config`` and ``sacctmgr``, and the rule.
The testbed shows the Slurm side: tests/integration/test_security_limits.py."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from plugin.slurm.enforcement import judge, limits_enforced, sizer_problem
from plugin.slurm.errors import SlurmCommandError
from plugin.slurm.factory import slurm_client
from plugin.slurm.writer import CliSlurm, Resize, SizingUser

CONFIG = "Configuration data as of 2026-11-27T09:00:00\nSlurmUser               = slurm(64030)\n"
SIZER = SizingUser("aasizer", 999, 999)


@pytest.mark.parametrize(
    ("line", "enforced"),
    [
        ("AccountingStorageEnforce = none", False),
        ("AccountingStorageEnforce = associations,qos", False),  # a valid QOS only
        ("AccountingStorageEnforce = associations,limits,qos", True),
        ("AccountingStorageEnforce = Associations,Limits", True),
        ("AccountingStorageEnforce = associations,limits,qos,safe", True),
        ("AccountingStorageEnforce = safe", True),
        ("", False),  # not printed: nothing enforced
    ],
)
def test_limits_enforced_reads_accounting_storage_enforce(line: str, enforced: bool) -> None:
    assert limits_enforced(lambda *args: CONFIG + line + "\n") is enforced


def test_limits_enforced_is_unknown_when_scontrol_fails() -> None:
    def fails(*args: str) -> str:
        raise SlurmCommandError("scontrol show config failed (exit 1): slurmctld down")

    assert limits_enforced(fails) is None


def sacctmgr_says(level: str) -> object:
    def run(*args: str) -> str:
        return CONFIG if args[:2] == ("scontrol", "show") else level + "\n"

    return run


@pytest.mark.parametrize(
    ("sizer", "level", "euid", "problem"),
    [
        (SIZER, "None", 0, None),  # a plain account: its updates are checked
        (SIZER, "Operator", 0, "is an Operator"),
        (SIZER, "Administrator", 0, "is an Administrator"),
        (SIZER, "", 0, "of unknown admin level"),  # sacctmgr printed nothing
        (SizingUser("slurm", 64030, 64030), "None", 0, "is root or SlurmUser"),  # SlurmUser
        (SizingUser("root", 0, 0), "None", 0, "is root or SlurmUser"),
        (SIZER, "None", 1000, "must run as root"),
    ],
)
def test_sizer_problem(sizer: SizingUser, level: str, euid: int, problem: str | None) -> None:
    found = sizer_problem(sacctmgr_says(level), sizer, euid=euid)  # type: ignore[arg-type]
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


@pytest.mark.parametrize(
    ("enforced", "allowed", "sizer", "problem", "resize", "retry"),
    [
        (False, False, None, None, True, False),  # nothing enforced: resize as ever
        (True, False, None, None, False, True),  # enforced, no sizer: release as submitted
        (None, False, None, None, False, True),  # unknown counts as enforced, asked again
        (True, False, SIZER, None, True, False),  # the sizer's changes are checked
        (None, False, SIZER, None, True, False),
        (True, False, SIZER, "is an Operator", False, True),
        (True, True, None, None, True, False),  # the admin's choice, logged
        (True, True, SIZER, "is an Operator", True, False),
    ],
)
def test_judge(
    enforced: bool | None,
    allowed: bool,
    sizer: SizingUser | None,
    problem: str | None,
    resize: bool,
    retry: bool,
) -> None:
    verdict = judge(enforced, allowed, sizer, problem)
    assert (verdict.resize, verdict.retry) == (resize, retry)
    # Whatever keeps Slurm's limits unchecked or stops resizing is said; the rest is quiet.
    assert bool(verdict.note) == (enforced is not False and (allowed or not resize))
    if problem is not None and not resize:
        assert problem in verdict.note


def test_a_sizing_user_must_exist() -> None:
    assert SizingUser.named("root") == SizingUser("root", 0, 0)
    with pytest.raises(SlurmCommandError, match="not an account on this host"):
        SizingUser.named("no-such-account-aa")


def test_a_sizing_user_needs_a_root_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SlurmCommandError, match="needs the daemon to run as root"):
        slurm_client("cli", sizing_user="root")


def test_with_a_sizing_user_the_client_is_scontrols() -> None:
    client = slurm_client("auto", sizing_user="root")
    assert isinstance(client, CliSlurm)  # never libslurm's one update per job
    assert client.sizing_user == SizingUser("root", 0, 0)
    assert slurm_client("cli").sizing_user is None  # type: ignore[attr-defined]


@pytest.mark.skipif(os.geteuid() != 0, reason="running a command as another account needs root")
def test_resizes_run_as_the_sizing_user_and_restores_as_the_daemon() -> None:
    """Which account runs ``scontrol``: a stand-in on PATH writes its uid and the lines it
    read (what is tested is the writer's process, not Slurm; the testbed shows Slurm's side)."""
    sizer = SizingUser.named("nobody")
    place = Path(tempfile.mkdtemp(prefix="aa-sizer-"))  # not pytest's 0700 tmp: nobody runs it
    try:
        place.chmod(0o777)
        log = place / "calls"
        script = place / "scontrol"
        script.write_text(f'#!/bin/sh\n{{ id -u; cat; }} >> "{log}"\n')
        script.chmod(0o755)
        client = CliSlurm(
            env=dict(os.environ, PATH=f"{place}:{os.environ['PATH']}"), sizing_user=sizer
        )
        client.resize([Resize(7, 2, 2, 30)])
        client.restore([Resize(7, 1, 4, 60)])
        lines = log.read_text().split()
    finally:
        shutil.rmtree(place)
    assert lines == [
        str(sizer.uid), "update", "JobId=7", "NumNodes=2-2", "TimeLimit=30",
        str(os.geteuid()), "update", "JobId=7", "NumNodes=1-4", "TimeLimit=60",
    ]  # fmt: skip
