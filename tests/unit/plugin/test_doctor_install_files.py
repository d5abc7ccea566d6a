"""``adaptalloc install-files`` from a checkout: what is installed, kept, replaced and refused,
and that a site's own job_submit.lua is never overwritten."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import RunCli

REPO = Path(__file__).resolve().parents[3]
SLURM = REPO / "deploy" / "slurm"
PIECES = {
    "adaptalloc_submit.lua",
    "job_submit.lua",
    "adaptalloc_submit.conf",
    "adaptalloc.toml",
    "policy.toml",
    "adaptalloc.service",
    "adaptalloc-orphans.service",
    "adaptalloc-orphans.timer",
    "adaptalloc.json",
    "adaptalloc-rules.yml",
}
SITE_HOOK = """-- the site's routing
function slurm_job_submit(job_desc, part_list, submit_uid)
    if job_desc.account == nil then return slurm.ERROR end
    return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end
return slurm.SUCCESS
"""


def _install(run_cli: RunCli, *args: str, code: int = 0) -> dict[str, dict[str, Any]]:
    result = run_cli("install-files", "--format", "json", *args)
    assert result.returncode == code, result
    files = json.loads(result.stdout)["files"]
    return {Path(f["path"]).name: f for f in files}


def _actions(files: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {name: f["action"] for name, f in files.items()}


def test_install_keep_and_force(tmp_path: Path, run_cli: RunCli) -> None:
    prefix = tmp_path / "root"
    first = _install(run_cli, "--prefix", str(prefix))
    assert set(first) == PIECES
    assert set(_actions(first).values()) == {"installed"}
    slurm = prefix / "etc" / "slurm"
    for name in ("adaptalloc_submit.lua", "job_submit.lua"):
        assert (slurm / name).read_bytes() == (SLURM / name).read_bytes()
    conf = slurm / "adaptalloc_submit.conf"
    assert "state_dir = /var/lib/adaptalloc\n" in conf.read_text()
    assert "@" not in conf.read_text()
    units = prefix / "etc" / "systemd" / "system"
    assert (units / "adaptalloc-orphans.timer").is_file()

    again = _install(run_cli, "--prefix", str(prefix))
    assert set(_actions(again).values()) == {"unchanged"}

    conf.write_text("state_dir = /srv/adaptalloc\n")  # an admin's edit
    edited = _install(run_cli, "--prefix", str(prefix))
    assert edited["adaptalloc_submit.conf"]["action"] == "kept"
    assert conf.read_text() == "state_dir = /srv/adaptalloc\n"

    forced = _install(run_cli, "--prefix", str(prefix), "--force")
    assert forced["adaptalloc_submit.conf"]["action"] == "replaced"
    backup = Path(forced["adaptalloc_submit.conf"]["backup"])
    assert backup.read_text() == "state_dir = /srv/adaptalloc\n"
    assert backup.name.startswith("adaptalloc_submit.conf.adaptalloc-old.")
    assert "/srv/adaptalloc" not in conf.read_text()


def test_an_older_file_of_ours_is_replaced_without_asking(tmp_path: Path, run_cli: RunCli) -> None:
    # The manifest records what was written: a file unchanged since is replaced on upgrade.
    prefix = tmp_path / "root"
    _install(run_cli, "--prefix", str(prefix))
    module = prefix / "etc" / "slurm" / "adaptalloc_submit.lua"
    manifest_path = prefix / "usr" / "share" / "adaptalloc" / "installed-files.json"
    manifest = json.loads(manifest_path.read_text())
    older = b"-- adaptalloc's previous module\n"
    module.write_bytes(older)
    import hashlib  # noqa: PLC0415

    manifest["files"][str(module)] = hashlib.sha256(older).hexdigest()
    manifest_path.write_text(json.dumps(manifest))
    upgraded = _install(run_cli, "--prefix", str(prefix))
    assert upgraded["adaptalloc_submit.lua"]["action"] == "replaced"
    assert "backup" not in upgraded["adaptalloc_submit.lua"]
    assert module.read_bytes() == (SLURM / "adaptalloc_submit.lua").read_bytes()


def test_a_file_not_ours_is_refused_with_its_diff_and_nothing_written(
    tmp_path: Path, run_cli: RunCli
) -> None:
    prefix = tmp_path / "root"
    dashboard = prefix / "usr" / "share" / "adaptalloc" / "grafana" / "adaptalloc.json"
    dashboard.parent.mkdir(parents=True)
    dashboard.write_text('{"title": "the site\'s own dashboard"}\n')
    result = run_cli("install-files", "--prefix", str(prefix))
    assert result.returncode == 1
    assert result.stderr.startswith("adaptalloc: error: refused to replace 1 file(s)")
    assert len(result.stderr.splitlines()) == 1
    assert f"refused    {dashboard}" in result.stdout
    assert '-{"title": "the site\'s own dashboard"}' in result.stdout  # the diff
    assert not (prefix / "etc").exists()  # nothing written at all
    assert "the site's own dashboard" in dashboard.read_text()

    forced = _install(run_cli, "--prefix", str(prefix), "--force")
    assert forced["adaptalloc.json"]["action"] == "replaced"
    assert "the site's own dashboard" in Path(forced["adaptalloc.json"]["backup"]).read_text()
    assert "the site's own dashboard" not in dashboard.read_text()


def test_a_site_s_own_job_submit_lua_is_kept_even_with_force(
    tmp_path: Path, run_cli: RunCli
) -> None:
    prefix = tmp_path / "root"
    slurm = prefix / "etc" / "slurm"
    slurm.mkdir(parents=True)
    hook = slurm / "job_submit.lua"
    hook.write_text(SITE_HOOK)
    for args in ((), ("--force",)):
        files = _install(run_cli, "--prefix", str(prefix), *args)
        assert files["job_submit.lua"]["action"] == "kept"
        assert "the site's own; add to it: " in files["job_submit.lua"]["note"]
        assert 'require("adaptalloc_submit")' in files["job_submit.lua"]["note"]
        assert files["adaptalloc_submit.lua"]["action"] in ("installed", "unchanged")
        assert hook.read_text() == SITE_HOOK
    assert not list(slurm.glob("job_submit.lua.adaptalloc-old.*"))


def test_text_output_says_what_to_do_next(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("install-files", "--prefix", str(tmp_path / "root"))
    assert result.returncode == 0, result
    slurm = tmp_path / "root" / "etc" / "slurm"
    assert f"installed  {slurm / 'adaptalloc_submit.lua'}" in result.stdout
    assert f"next: `touch {slurm / 'job_submit.lua'}`" in result.stdout


def test_slurm_dir(tmp_path: Path, run_cli: RunCli) -> None:
    where = tmp_path / "slurm-etc"
    _install(run_cli, "--prefix", str(tmp_path / "root"), "--slurm-dir", str(where))
    assert (where / "job_submit.lua").is_file()
    assert (where / "adaptalloc_submit.lua").is_file()
    assert (where / "adaptalloc_submit.conf").is_file()


def test_unwritable_prefix_is_one_error_line(tmp_path: Path, run_cli: RunCli) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run_cli("install-files", "--prefix", str(blocker))
    assert result.returncode == 1
    assert result.stdout == ""
    err = result.stderr
    assert err.startswith("adaptalloc: error: cannot ")
    assert len(err.splitlines()) == 1
