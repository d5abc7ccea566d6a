"""adaptalloc's hook composed into a site's own job_submit.lua, in the real slurmctld.

A production cluster already has a job_submit.lua (here: one that rejects every job naming
no account). ``adaptalloc install-files`` puts the module beside it and leaves the site's
script alone; the admin adds the lines the admin guide gives (taken here from the shipped
example, between its ``adaptalloc: begin`` and ``adaptalloc: end`` markers, and one call in
each function); then both policies hold: the site's rejection, and adaptalloc's hold of a
moldable job and its refusal of the user's resize while the job is held.

The testbed's job_submit.lua and module links are replaced for the test and put back (and
reloaded) at teardown. No daemon runs: ``daemon_heartbeat`` makes the hook hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .job_submit_harness import MARKER, Heartbeat, held, untouched
from .testbed import PROJECT_ROOT, LocalCluster, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

EXAMPLE = PROJECT_ROOT / "deploy" / "slurm" / "job_submit.lua"
MODULE = PROJECT_ROOT / "deploy" / "slurm" / "adaptalloc_submit.lua"
#: The site's message to a job naming no account.
NO_ACCOUNT = "site policy: name your account with --account"

#: The site's own script, before adaptalloc: every job must name its account.
SITE_SCRIPT = f"""-- The site's job_submit.lua: accounts are mandatory here.
function slurm_job_submit(job_desc, part_list, submit_uid)
    if job_desc.account == nil or job_desc.account == "" then
        slurm.log_user("{NO_ACCOUNT}")
        return slurm.ERROR
    end
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end

return slurm.SUCCESS
"""


def adaptalloc_block() -> str:
    """The loading block of the shipped example, markers included (what the guide shows)."""
    text = EXAMPLE.read_text()
    start = text.index("-- adaptalloc: begin")
    end = text.index("-- adaptalloc: end")
    return text[start : text.index("\n", end) + 1]


def composed(site: str) -> str:
    """The site's script with adaptalloc added as the guide says: the block at the top, the
    submit call last in slurm_job_submit (after the site's checks), the modify call in
    slurm_job_modify."""
    submit_ok = "        return slurm.ERROR\n    end\n    return slurm.SUCCESS\n"
    modify_ok = "modify_uid)\n    return slurm.SUCCESS\n"
    assert site.count(submit_ok) == 1
    assert site.count(modify_ok) == 1
    site = site.replace(
        submit_ok,
        "        return slurm.ERROR\n    end\n"
        "    return adaptalloc.job_submit(job_desc, part_list, submit_uid)\n",
    )
    site = site.replace(
        modify_ok,
        "modify_uid)\n    return adaptalloc.job_modify(job_desc, job_rec, part_list, modify_uid)\n",
    )
    return adaptalloc_block() + "\n" + site


class SiteScript:
    """Writes slurm.conf's job_submit.lua so that slurmctld reloads it on the next
    submission: slurmctld reloads a script whose mtime (whole seconds) is later than the one
    it loaded last, and earlier tests' bumps may have left that one ahead of the clock, so
    every write here is stamped past every mtime this test or the testbed used."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.latest = int(path.stat().st_mtime)

    def stamp(self, target: Path) -> None:
        self.latest = max(int(time.time()) + 2, self.latest + 1)
        os.utime(target, (self.latest, self.latest))

    def write(self, text: str) -> None:
        self.path.write_text(text)
        self.stamp(self.path)


@pytest.fixture
def site(local_cluster: LocalCluster) -> Iterator[SiteScript]:
    """slurm.conf's directory with the site's own job_submit.lua and no adaptalloc module;
    the testbed's links put back (and the script reloaded) at teardown."""
    etc = local_cluster.slurm_conf.parent
    script, module = etc / "job_submit.lua", etc / "adaptalloc_submit.lua"
    site = SiteScript(script)
    script.unlink()
    module.unlink()
    site.write(SITE_SCRIPT)
    try:
        yield site
    finally:
        script.unlink()
        module.unlink(missing_ok=True)
        module.symlink_to(MODULE)
        script.symlink_to(EXAMPLE)
        site.stamp(EXAMPLE)


def _adaptalloc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our interpreter and module, no shell
        [sys.executable, "-m", "plugin", *args],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_module_composed_into_a_site_hook_keeps_both_policies(
    site: SiteScript,
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_heartbeat: Heartbeat,
    tmp_path: Path,
) -> None:
    site_etc = site.path.parent
    # install-files beside the site's script: the module installed, the script left alone.
    installed = _adaptalloc(
        "install-files",
        "--prefix",
        str(tmp_path / "root"),
        "--slurm-dir",
        str(site_etc),
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert installed.returncode == 0, installed.stderr
    files = {Path(f["path"]).name: f for f in json.loads(installed.stdout)["files"]}
    assert files["adaptalloc_submit.lua"]["action"] == "installed"
    assert files["job_submit.lua"]["action"] == "kept"
    assert "add to it" in files["job_submit.lua"]["note"]
    assert (site_etc / "job_submit.lua").read_text() == SITE_SCRIPT
    assert (site_etc / "adaptalloc_submit.lua").read_bytes() == MODULE.read_bytes()

    # Before the admin adds the lines: the site's policy alone, nothing held.
    plain = submit_job("--nodes=1-3", "--account=root", wrap="sleep 1", as_user=slurm.test_user)
    assert untouched(slurm, plain)

    site.write(composed(SITE_SCRIPT))
    doctor = _adaptalloc(
        "doctor", "--no-probe", "--format", "json", "--slurm-conf", str(slurm_conf(site_etc)),
        cwd=tmp_path,
    )  # fmt: skip
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["hook_module"]["status"] == "ok", checks["hook_module"]
    assert checks["hook_script"]["status"] == "ok", checks["hook_script"]

    # The site's policy: a job naming no account is rejected, with the site's message.
    rejected = slurm.run(
        "sbatch", "--nodes=1-3", "--output=/dev/null", f"--chdir={tmp_path}", "--wrap", "true",
        check=False,
    )  # fmt: skip
    assert rejected.returncode != 0
    assert NO_ACCOUNT in rejected.stderr
    # adaptalloc's: a moldable job of an account is held for sizing, a rigid one is not.
    moldable = submit_job(
        "--nodes=1-3", "--account=root", "--begin=now+3600", wrap="true", as_user=slurm.test_user
    )
    is_held, fields = held(slurm, moldable)
    assert is_held, fields
    assert fields["AdminComment"] == MARKER
    rigid = submit_job("--nodes=2", "--account=root", wrap="sleep 1", as_user=slurm.test_user)
    assert untouched(slurm, rigid)
    # ... and its user may not resize it while it is held (the module's job_modify).
    refused = slurm.run(
        "scontrol", "update", f"JobId={moldable}", "NumNodes=1-1", check=False,
        as_user=slurm.test_user,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "can not be altered now" in refused.stderr
    assert slurm.show_job(moldable)["NumNodes"] == fields["NumNodes"]


def slurm_conf(etc: Path) -> Path:
    return etc / "slurm.conf"
