"""plugin.local_env on the env file up.sh really writes, and on tricky text.

The parser cases need no testbed (they carry no integration marker); they live here
beside the real-file test because this module and deploy/local/ change together.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from plugin.local_env import (
    LocalEnvError,
    apply_env,
    find_env_file,
    load_local_env,
    parse_env,
    read_env_file,
)

from .testbed import LocalCluster


@pytest.mark.integration
def test_reads_the_env_file_up_sh_wrote(local_cluster: LocalCluster) -> None:
    env_file = local_cluster.state_dir / "env"
    values = read_env_file(env_file)
    assert values == dict(local_cluster.env)
    assert Path(values["SLURM_CONF"]).is_file()
    assert values["REDIS_URL"].startswith("redis://:")
    assert find_env_file(environ={"ADAPTALLOC_STATE_DIR": str(local_cluster.state_dir)}) == (
        env_file
    )


@pytest.mark.integration
def test_a_shell_sourcing_the_env_file_sees_the_same_values(local_cluster: LocalCluster) -> None:
    env_file = local_cluster.state_dir / "env"
    proc = subprocess.run(  # noqa: S603 - fixed argument list; the file is ours
        ["/bin/sh", "-c", '. "$1" && env', "sh", str(env_file)],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    seen = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    for key, value in read_env_file(env_file).items():
        assert seen[key] == value


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


def test_apply_env_never_overrides_what_is_set() -> None:
    environ = {"SLURM_CONF": "/etc/slurm/slurm.conf", "EMPTY": ""}
    applied = apply_env({"SLURM_CONF": "/x", "EMPTY": "y", "REDIS_URL": "redis://"}, environ)
    assert applied == {"REDIS_URL": "redis://"}
    assert environ == {"SLURM_CONF": "/etc/slurm/slurm.conf", "EMPTY": "", "REDIS_URL": "redis://"}


def test_finds_the_env_file_upwards_from_a_subdirectory(tmp_path: Path) -> None:
    (tmp_path / ".local").mkdir()
    (tmp_path / ".local" / "env").write_text("export X='1'\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_env_file(deep, environ={}) == tmp_path / ".local" / "env"
    environ: dict[str, str] = {}
    assert load_local_env(deep, environ) == {"X": "1"}
    assert environ == {"X": "1"}


def test_an_explicit_state_dir_without_env_file_means_none(tmp_path: Path) -> None:
    (tmp_path / ".local").mkdir()
    (tmp_path / ".local" / "env").write_text("X=1\n")
    empty_state = tmp_path / "elsewhere"
    empty_state.mkdir()
    environ = {"ADAPTALLOC_STATE_DIR": str(empty_state)}
    assert find_env_file(tmp_path, environ) is None
    assert load_local_env(tmp_path, environ) == {}
