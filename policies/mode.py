"""Which mode a job is in: ``advise`` (record the decision, change nothing) or ``enforce``
(hold and size it).

The site's default is ``[daemon] mode`` (adaptalloc.toml); a policy file's
``[partition.NAME]`` and ``[account.NAME]`` tables may override it with ``mode``, with the
precedence of `policies.effective`: the account's table, then the partition's, then the
default. A job that lists several partitions (``--partition=a,b``) is enforced only when
every one of them resolves to enforce: where any of them only advises, so does the job.

job_submit.lua resolves the same way from the modes the daemon publishes
(plugin/daemon/modes.py), so the hook holds exactly the jobs the daemon enforces. Pure.
"""

from __future__ import annotations

from policies.config import MODES, PolicyConfig

__all__ = ["ADVISE", "ENFORCE", "MODES", "job_mode", "listed"]

ADVISE = "advise"
ENFORCE = "enforce"


def listed(partition: str) -> list[str]:
    """The partitions a job's partition field names (``"a,b"``: both; ``""``: none)."""
    return [name.strip() for name in partition.split(",") if name.strip()]


def job_mode(config: PolicyConfig, default: str, partition: str, account: str) -> str:
    """The mode of a job in `partition` (a comma-separated list, or "") charged to
    `account`, where `default` is the site's ``[daemon] mode``."""
    if default not in MODES:
        raise ValueError(f"default must be one of {MODES}, got {default!r}")
    if account in config.account_modes:
        return config.account_modes[account]
    names = listed(partition) or [""]
    modes = {config.partition_modes.get(name, default) for name in names}
    return ENFORCE if modes == {ENFORCE} else ADVISE
