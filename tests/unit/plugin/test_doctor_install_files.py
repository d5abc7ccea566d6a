"""``adaptalloc install-files`` from a checkout: what is installed, kept and replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plugin.cli.root import run

REPO = Path(__file__).resolve().parents[3]


def _install(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, str]:
    assert run(["install-files", "--format", "json", *args]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    return {Path(f["path"]).name: f["action"] for f in files}


def test_install_keep_and_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefix = tmp_path / "root"
    first = _install(capsys, "--prefix", str(prefix))
    assert set(first.values()) == {"installed"}
    assert len(first) == 7
    hook = prefix / "etc" / "slurm" / "job_submit.lua"
    assert hook.read_bytes() == (REPO / "deploy" / "slurm" / "job_submit.lua").read_bytes()
    conf = prefix / "etc" / "slurm" / "adaptalloc_submit.conf"
    assert "state_dir = /var/lib/adaptalloc\n" in conf.read_text()
    assert "@" not in conf.read_text()

    conf.write_text("state_dir = /srv/adaptalloc\n")  # an admin's edit
    hook.write_text("-- stale\n")
    again = _install(capsys, "--prefix", str(prefix))
    assert again["adaptalloc_submit.conf"] == "kept"
    assert again["job_submit.lua"] == "replaced"
    assert conf.read_text() == "state_dir = /srv/adaptalloc\n"
    assert hook.read_bytes() == (REPO / "deploy" / "slurm" / "job_submit.lua").read_bytes()

    forced = _install(capsys, "--prefix", str(prefix), "--force")
    assert set(forced.values()) == {"replaced"}
    assert "/srv/adaptalloc" not in conf.read_text()


def test_slurm_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    where = tmp_path / "slurm-etc"
    _install(capsys, "--prefix", str(tmp_path / "root"), "--slurm-dir", str(where))
    assert (where / "job_submit.lua").is_file()
    assert (where / "adaptalloc_submit.conf").is_file()


def test_unwritable_prefix_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert run(["install-files", "--prefix", str(blocker)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("adaptalloc: error: cannot write ")
    assert len(err.splitlines()) == 1
