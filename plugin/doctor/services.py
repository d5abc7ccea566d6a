"""Checks of the services the daemon talks to: Slurm's accounting (the learner's source),
Redis (the curve store, with the credentials configured) and the daemon's metrics endpoint."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from plugin.doctor.check import FAIL, OK, WARN, Check
from plugin.doctor.settings import DoctorSettings
from plugin.errors import printable
from plugin.slurm.errors import SlurmError
from plugin.slurm.reader import SlurmReader
from plugin.store.connection import (
    StoreMisconfigured,
    StoreUnavailable,
    connect,
    mask_url,
    resolve_url,
)

__all__ = ["INFO_METRIC", "accounting_answers", "metrics_endpoint", "redis_answers"]

#: The metric only adaptalloc's daemon serves: tells its endpoint from another program's.
INFO_METRIC = "adaptalloc_daemon_info"
METRICS_TIMEOUT_S = 5.0
_HEARTBEAT_SAMPLE = re.compile(r"^adaptalloc_heartbeat_timestamp_seconds\s+(\S+)\s*$", re.MULTILINE)
#: The accounting window asked for: enough to make slurmdbd answer, small enough to be cheap.
ACCOUNTING_WINDOW_S = 3600.0


def accounting_answers(slurm: SlurmReader, now: float | None = None) -> Check:
    """slurmdbd answers the learner's own query (finished jobs of the last hour)."""
    until = time.time() if now is None else now
    started = time.perf_counter()
    try:
        jobs = slurm.finished_jobs(until - ACCOUNTING_WINDOW_S, until)
    except SlurmError as exc:
        return Check(
            "accounting_answers",
            FAIL,
            f"sacct failed: {printable(str(exc))}; the learner sees no finished job",
            "check slurmdbd (`systemctl status slurmdbd`, `sacctmgr show cluster`) and "
            "AccountingStorageHost/Port in slurm.conf",
        )
    took = time.perf_counter() - started
    answered = f"sacct answered in {took:.1f} s: {len(jobs)} jobs finished in the last hour"
    if slurm.sacct_json_error is not None:
        return Check(
            "accounting_answers",
            WARN,
            f"{answered}, from its text output: sacct --json failed "
            f"({slurm.sacct_json_error}); the learner reads the text output while it does",
            "nothing to do for the learner; the error is Slurm's (22.05's sacct --json "
            "can abort in json_object.c): see slurmdbd's records and Slurm's bug tracker",
        )
    return Check("accounting_answers", OK, answered)


def redis_answers(settings: DoctorSettings) -> Check:
    """Redis answers PING with the configured URL and credentials."""
    where = resolve_url(settings.redis_url, settings.redis)
    # Where the URL came from, as a setting to change ("[redis] url", "$REDIS_URL", ...).
    default = where.origin.startswith("the default")
    setting = "[redis] url (or $REDIS_URL)" if default else where.origin
    try:
        client = connect(settings.redis_url, settings.redis)
    except StoreMisconfigured as exc:
        fix = (
            f"fix the URL in {setting}: redis://[[USER]:PASSWORD@]HOST:PORT/DB "
            "(rediss:// for TLS, unix:///PATH?db=N, redis+sentinel://HOST:PORT/SERVICE, "
            "redis+cluster://HOST:PORT)"
            if "URL" in str(exc)
            else f"make {settings.redis.password_file} readable by the daemon's account "
            "(`chmod 640` it and `chgrp` it to the daemon's group)"
        )
        return Check("redis", FAIL, str(exc), fix)
    except StoreUnavailable as exc:
        refused = "credentials" in str(exc)
        fix = (
            "put the password Redis expects (requirepass or an ACL user) in [redis] "
            "password_file or the URL (redis://:PASSWORD@host:port/db)"
            if refused
            else f"start Redis (`systemctl start redis-server`), or point {setting} at the one "
            "the daemon uses"
        )
        return Check("redis", FAIL, str(exc), fix)
    try:
        info = client.info("server")
    except Exception:  # INFO may be renamed or refused by an ACL; PING is what matters
        info = {}
    finally:
        client.close()
    version = info.get("redis_version", "?") if isinstance(info, dict) else "?"
    has_secret = bool(urlsplit(where.url).password) or bool(settings.redis.password_file)
    seen = f"Redis {version} at {mask_url(where.url)} ({where.origin}) answers PING"
    if not has_secret:
        return Check(
            "redis",
            WARN,
            f"{seen} without a password: anyone who reaches it can rewrite the curves",
            "set requirepass (or an ACL user) in redis.conf and [redis] password_file",
        )
    return Check("redis", OK, f"{seen}, with a password")


def _served_heartbeat(body: str) -> float | None:
    """The endpoint's ``adaptalloc_heartbeat_timestamp_seconds`` value, None when absent."""
    found = _HEARTBEAT_SAMPLE.search(body)
    if found is None:
        return None
    try:
        return float(found.group(1))
    except ValueError:
        return None


def _heartbeat_stamp(path: Path) -> int | None:
    """The heartbeat file's whole seconds, None when missing or unreadable."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:64].strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def metrics_endpoint(settings: DoctorSettings) -> Check:
    """The daemon's Prometheus endpoint answers, is adaptalloc's, and is the daemon of this
    state directory: the heartbeat it last wrote (``adaptalloc_heartbeat_timestamp_seconds``)
    is the one in this state directory's heartbeat file (read before and after the scrape,
    so that a beat in between still matches). Another checkout's daemon, or one on another
    state directory, serves another heartbeat."""
    if settings.metrics_port == 0:
        return Check(
            "metrics",
            WARN,
            "metrics_port is 0: the daemon serves no metrics, so no dashboard or alert sees it",
            "set [daemon] metrics_port (default 9405)",
        )
    url = f"http://{settings.metrics_address}:{settings.metrics_port}/metrics"
    heartbeat = settings.state_dir / "heartbeat"
    before = _heartbeat_stamp(heartbeat)
    try:
        with urllib.request.urlopen(url, timeout=METRICS_TIMEOUT_S) as reply:
            body = reply.read(4 << 20).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Check(
            "metrics",
            FAIL,
            f"{url} does not answer: {printable(str(reason))}",
            "start the daemon (`systemctl start adaptalloc`), or give the doctor its port "
            "(--metrics-port, [daemon] metrics_port)",
        )
    after = _heartbeat_stamp(heartbeat)
    if INFO_METRIC not in body:
        return Check(
            "metrics",
            FAIL,
            f"{url} answers but serves no {INFO_METRIC}: another program has the port",
            "give the daemon a free [daemon] metrics_port",
        )
    served = _served_heartbeat(body)
    if not served:
        return Check(
            "metrics",
            WARN,
            f"{url} serves adaptalloc's metrics, but that daemon has written no heartbeat "
            "(a standby with ha = true, or still starting): it cannot be told from another "
            "state directory's",
            "run the doctor again once the daemon beats (on the active host with ha = true)",
        )
    if int(served) not in (before, after):
        seen = "no heartbeat" if before is None and after is None else f"{after or before}"
        return Check(
            "metrics",
            FAIL,
            f"{url} is another adaptalloc daemon's: its last heartbeat is {int(served)}, "
            f"{heartbeat} holds {seen} (another checkout's or another state directory's "
            "daemon has the port)",
            "give this daemon a port of its own ([daemon] metrics_port) and the doctor the "
            "same (--metrics-port), or give the doctor this daemon's state directory "
            "(--state-dir, [daemon] state_dir)",
        )
    return Check(
        "metrics", OK, f"{url} serves the metrics of the daemon beating in {settings.state_dir}"
    )
