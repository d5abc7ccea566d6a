"""``adaptalloc doctor``: check an install end to end (see plugin/doctor/).

    adaptalloc doctor [--config FILE] [--slurm-conf FILE] [--state-dir DIR] [--redis-url URL]
                      [--metrics-port N] [--no-probe] [--format text|json]

Run it on the daemon's host, as the daemon's account (the privilege check submits a held
probe job of that account's own and cancels it). Exit 0 when no check failed (warnings
allowed), 1 when any did.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
import structlog
from rich.text import Text

from plugin.cli.common import emit_json, format_option, stdout_console
from plugin.config import load_config
from plugin.daemon.state import default_state_dir
from plugin.doctor import Check, DoctorSettings, document, failed, run_checks, slurm_conf_path
from plugin.slurm.writer import CliSlurm

__all__ = ["doctor"]

log = structlog.get_logger("adaptalloc")

#: Seconds each Slurm command of the doctor may take.
SLURM_TIMEOUT_S = 30.0
_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red"}


@click.command()
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    default=None,
    help="The daemon's adaptalloc TOML (default: $ADAPTALLOC_CONFIG, "
    "/etc/adaptalloc/adaptalloc.toml).",
)
@click.option(
    "--slurm-conf",
    metavar="FILE",
    default=None,
    help="slurmctld's slurm.conf (default: $SLURM_CONF, /etc/slurm/slurm.conf): the hook and "
    "adaptalloc_submit.conf are looked for beside it, and the Slurm commands read it.",
)
@click.option(
    "--state-dir",
    metavar="DIR",
    default=None,
    help="The daemon's state directory if it runs with --state-dir (default: [daemon] "
    "state_dir, else /var/lib/adaptalloc).",
)
@click.option("--redis-url", metavar="URL", default=None, help="Overrides [redis] url, $REDIS_URL.")
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=None,
    metavar="N",
    help="The daemon's metrics port if it runs with --metrics-port (default [daemon] "
    "metrics_port).",
)
@click.option(
    "--no-probe",
    is_flag=True,
    help="Do not submit the held probe job (privileges and clock are then judged less).",
)
@format_option
def doctor(
    config_path: str | None,
    slurm_conf: str | None,
    state_dir: str | None,
    redis_url: str | None,
    metrics_port: int | None,
    no_probe: bool,
    output_format: str,
) -> int:
    """Check this adaptalloc install end to end: per check ok, warn or fail, what was seen
    and the exact fix. Exits 1 when any check fails.

    Checks: slurm.conf (JobSubmitPlugins=lua, accounting to slurmdbd with job_comment);
    the hook module adaptalloc_submit.lua is this version's (sha256) and job_submit.lua
    loads and calls it; adaptalloc_submit.conf's state_dir is the daemon's; SlurmUser may
    append to the spool and read the heartbeat; the heartbeat is fresh and not from the
    future; this account may set AdminComment, NumNodes, TimeLimit and release (tried on a
    held probe job of its own, then cancelled); the limits Slurm enforces (and root for a
    sizing user); the clock offset to slurmctld; whether the libslurm binding is built for
    this Slurm; sacct answers; Redis answers with its
    credentials; the metrics endpoint is this state directory's daemon. Run it as the
    daemon's account, on its host. JSON: {"status", "checks": [...]}.
    """
    config = load_config(config_path)
    conf_path = slurm_conf_path(slurm_conf)
    chosen_dir = Path(state_dir) if state_dir else default_state_dir(config.daemon.state_dir)
    settings = DoctorSettings(
        slurm_conf=conf_path,
        state_dir=chosen_dir.absolute(),
        metrics_port=config.daemon.metrics_port if metrics_port is None else metrics_port,
        metrics_address=config.daemon.metrics_address,
        redis_url=redis_url,
        redis=config.redis,
        config=config,
        probe=not no_probe,
    )
    # Every Slurm command the doctor runs (and the libslurm probe) reads the slurm.conf it
    # examines, --slurm-conf's too: this process's environment is theirs.
    os.environ["SLURM_CONF"] = str(conf_path.absolute())
    checks = run_checks(settings, CliSlurm(timeout_s=SLURM_TIMEOUT_S))
    if output_format == "json":
        emit_json(document(checks))
    else:
        _render(checks)
    counts = {status: sum(c.status == status for c in checks) for status in ("ok", "warn", "fail")}
    log.info("doctor", **counts)
    return 1 if failed(checks) else 0


def _render(checks: list[Check]) -> None:
    """One line per check (status, name, what was seen), the fix indented below it."""
    console = stdout_console()
    width = max(len(c.name) for c in checks)
    for check in checks:
        # Text, not markup: details quote "[daemon] state_dir" and paths rich would eat.
        line = Text(f"{check.status:4}  ", style=_STYLE[check.status])
        line.append(f"{check.name:{width}}  {check.detail}")
        console.print(line, soft_wrap=True)
        if check.fix:
            console.print(Text(f"      {'fix:':{width}}  {check.fix}"), soft_wrap=True)
    bad = [c.name for c in checks if c.status == "fail"]
    warned = [c.name for c in checks if c.status == "warn"]
    if bad:
        console.print(f"status fail: {len(bad)} check(s) failed: {', '.join(bad)}")
    elif warned:
        console.print(f"status warn: every check passed, {len(warned)} with a warning")
    else:
        console.print("status ok: every check passed")
