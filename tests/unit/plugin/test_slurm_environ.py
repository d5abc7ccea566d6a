"""Every command the daemon runs gets a minimal environment (cli_backend.PASSED_ENV): what
each process received at exec is read from a stand-in on PATH (its /proc/PID/environ), so the
test sees exactly the variables Slurm's client would see, secrets included if any leaked."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugin.slurm import libslurm_backend
from plugin.slurm.cli_backend import CliSlurmReader, run_command
from plugin.slurm.writer import CliSlurm, Resize, SizingUser

#: What a Slurm command may get: cli_backend.PASSED_ENV, and the pinned time format.
ALLOWED = {"PATH", "SLURM_CONF", "LANG", "TZ", "SLURM_TIME_FORMAT"}
#: The daemon's environment in these tests: the allowed ones and what must stay behind.
SECRETS = {
    "REDIS_URL": "redis://:hunter2@127.0.0.1:6379/0",
    "ADAPTALLOC_REDIS_PASSWORD": "hunter2",
    "AWS_SECRET_ACCESS_KEY": "also-secret",
    "SQUEUE_FORMAT": "%i",  # would change what the parsers read
    "LD_PRELOAD": "",
}


@pytest.fixture
def place() -> Iterator[Path]:
    """A directory of stand-ins for Slurm's commands, each appending the environment it
    was started with to ``env.<pid>`` beside it (world-writable: the sizing user runs one)."""
    where = Path(tempfile.mkdtemp(prefix="aa-env-"))
    where.chmod(0o777)
    for name in ("scontrol", "squeue", "sinfo", "sacctmgr", "sacct"):
        script = where / name
        script.write_text(f'#!/bin/sh\ncat /proc/$$/environ > "{where}/env.$$"\ncat >/dev/null\n')
        script.chmod(0o755)
    try:
        yield where
    finally:
        shutil.rmtree(where)


def daemon_env(place: Path) -> dict[str, str]:
    return {
        **SECRETS,
        "PATH": f"{place}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "SLURM_CONF": "/etc/slurm/slurm.conf",
        "LANG": "C.UTF-8",
        "TZ": "Europe/Paris",
        "SLURM_TIME_FORMAT": "relative",
    }


def received(place: Path) -> list[dict[str, str]]:
    """The environment of every stand-in that ran."""
    out = []
    for dump in sorted(place.glob("env.*")):
        pairs = [item.split("=", 1) for item in dump.read_text().split("\0") if item]
        out.append(dict(pairs))
    return out


def assert_minimal(envs: list[dict[str, str]], count: int) -> None:
    assert len(envs) == count
    for env in envs:
        assert set(env) == ALLOWED, sorted(set(env) - ALLOWED)
        assert env["SLURM_TIME_FORMAT"] == "standard"
        assert env["TZ"] == "Europe/Paris"


def test_reads_and_writes_get_only_the_allowed_variables(place: Path) -> None:
    client = CliSlurm(env=daemon_env(place))
    client.resize([Resize(7, 2, 2, 30)])  # scontrol reading lines on stdin (Popen)
    client.release([7])  # scontrol as argv (run_command)
    client.set_admin_comment([7], "adaptalloc:v1 x")
    client.run("sinfo", "--version")
    assert_minimal(received(place), 4)


def test_a_reader_without_its_own_environment_filters_the_daemons(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in daemon_env(place).items():
        monkeypatch.setenv(name, value)
    CliSlurmReader().run("sacctmgr", "-n", "show", "user")
    run_command(["squeue", "--noheader"], 5.0)
    assert_minimal(received(place), 2)


@pytest.mark.skipif(os.geteuid() != 0, reason="running a command as another account needs root")
def test_the_sizing_users_scontrol_gets_the_same(place: Path) -> None:
    client = CliSlurm(env=daemon_env(place), sizing_user=SizingUser.named("nobody"))
    client.resize([Resize(7, 2, 2, 30)])
    client.restore([Resize(7, 1, 4, 60)])
    assert_minimal(received(place), 2)


def test_the_libslurm_probe_gets_the_same_and_where_its_code_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {**SECRETS, "LANG": "C.UTF-8", "PYTHONPATH": "/elsewhere"}.items():
        monkeypatch.setenv(name, value)
    dump = tmp_path / "probe-env"
    program = (
        f"import os, plugin; open({str(dump)!r}, 'w').write('\\0'.join(os.environ)); "
        "print(0x160508)"
    )
    monkeypatch.setattr(libslurm_backend, "_PROBE", program)
    assert libslurm_backend.probe_binding() == (22, 5)  # it imported this plugin package
    names = set(dump.read_text().split("\0"))
    assert names - {"LC_CTYPE"} <= ALLOWED | {"PYTHONPATH"}  # Python may coerce LC_CTYPE
    assert not names & set(SECRETS)
    root = str(Path(libslurm_backend.__file__).resolve().parents[2])
    assert libslurm_backend.probe_environ()["PYTHONPATH"] == root
