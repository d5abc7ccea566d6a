"""Logs under systemd: each line carries its syslog priority (``<4>`` for a warning), which
journald takes (SyslogLevelPrefix=yes, systemd's default) so that ``journalctl -p warning``
finds the daemon's warnings; anywhere else the lines are as before."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import structlog

from plugin.log_setup import configure_logging, journal_stream


@pytest.fixture
def restore_structlog() -> object:
    saved = structlog.get_config()
    yield None
    structlog.configure(**saved)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_lines_to_the_journal_carry_their_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_structlog: object
) -> None:
    path = tmp_path / "stream"
    with open(path, "w") as stream:
        seen = os.fstat(stream.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", f"{seen.st_dev}:{seen.st_ino}")
        assert journal_stream(stream)
        configure_logging(stream=stream, log_format="json", capture_warnings=False)
        log = structlog.get_logger("adaptalloc")
        log.info("decision", job_id=1)
        log.warning("release_pending", job_id=2)
        log.error("heartbeat_failed")
    lines = _lines(path)
    assert [line[:3] for line in lines] == ["<6>", "<4>", "<3>"]
    assert json.loads(lines[1][3:])["event"] == "release_pending"  # the rest is the JSON line


def test_lines_elsewhere_are_unprefixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_structlog: object
) -> None:
    other = tmp_path / "other"
    other.write_text("")
    seen = os.stat(other)
    monkeypatch.setenv("JOURNAL_STREAM", f"{seen.st_dev}:{seen.st_ino}")  # another file's
    path = tmp_path / "stream"
    with open(path, "w") as stream:
        assert not journal_stream(stream)
        configure_logging(stream=stream, log_format="json", capture_warnings=False)
        structlog.get_logger("adaptalloc").warning("release_pending")
    assert json.loads(_lines(path)[0])["event"] == "release_pending"
    monkeypatch.setenv("JOURNAL_STREAM", "garbage")
    with open(path) as stream:
        assert not journal_stream(stream)
