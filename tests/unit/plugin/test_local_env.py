"""Environment injection: adaptalloc reads no env file it finds lying around, and
``--env-file`` takes only a file a privileged process may trust.

The hostile-directory tests run the real daemon (``daemon --once``) with stand-in Slurm
commands on PATH that record the environment they were given: that environment is what
squeue and scontrol would run with, as root, beside slurmctld: a fresh interpreter per case,
so they are ``slow`` (run by ``--slow``, as deploy/test.sh and CI do). The refusals need no
process boundary (nothing is applied before the error) and run in this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from plugin.cli.env_file import (
    FORBIDDEN_PREFIXES,
    LocalEnvError,
    apply_env,
    load_env_file,
    parse_env,
    read_env_file,
)
from plugin.daemon.state import default_state_dir

from .conftest import LU_CSV, REPO_ROOT, RunCli, assert_one_error_line, json_document

HOSTILE_ENV = (
    "export LD_PRELOAD='{dir}/evil.so'\n"
    "export SLURM_CONF='{dir}/slurm.conf'\n"
    "export REDIS_URL='redis://evil.invalid:1/0'\n"
)
#: What the product must never take from a file it was not given.
INJECTED = ("LD_PRELOAD", "SLURM_CONF", "REDIS_URL")
CLI_TIMEOUT_S = 300


def _fake_slurm(bin_dir: Path, record_dir: Path) -> None:
    """squeue, sinfo, scontrol and sacct that write their environment to record_dir, then fail."""
    bin_dir.mkdir()
    for name in ("squeue", "sinfo", "scontrol", "sacct"):
        exe = bin_dir / name
        exe.write_text(f'#!/bin/sh\nenv > "{record_dir}/{name}.env"\nexit 1\n')
        exe.chmod(0o755)


def _recorded_env(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def _clean_env(bin_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment without the variables under test, fake Slurm first on PATH."""
    skip = {*INJECTED, "ADAPTALLOC_STATE_DIR", "ADAPTALLOC_CONFIG"}
    env = {key: value for key, value in os.environ.items() if key not in skip}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", PYTHONPATH=str(REPO_ROOT), **extra)
    return env


