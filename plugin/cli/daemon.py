"""``adaptalloc daemon`` (runs the daemon in the foreground) and ``adaptalloc decisions``.

    adaptalloc daemon [--config FILE] [--policy FILE] [--redis-url URL] [--state-dir DIR]
                      [--pid-file FILE] [--metrics-port N] [--no-learn]
                      [--once | --release-held]
    adaptalloc decisions [--job ID]... [--app KEY] [--last N] [--format text|json]

The daemon logs JSON lines to stderr when that is not a terminal (systemd's journal, the
testbed's log file): one ``decision`` event per job. It exits 0 after SIGTERM, 1 on a
configuration problem or when another daemon holds the state directory.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any

import click
import structlog
from rich import box
from rich.table import Table

from plugin.appkey import AppKey
from plugin.cli.common import emit_json, format_option, open_store, stdout_console, store_options
from plugin.config import Config, load_config
from plugin.daemon import REASONS, Daemon, signals
from plugin.daemon.state import atomic_write, default_state_dir
from plugin.errors import InputError, printable
from plugin.store.connection import StoreError, connect
from plugin.store.migrate import migrate_if_needed

__all__ = ["daemon", "decisions"]

log = structlog.get_logger("adaptalloc")


def _reason_lines() -> str:
    return "\n".join(f"  {code:18} {text}" for code, text in REASONS.items())


@click.command(
    epilog="\b\nFail-open reason codes (admin_comment 'adaptalloc:v1:released reason=...'):\n"
    + _reason_lines()
)
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    default=None,
    help="adaptalloc TOML ([daemon], [redis], ...); default: $ADAPTALLOC_CONFIG, "
    "/etc/adaptalloc/adaptalloc.toml. Re-read on SIGHUP.",
)
@click.option(
    "--policy",
    "policy_path",
    metavar="FILE",
    default=None,
    help="Policy file (default: [daemon] policy_file, else built-in). Re-read on SIGHUP.",
)
@click.option("--redis-url", metavar="URL", default=None, help="Overrides [redis] url, $REDIS_URL.")
@click.option(
    "--state-dir",
    metavar="DIR",
    default=None,
    help="Heartbeat, spool, journal (default: [daemon] state_dir, else /var/lib/adaptalloc). "
    "The hook's adaptalloc_submit.conf must name the same state_dir.",
)
@click.option("--pid-file", metavar="FILE", default=None, help="Write the pid here while running.")
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=None,
    metavar="N",
    help="Prometheus endpoint port (default [daemon] metrics_port; 0: none).",
)
@click.option("--no-learn", is_flag=True, help="Do not run the learner thread.")
@click.option("--once", is_flag=True, help="Decide the jobs held now, then exit (no heartbeat).")
@click.option(
    "--release-held",
    is_flag=True,
    help="Release every held job as submitted, then exit (for removing adaptalloc, and "
    "after a crash). Refused while a daemon runs on the state directory.",
)
@click.option(
    "--if-orphaned",
    is_flag=True,
    help="With --release-held: do nothing (exit 0) while a daemon runs on the state "
    "directory (the orphan timer, deploy/systemd/).",
)
def daemon(
    config_path: str | None,
    policy_path: str | None,
    redis_url: str | None,
    state_dir: str | None,
    pid_file: str | None,
    metrics_port: int | None,
    no_learn: bool,
    once: bool,
    release_held: bool,
    if_orphaned: bool,
) -> int:
    """Size the moldable jobs the job_submit hook holds, in the foreground (as systemd expects).

    SIGTERM (or Ctrl-C) finishes the jobs in hand and stops; a second one stops at once.
    SIGHUP re-reads the configuration and the policy file. Any failure releases the job as
    submitted, with the reason in its admin_comment and the log.
    """
    if once or release_held:  # no handlers: a stop signal that waited acts as it always did
        signals.unblock()
    if once and release_held:
        raise click.UsageError("--once and --release-held do not go together")
    if if_orphaned and not release_held:
        raise click.UsageError("--if-orphaned goes with --release-held")
    if release_held:  # even with a broken configuration (ExecStopPost after a failure)
        count = Daemon.for_release(config_path, state_dir, redis_url).release_held(if_orphaned)
        if count is None:
            click.echo("a daemon runs on the state directory; nothing released")
        else:
            click.echo(f"released {count} held job{'s' if count != 1 else ''} as submitted")
        return 0
    config = load_config(config_path)
    where = Path(state_dir) if state_dir else default_state_dir(config.daemon.state_dir)
    daemon_ = Daemon(
        config,
        where,
        config_path=config_path,
        policy_path=policy_path,
        redis_url=redis_url,
        metrics_port=metrics_port,
        learn=not (no_learn or once or release_held),
    )
    migrate_at_start(config, redis_url)
    if once:
        count = daemon_.run_once()
        click.echo(f"handled {count} held job{'s' if count != 1 else ''}")
        return 0
    pid_path = Path(pid_file) if pid_file else None
    if pid_path is not None:
        try:
            atomic_write(pid_path, f"{os.getpid()}\n")
        except OSError as exc:
            raise InputError(f"cannot write --pid-file {printable(str(pid_path))}: {exc}") from exc
    try:
        return daemon_.run()
    finally:
        if pid_path is not None:
            with contextlib.suppress(OSError):
                if pid_path.read_text().strip() == str(os.getpid()):
                    pid_path.unlink()


def migrate_at_start(config: Config, redis_url: str | None) -> None:
    """Copy v1 keys to v2 before the first decision (plugin/store/migrate.py), learner or not:
    a daemon run with --no-learn would otherwise read an empty v2. Several daemons starting
    at once each make a whole pass, copying only what v2 lacks. Redis down is no reason not
    to start (the daemon fails open): logged, and the learner's start tries again."""
    try:
        client = connect(redis_url, config.redis, check=False)
        migrate_if_needed(client)
    except StoreError as exc:
        log.warning("store_migration_not_checked", error=printable(str(exc))[:300])


