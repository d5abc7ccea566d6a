"""plugin.cli.env_file on the env file up.sh really writes (the parser's own cases, and the
refusal of env files found lying around, are in tests/unit/plugin/test_local_env.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from plugin.cli.env_file import read_env_file

from .testbed import LocalCluster


@pytest.mark.integration
def test_reads_the_env_file_up_sh_wrote(local_cluster: LocalCluster) -> None:
    env_file = local_cluster.state_dir / "env"
    values = read_env_file(env_file)
    assert values == dict(local_cluster.env)
    assert Path(values["SLURM_CONF"]).is_file()
    assert values["REDIS_URL"].startswith("redis://:")


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
