"""What the tests of deploy/slurm/job_submit.lua share: the daemon's heartbeat and spool as
the hook reads them, the hook's settings file, and whether a job came out held.

No daemon runs in these tests: the ``daemon_heartbeat`` fixture writes the heartbeat the
daemon would write and removes it afterwards, so the other tests' jobs are never held. The
``submit_conf`` fixture rewrites ``adaptalloc_submit.conf`` beside slurm.conf (the hook reads
it on every submission) and puts the original back at teardown. The modes file
the daemon publishes is removed before and after (the hook then enforces). A pytest plugin
(tests/conftest.py loads it): tests ask for the fixtures by name (``daemon_heartbeat``).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .testbed import LocalCluster, SlurmCLI

MARKER = "adaptalloc:v1:held"


class Heartbeat:
    """The daemon's heartbeat and spool files, as ``plugin/daemon/state.py`` writes them."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "heartbeat"
        self.spool = state_dir / "spool"
        self.modes = state_dir / "modes"

    def set_modes(self, text: str | None) -> None:
        """Write the modes file the daemon publishes (plugin/daemon/modes.py); None removes
        it (the hook then enforces, as with a daemon from before modes)."""
        if text is None:
            self.modes.unlink(missing_ok=True)
        else:
            self.modes.write_text(text)

    def beat(self, age_s: int = 0) -> None:
        """Write a heartbeat `age_s` seconds old (whole Unix seconds, as the daemon does)."""
        self.path.write_text(f"{int(time.time()) - age_s}\n")

    def write(self, text: str) -> None:
        """Write `text` as the heartbeat, whatever it is."""
        self.path.write_text(text)

    def stop(self) -> None:
        """Remove the heartbeat: the hook holds nothing from now on."""
        self.path.unlink(missing_ok=True)

    def spooled(self) -> int:
        """Wake-up lines in the spool so far (0 when it is missing or not a file)."""
        if not self.spool.is_file():
            return 0
        return self.spool.read_text().count("held ")

    def break_spool(self, how: str) -> None:
        """Make appending to the spool fail: ``directory`` (open fails) or ``full`` (a link
        to /dev/full: open and write succeed, the flush fails with ENOSPC)."""
        self.restore_spool()
        if how == "directory":
            self.spool.mkdir()
        elif how == "full":
            self.spool.symlink_to("/dev/full")
        else:
            raise ValueError(f"how must be 'directory' or 'full', not {how!r}")

    def restore_spool(self) -> None:
        """Remove whatever stands at the spool's path (the hook recreates the file)."""
        if self.spool.is_symlink() or self.spool.is_file():
            self.spool.unlink()
        elif self.spool.is_dir():
            shutil.rmtree(self.spool)


@pytest.fixture(name="daemon_heartbeat")
def fixture_daemon_heartbeat(local_cluster: LocalCluster) -> Iterator[Heartbeat]:
    """A fresh heartbeat for the test; heartbeat removed and spool a file again afterwards."""
    state = Path(local_cluster.env["ADAPTALLOC_STATE_DIR"]) / "adaptalloc"
    heartbeat = Heartbeat(state)
    heartbeat.set_modes(None)  # a daemon test may have left its modes: enforce, as before
    heartbeat.beat()
    try:
        yield heartbeat
    finally:
        heartbeat.stop()
        heartbeat.set_modes(None)
        heartbeat.restore_spool()


class SubmitConf:
    """``adaptalloc_submit.conf`` beside the testbed's slurm.conf."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.original = path.read_text()

    def write(self, text: str) -> None:
        """Replace the whole file with `text`."""
        self.path.write_text(text)

    def set(self, **values: str) -> None:
        """The original settings with these keys' lines replaced by ``key = value`` (values
        verbatim: a test may put a comment after one)."""
        lines = [
            line
            for line in self.original.splitlines()
            if line.split("=", 1)[0].strip() not in values
        ]
        lines.extend(f"{key} = {value}" for key, value in values.items())
        self.write("\n".join(lines) + "\n")

    @property
    def state_dir(self) -> str:
        """The original ``state_dir`` value."""
        for line in self.original.splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "state_dir":
                return value.strip()
        raise AssertionError(f"no state_dir in {self.path}")

    def restore(self) -> None:
        """Put the original file back."""
        self.path.write_text(self.original)


@pytest.fixture(name="submit_conf")
def fixture_submit_conf(local_cluster: LocalCluster) -> Iterator[SubmitConf]:
    """The hook's settings file, restored at teardown whatever the test wrote."""
    conf = SubmitConf(local_cluster.slurm_conf.parent / "adaptalloc_submit.conf")
    try:
        yield conf
    finally:
        conf.restore()


def held(slurm: SlurmCLI, job_id: int) -> tuple[bool, dict[str, str]]:
    """Whether the job is held (Reason=JobHeld*), and its ``scontrol show job`` fields."""
    fields = slurm.show_job(job_id)
    return fields.get("Reason", "").startswith("JobHeld"), fields


def untouched(slurm: SlurmCLI, job_id: int) -> bool:
    """Neither held nor marked: what the hook leaves alone."""
    is_held, fields = held(slurm, job_id)
    return not is_held and MARKER not in fields.get("AdminComment", "")
