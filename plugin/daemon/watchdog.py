"""systemd's watchdog: the daemon proves it is not hung, so that a hung one is killed.

A daemon that hangs without dying (a deadlock, SIGSTOP) keeps the state directory's lock,
so the orphan release (``--release-held --if-orphaned``) rightly leaves its jobs alone, and
job_submit.lua only stops holding new ones. With ``WatchdogSec=`` in the unit, systemd sets
``WATCHDOG_USEC`` and ``NOTIFY_SOCKET``; the loop sends ``WATCHDOG=1`` every half of that
period (sd_notify(3)), and on either side of every Slurm command (`Daemon.timed`), and
when the pings stop systemd kills the daemon (SIGABRT), runs ExecStopPost
(``--release-held``) and restarts it (deploy/systemd/adaptalloc.service).
Without those variables this does nothing.

The period: ``WatchdogSec=30``. A working daemon pings at least every
``slurm_timeout_s`` (20 s: one Slurm command hanging to its timeout) plus the loop's own
work, so 30 s never kills it; a hung one's jobs are released about 30 s after the hang
plus ExecStopPost's few seconds, inside the 60 s bound. With HA the standby takes over
after the lease's TTL (10 s) anyway.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping

__all__ = ["Watchdog", "sd_notify"]


def sd_notify(message: str, environ: Mapping[str, str] | None = None) -> bool:
    """Send `message` to ``$NOTIFY_SOCKET`` (a path, or ``@name`` in the abstract
    namespace); False when there is none or it cannot be reached. Never raises."""
    address = (os.environ if environ is None else environ).get("NOTIFY_SOCKET", "")
    if not address or address[0] not in "/@":
        return False
    if address[0] == "@":
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(message.encode("ascii"))
    except OSError:
        return False
    return True


class Watchdog:
    """Pings systemd's watchdog at most every half period (``WATCHDOG_USEC`` / 2)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.environ = env
        pid = env.get("WATCHDOG_PID", "")
        mine = not pid or (pid.isdigit() and int(pid) == os.getpid())
        usec = env.get("WATCHDOG_USEC", "")
        self.every_s = int(usec) / 2e6 if mine and usec.isdigit() and int(usec) > 0 else None
        #: Monotonic time of the next ping due (never, without a watchdog).
        self.next_ping = 0.0 if self.every_s is not None else float("inf")

    def ping(self) -> None:
        """``WATCHDOG=1`` when half a period has passed since the last one."""
        if self.every_s is None:
            return
        now = time.monotonic()
        if now >= self.next_ping:
            sd_notify("WATCHDOG=1", self.environ)
            self.next_ping = now + self.every_s
