"""``adaptalloc install-files`` from a checkout: what is installed, kept and replaced."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import RunCli

REPO = Path(__file__).resolve().parents[3]


def _install(run_cli: RunCli, *args: str) -> dict[str, str]:
    result = run_cli("install-files", "--format", "json", *args)
    assert result.returncode == 0, result
    files = json.loads(result.stdout)["files"]
    return {Path(f["path"]).name: f["action"] for f in files}


def test_install_keep_and_force(tmp_path: Path, run_cli: RunCli) -> None:
    prefix = tmp_path / "root"
    first = _install(run_cli, "--prefix", str(prefix))
    assert set(first.values()) == {"installed"}
    assert len(first) == 7
    hook = prefix / "etc" / "slurm" / "job_submit.lua"
    assert hook.read_bytes() == (REPO / "deploy" / "slurm" / "job_submit.lua").read_bytes()
    conf = prefix / "etc" / "slurm" / "adaptalloc_submit.conf"
    assert "state_dir = /var/lib/adaptalloc\n" in conf.read_text()
    assert "@" not in conf.read_text()

    conf.write_text("state_dir = /srv/adaptalloc\n")  # an admin's edit
    hook.write_text("-- stale\n")
    again = _install(run_cli, "--prefix", str(prefix))
    assert again["adaptalloc_submit.conf"] == "kept"
    assert again["job_submit.lua"] == "replaced"
    assert conf.read_text() == "state_dir = /srv/adaptalloc\n"
    assert hook.read_bytes() == (REPO / "deploy" / "slurm" / "job_submit.lua").read_bytes()

    forced = _install(run_cli, "--prefix", str(prefix), "--force")
    assert set(forced.values()) == {"replaced"}
    assert "/srv/adaptalloc" not in conf.read_text()


def test_slurm_dir(tmp_path: Path, run_cli: RunCli) -> None:
    where = tmp_path / "slurm-etc"
    _install(run_cli, "--prefix", str(tmp_path / "root"), "--slurm-dir", str(where))
    assert (where / "job_submit.lua").is_file()
    assert (where / "adaptalloc_submit.conf").is_file()


def test_unwritable_prefix_is_one_error_line(tmp_path: Path, run_cli: RunCli) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run_cli("install-files", "--prefix", str(blocker))
    assert result.returncode == 1
    assert result.stdout == ""
    err = result.stderr
    assert err.startswith("adaptalloc: error: cannot write ")
    assert len(err.splitlines()) == 1