def _daemon_once(
    cwd: Path, env: Mapping[str, str], *global_args: str
) -> subprocess.CompletedProcess[str]:
    config = cwd / "daemon.toml"
    config.write_text("[daemon]\nmetrics_port = 0\nlearn = false\n")
    return subprocess.run(  # noqa: S603 - our interpreter and module, no shell
        [
            sys.executable,
            "-m",
            "plugin",
            "-q",
            *global_args,
            "daemon",
            "--once",
            "--config",
            str(config),
            "--state-dir",
            str(cwd / "state"),
        ],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("subdir", ["", "deeper/still"])
def test_a_hostile_local_env_in_the_working_directory_is_ignored(
    tmp_path: Path, subdir: str
) -> None:
    # Failed before the fix: the daemon applied /tmp/…/x/.local/env (from the working
    # directory or any parent) and squeue ran with its LD_PRELOAD, SLURM_CONF, REDIS_URL.
    hostile = tmp_path / "x"
    (hostile / ".local").mkdir(parents=True)
    (hostile / ".local" / "env").write_text(HOSTILE_ENV.format(dir=hostile))
    (hostile / ".local" / "env").chmod(0o600)
    cwd = hostile / subdir
    cwd.mkdir(parents=True, exist_ok=True)
    records = tmp_path / "records"
    records.mkdir()
    _fake_slurm(tmp_path / "bin", records)

    result = _daemon_once(cwd, _clean_env(tmp_path / "bin"))

    assert result.returncode == 0, result.stderr
    seen = _recorded_env(records / "squeue.env")
    assert seen["PATH"].startswith(str(tmp_path / "bin"))  # the record is squeue's own
    assert [key for key in INJECTED if key in seen] == []
    assert "evil" not in result.stderr


@pytest.mark.slow
def test_env_file_option_sets_what_squeue_sees(tmp_path: Path) -> None:
    env_file = tmp_path / "testbed.env"
    env_file.write_text("export SLURM_CONF='/nonexistent/slurm.conf'\nADAPTALLOC_X=1\n")
    env_file.chmod(0o600)
    records = tmp_path / "records"
    records.mkdir()
    _fake_slurm(tmp_path / "bin", records)

    result = _daemon_once(tmp_path, _clean_env(tmp_path / "bin"), "--env-file", str(env_file))

    assert result.returncode == 0, result.stderr
    seen = _recorded_env(records / "squeue.env")
    assert seen["SLURM_CONF"] == "/nonexistent/slurm.conf"
    # Slurm's commands get a minimal environment (plugin/slurm/cli_backend.py): the file's
    # other variables reach adaptalloc, not them.
    assert "ADAPTALLOC_X" not in seen


@pytest.mark.slow
def test_env_file_option_does_not_override_what_is_set(tmp_path: Path) -> None:
    env_file = tmp_path / "testbed.env"
    env_file.write_text("export SLURM_CONF='/from/file'\n")
    env_file.chmod(0o600)
    records = tmp_path / "records"
    records.mkdir()
    _fake_slurm(tmp_path / "bin", records)
    env = _clean_env(tmp_path / "bin", SLURM_CONF="/from/environment")

    result = _daemon_once(tmp_path, env, "--env-file", str(env_file))

    assert result.returncode == 0, result.stderr
    assert _recorded_env(records / "squeue.env")["SLURM_CONF"] == "/from/environment"


@pytest.mark.parametrize(
    ("content", "mode", "problem"),
    [
        ("export LD_PRELOAD='/tmp/evil.so'\n", 0o600, "may not set LD_PRELOAD"),
        ("PYTHONPATH=/tmp/evil\n", 0o600, "may not set PYTHONPATH"),
        ("ld_library_path=/tmp\n", 0o600, "may not set ld_library_path"),
        ("SLURM_CONF=/tmp/slurm.conf\n", 0o620, "writable by group or others (mode 0620)"),
        ("SLURM_CONF=/tmp/slurm.conf\n", 0o606, "writable by group or others (mode 0606)"),
        ("this is not an assignment\n", 0o600, "expected KEY=VALUE"),
    ],
)
def test_env_file_option_refuses_with_one_error_line(
    run_cli: RunCli, tmp_path: Path, content: str, mode: int, problem: str
) -> None:
    env_file = tmp_path / "refused.env"
    env_file.write_text(content)
    env_file.chmod(mode)
    line = assert_one_error_line(run_cli("--env-file", env_file, "fit", LU_CSV))
    assert problem in line
    assert str(env_file) in line


def test_env_file_option_refuses_a_missing_file(run_cli: RunCli, tmp_path: Path) -> None:
    line = assert_one_error_line(run_cli("--env-file", tmp_path / "absent", "fit", LU_CSV))
    assert "cannot read env file" in line


def test_env_file_option_with_a_good_file_runs_the_command(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file sets ADAPTALLOC_X in this process's environment: setenv then delenv leaves it
    # unset for the command and has monkeypatch remove it again afterwards.
    monkeypatch.setenv("ADAPTALLOC_X", "")
    monkeypatch.delenv("ADAPTALLOC_X")
    env_file = tmp_path / "good.env"
    env_file.write_text("export ADAPTALLOC_X='1'\n")
    env_file.chmod(0o644)
    assert json_document(run_cli("--env-file", env_file, "fit", LU_CSV, "--format", "json"))
    assert os.environ["ADAPTALLOC_X"] == "1"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_read_env_file_refuses_a_file_owned_by_another_user(tmp_path: Path) -> None:
    env_file = tmp_path / "theirs.env"
    env_file.write_text("SLURM_CONF=/tmp/slurm.conf\n")
    env_file.chmod(0o600)
    os.chown(env_file, 65534, 65534)
    with pytest.raises(LocalEnvError, match="owned by uid 65534, neither root nor the caller"):
        read_env_file(env_file)


def test_read_env_file_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    for path in (tmp_path, fifo):  # a FIFO is refused at once, not waited on
        with pytest.raises(LocalEnvError, match="not a regular file"):
            read_env_file(path)


def test_read_env_file_refuses_non_utf8_and_oversized_files(tmp_path: Path) -> None:
    binary = tmp_path / "binary.env"
    binary.write_bytes(b"A='\xff'\n")
    binary.chmod(0o600)
    with pytest.raises(LocalEnvError, match="not UTF-8"):
        read_env_file(binary)
    huge = tmp_path / "huge.env"
    huge.write_text("# padding\n" * 10_000)
    huge.chmod(0o600)
    with pytest.raises(LocalEnvError, match="larger than"):
        read_env_file(huge)


def test_load_env_file_applies_without_overriding(tmp_path: Path) -> None:
    env_file = tmp_path / "ok.env"
    env_file.write_text("export A='1'\nB=2\n")
    env_file.chmod(0o600)
    environ = {"B": "set"}
    assert load_env_file(env_file, environ) == {"A": "1"}
    assert environ == {"A": "1", "B": "set"}


def test_parses_quoting_comments_and_export() -> None:
    text = """
# a comment
export A='single quoted $HOME'
B="double quoted"
C=plain
D='it'\\''s'
E=
export F='a=b=c'  # trailing comment
"""
    assert parse_env(text) == {
        "A": "single quoted $HOME",
        "B": "double quoted",
        "C": "plain",
        "D": "it's",
        "E": "",
        "F": "a=b=c",
    }


@pytest.mark.parametrize(
    "line",
    ["not an assignment", "A=unbalanced 'quote", "1A=x", "A=x B=y", "export"],
)
def test_rejects_lines_that_are_not_one_assignment(line: str) -> None:
    with pytest.raises(LocalEnvError, match="env:1"):
        parse_env(line, source="env")


@pytest.mark.parametrize("prefix", FORBIDDEN_PREFIXES)
def test_rejects_variables_that_choose_the_code_a_process_loads(prefix: str) -> None:
    with pytest.raises(LocalEnvError, match=f"env:2: an env file may not set {prefix}X"):
        parse_env(f"OK=1\nexport {prefix}X=y\n", source="env")


def test_apply_env_never_overrides_what_is_set() -> None:
    environ = {"SLURM_CONF": "/etc/slurm/slurm.conf", "EMPTY": ""}
    applied = apply_env({"SLURM_CONF": "/x", "EMPTY": "y", "REDIS_URL": "redis://"}, environ)
    assert applied == {"REDIS_URL": "redis://"}
    assert environ == {"SLURM_CONF": "/etc/slurm/slurm.conf", "EMPTY": "", "REDIS_URL": "redis://"}


def test_the_daemon_state_dir_default_is_the_products(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Failed before the fix: $ADAPTALLOC_STATE_DIR (a testbed variable) chose the directory
    # whose heartbeat job_submit.lua trusts.
    monkeypatch.setenv("ADAPTALLOC_STATE_DIR", str(tmp_path))
    assert default_state_dir("") == Path("/var/lib/adaptalloc")
    assert default_state_dir("/srv/adaptalloc") == Path("/srv/adaptalloc")
