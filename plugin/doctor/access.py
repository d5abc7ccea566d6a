"""Checks of the daemon's state directory as slurmctld sees it: SlurmUser must append to the
spool and read the heartbeat; the heartbeat must be fresh (whole seconds, not from the future).

Access is judged from the permission bits along the path for SlurmUser's uid and groups (the
doctor usually runs as another account, so it cannot just try): every directory on the way
needs x, the spool w (or, before the hook first wrote it, the directory w), the heartbeat r.
ACLs are not read; root may do anything.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from plugin.doctor.check import FAIL, OK, Check
from plugin.errors import printable

__all__ = [
    "Identity",
    "heartbeat",
    "identity_of",
    "judge_heartbeat",
    "missing_access",
    "state_dir_access",
]

_BITS = {
    "r": (stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH),
    "w": (stat.S_IWUSR, stat.S_IWGRP, stat.S_IWOTH),
    "x": (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH),
}


@dataclass(frozen=True)
class Identity:
    """A Unix account as the kernel checks it: uid and every group id."""

    name: str
    uid: int
    gids: frozenset[int]


def identity_of(user: str) -> Identity | None:
    """The account named `user` (a name or a number), None when unknown here."""
    try:
        entry = pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except (KeyError, OverflowError):
        return None
    gids = frozenset(os.getgrouplist(entry.pw_name, entry.pw_gid))
    return Identity(entry.pw_name, entry.pw_uid, gids)


def _allowed(mode: int, owner: int, group: int, who: Identity, want: str) -> bool:
    """Unix permission check of `want` ("r", "w", "x" letters) on one inode."""
    if who.uid == 0:
        return True
    slot = 0 if owner == who.uid else 1 if group in who.gids else 2
    return all(mode & _BITS[letter][slot] for letter in want)


def missing_access(path: Path, who: Identity, want: str) -> str | None:
    """None when `who` may do `want` on `path`, else the first path component that stops it."""
    absolute = path.absolute()
    for parent in reversed(absolute.parents):
        try:
            st = parent.stat()
        except OSError as exc:
            return f"{parent}: {exc.strerror or exc}"
        if not _allowed(st.st_mode, st.st_uid, st.st_gid, who, "x"):
            return f"{parent} (mode {stat.S_IMODE(st.st_mode):o}, {_owner(st)}) is not searchable"
    try:
        st = absolute.stat()
    except OSError as exc:
        return f"{absolute}: {exc.strerror or exc}"
    if not _allowed(st.st_mode, st.st_uid, st.st_gid, who, want):
        return f"{absolute} (mode {stat.S_IMODE(st.st_mode):o}, {_owner(st)}) lacks {want}"
    return None


def _owner(st: os.stat_result) -> str:
    try:
        user = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        user = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return f"{user}:{group}"


def state_dir_access(state_dir: Path, slurm_user: str) -> Check:
    """SlurmUser (who runs job_submit.lua) may append to the spool and read the heartbeat."""
    who = identity_of(slurm_user)
    if who is None:
        return Check(
            "state_dir_access",
            FAIL,
            f"SlurmUser {printable(slurm_user)} is not an account on this host",
            "run the doctor on the slurmctld host, or create the account",
        )
    spool = state_dir / "spool"
    if not state_dir.is_dir():
        return Check(
            "state_dir_access",
            FAIL,
            f"{state_dir} does not exist: the hook has no spool to append to",
            f"`install -d -m 755 -o {_me()} {state_dir}` (the daemon's account owns it; the "
            "unit's StateDirectory= creates it when the daemon starts)",
        )
    problems: list[str] = []
    if spool.exists():
        problem = missing_access(spool, who, "w")
    else:
        problem = missing_access(state_dir, who, "wx")
    if problem:
        problems.append(f"spool: {problem}")
    problem = missing_access(state_dir / "heartbeat", who, "r")
    if problem and (state_dir / "heartbeat").exists():
        problems.append(f"heartbeat: {problem}")
    if not problems:
        return Check(
            "state_dir_access",
            OK,
            f"SlurmUser {who.name} may append to {spool} and read {state_dir / 'heartbeat'}",
        )
    return Check(
        "state_dir_access",
        FAIL,
        f"SlurmUser {who.name}: " + "; ".join(problems),
        f"`chmod 755 {state_dir} && touch {spool} && chown {who.name} {spool} && "
        f"chmod 644 {spool}` (the daemon keeps the heartbeat 644)",
    )


def _me() -> str:
    """This process's account (the doctor runs as the daemon's)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def judge_heartbeat(text: str, now: float, max_age: int) -> tuple[str, str]:
    """(status, what was seen) for the heartbeat file's text at time `now`, as the hook
    judges it: whole seconds, at most `max_age` old, not from the future."""
    stamp = text.strip()
    if not stamp.isdigit():
        return FAIL, f"holds {printable(stamp[:40])!r}, not whole Unix seconds"
    age = now - int(stamp)
    if age < -1:
        return FAIL, f"is {-age:.0f} s in the future (clocks disagree)"
    if age > max_age:
        return FAIL, f"is {age:.0f} s old (the hook holds only while it is at most {max_age} s)"
    return OK, f"is {max(age, 0):.0f} s old (at most {max_age} s)"


def heartbeat(state_dir: Path, max_age: int, now: float | None = None) -> Check:
    """The daemon's heartbeat is fresh, so the hook holds jobs."""
    path = state_dir / "heartbeat"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:64]
    except FileNotFoundError:
        return Check(
            "heartbeat",
            FAIL,
            f"{path} does not exist: no daemon is running on this state directory, so "
            "nothing is held",
            "start the daemon: `systemctl start adaptalloc` (its log says why it stops beating)",
        )
    except OSError as exc:
        return Check("heartbeat", FAIL, f"{path}: {exc.strerror or exc}", f"`chmod 644 {path}`")
    status, seen = judge_heartbeat(text, time.time() if now is None else now, max_age)
    if status == OK:
        return Check("heartbeat", OK, f"{path} {seen}")
    fix = (
        "synchronise the clocks (chrony/NTP) of this host and slurmctld's"
        if "future" in seen
        else "start or restart the daemon (`systemctl restart adaptalloc`); `journalctl -u "
        "adaptalloc` says why it stopped beating (Slurm privileges, Redis, a stuck sweep)"
    )
    return Check("heartbeat", status, f"{path} {seen}", fix)
