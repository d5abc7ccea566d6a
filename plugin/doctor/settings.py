"""What the doctor examines: the paths and endpoints of one install, resolved once."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from plugin.config import Config, RedisConfig

__all__ = ["DEFAULT_SLURM_CONF", "DoctorSettings", "slurm_conf_path"]

DEFAULT_SLURM_CONF = Path("/etc/slurm/slurm.conf")


def slurm_conf_path(explicit: str | None, environ: Mapping[str, str] | None = None) -> Path:
    """--slurm-conf, else $SLURM_CONF (what Slurm's commands read), else /etc/slurm/slurm.conf."""
    env = os.environ if environ is None else environ
    if explicit:
        return Path(explicit)
    if env.get("SLURM_CONF"):
        return Path(env["SLURM_CONF"])
    return DEFAULT_SLURM_CONF


@dataclass(frozen=True)
class DoctorSettings:
    """The install under examination.

    `state_dir` is the daemon's (``[daemon] state_dir`` or ``--state-dir``); `metrics_port`
    and `metrics_address` where it serves Prometheus; `redis_url` an explicit URL (None:
    ``[redis] url``, ``$REDIS_URL``); `probe` whether to submit the held probe job.
    """

    slurm_conf: Path
    state_dir: Path
    metrics_port: int
    metrics_address: str
    redis_url: str | None
    redis: RedisConfig
    config: Config
    probe: bool = True