_JOB_ID = re.compile(r"[0-9]{1,18}")


def _jobs_callback(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> set[int]:
    out: set[int] = set()
    for text in value:
        for part in text.split(","):
            # ASCII and bounded: str.isdigit takes "²" (int() then raises) and 5,000 digits.
            if not _JOB_ID.fullmatch(part.strip()):
                raise click.BadParameter(f"{printable(part)[:20]!r} is not a job id", ctx, param)
            out.add(int(part))
    return out


def _cell(value: Any) -> str:
    return "-" if value is None else printable(str(value))


@click.command()
@click.option(
    "--job",
    "jobs",
    multiple=True,
    callback=_jobs_callback,
    metavar="ID[,ID...]",
    help="Only these jobs (repeatable).",
)
@click.option("--app", "app_key", default=None, metavar="KEY", help="Only this app.")
@click.option(
    "--last",
    type=click.IntRange(1, 100_000),
    default=20,
    show_default=True,
    metavar="N",
    help="How many of the newest decisions to look through.",
)
@store_options
@format_option
def decisions(
    jobs: set[int],
    app_key: str | None,
    last: int,
    config_path: str | None,
    redis_url: str | None,
    output_format: str,
) -> None:
    """The daemon's newest decisions: range, size, time limit, rule and why, per job."""
    app = AppKey.parse(app_key) if app_key else None
    store = open_store(config_path, redis_url).store
    found = store.decisions(app, count=max(last, len(jobs)) if jobs else last)
    if jobs:
        found = [d for d in found if d.record.job_id in jobs]
    found.sort(key=lambda d: d.record.job_id)
    if output_format == "json":
        emit_json({"decisions": [d.to_dict() for d in found]})
        return
    table = Table(box=box.SIMPLE, show_header=True)
    for column in ("job", "app", "range", "chosen", "limit", "rule", "reason"):
        table.add_column(column, overflow="fold")
    for d in found:
        r = d.record
        chosen = r.size_text or "as submitted"
        if r.mode == "advise":
            chosen = f"would be {chosen} (advise)"
        table.add_row(
            _cell(r.job_id),
            _cell(r.app),
            f"{r.min_nodes}-{r.max_nodes}",
            _cell(chosen),
            _cell(r.new_time_limit_min),
            _cell(r.rule or f"fail-open: {r.fail_open}"),
            _cell(r.reason),
        )
    stdout_console().print(table)
