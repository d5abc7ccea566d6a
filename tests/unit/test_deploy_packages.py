"""deploy/local/lib.sh's package installs: waiting for apt's locks, and leaving the installed
services disabled. Driven through bash with stand-ins for apt-get and systemctl on PATH (the
real ones need root and a package to install; the installs were tried by hand on Debian 12
with uuid-runtime while another process held the lists and dpkg locks)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "deploy" / "local" / "lib.sh"

FAKE_APT = """#!/bin/bash
# Fails with apt's lock error while $LOCKED_CALLS calls remain, then succeeds; logs its argv.
echo "$*" >> "$CALLS"
n=$(wc -l < "$CALLS")
if (( n <= LOCKED_CALLS )); then
    echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)"
    exit 100
fi
if [[ -n "${FAIL_OTHERWISE:-}" ]]; then echo "E: Unable to locate package nope"; exit 100; fi
echo "ok"
"""

FAKE_SYSTEMCTL = """#!/bin/bash
# systemctl disable --no-reload UNIT: removes UNIT's links under $SYSTEMD_ETC, logs the unit.
[[ "$1" == disable ]] || exit 1
unit="${@: -1}"
echo "$unit" >> "$DISABLED"
find "$SYSTEMD_ETC" -name "$unit" -type l -delete
"""


def _bin(tmp_path: Path) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, text in (("apt-get", FAKE_APT), ("systemctl", FAKE_SYSTEMCTL)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    return bindir


def _bash(tmp_path: Path, script: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "PATH": f"{_bin(tmp_path)}:{os.environ['PATH']}",
        "CALLS": str(tmp_path / "calls"),
        "DISABLED": str(tmp_path / "disabled"),
        **env,
    }
    bash = shutil.which("bash") or "/bin/bash"
    return subprocess.run(  # noqa: S603 - bash on the project's own script and this test's text
        [bash, "-c", f"source {LIB}; AS_ROOT=(); APT_LOCK_RETRY_S=0.05; {script}"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_apt_waits_while_a_lock_is_held(tmp_path: Path) -> None:
    done = _bash(tmp_path, "apt_get_waiting $((SECONDS + 30)) update -q", LOCKED_CALLS="3")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 4
    # apt itself waits for dpkg's locks too, for what is left of the deadline.
    assert all(c.startswith("-o DPkg::Lock::Timeout=") and c.endswith(" update -q") for c in calls)
    assert done.stdout.count("retrying") == 3


def test_apt_gives_up_at_the_deadline(tmp_path: Path) -> None:
    done = _bash(tmp_path, "apt_get_waiting $((SECONDS + 1)) update", LOCKED_CALLS="1000")
    assert done.returncode == 100
    assert "Could not get lock" in done.stdout


def test_other_apt_failures_are_not_retried(tmp_path: Path) -> None:
    done = _bash(
        tmp_path,
        "apt_get_waiting $((SECONDS + 30)) install nope",
        LOCKED_CALLS="0",
        FAIL_OTHERWISE="1",
    )
    assert done.returncode == 100
    assert len((tmp_path / "calls").read_text().splitlines()) == 1


def test_only_the_units_the_install_enabled_are_disabled(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    wants = etc / "systemd" / "system" / "multi-user.target.wants"
    wants.mkdir(parents=True)
    rc2 = etc / "rc2.d"
    rc2.mkdir()
    (etc / "init.d").mkdir()
    (wants / "admins-own.service").symlink_to("/lib/systemd/system/admins-own.service")
    snapshot = (
        f"SYSTEMD_ETC_DIR={etc}/systemd/system RC_ETC_DIR={etc}; "
        f"enabled_units > {tmp_path}/before; "
        # what a postinst does: enable the service, an alias, a sysv start link
        f"ln -s /lib/systemd/system/mariadb.service {wants}/mariadb.service; "
        f"ln -s /lib/systemd/system/redis-server.service {wants}/redis-server.service; "
        f"ln -s /lib/systemd/system/redis-server.service {etc}/systemd/system/redis.service; "
        f"ln -s ../init.d/munge {rc2}/S01munge; "
        f"disable_new_units {tmp_path}/before"
    )
    done = _bash(tmp_path, snapshot, SYSTEMD_ETC=str(etc / "systemd" / "system"))
    assert done.returncode == 0, done.stdout + done.stderr
    disabled = sorted((tmp_path / "disabled").read_text().split())
    assert disabled == ["mariadb.service", "redis-server.service"]
    assert [p.name for p in wants.iterdir()] == ["admins-own.service"]
    # the alias and the sysv link are left (the stand-ins do not remove them): said aloud
    assert "still enabled for the next boot" in done.stderr
