"""Which of a job's listed partitions its user may run in, as slurmctld decides it.

Slurm 22.05 accepts ``sbatch -p debug,restricted`` from a user that ``restricted``'s
AllowGroups leaves out (it checks a list loosely), and root may then move the job to
``restricted`` alone: the update is applied (scontrol still exits 1) and the job pends there
for ever with Reason=PartitionConfig (seen on the testbed). So the partition choice only
considers partitions that admit the job by the rules of slurm.conf's partition line:

* State=UP (a job moved alone to a DOWN or INACTIVE partition waits for it);
* RootOnly=NO and ReqResv=NO (held jobs never carry a reservation: job_submit.lua leaves
  those alone);
* AllowGroups: ALL, or one of the user's Unix groups (resolved here, on slurmctld's host,
  as slurmctld resolves them); a user whose groups cannot be read is not admitted;
* AllowAccounts/DenyAccounts and AllowQos/DenyQos against the job's account and QOS; an
  unknown account or QOS is admitted only where every account or QOS is.
"""

from __future__ import annotations

import grp
import os
import pwd
from collections.abc import Iterable, Mapping

from plugin.slurm import JobRecord, PartitionRecord

__all__ = ["admits", "usable_partitions", "user_groups"]


def user_groups(user: str) -> frozenset[str] | None:
    """The names of the Unix groups `user` is in (primary included), None when the user
    is unknown on this host."""
    try:
        gids = os.getgrouplist(user, pwd.getpwnam(user).pw_gid)
    except (KeyError, OSError, ValueError):
        return None
    names = set()
    for gid in gids:
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:  # a gid without a name matches no AllowGroups entry
            continue
    return frozenset(names)


def admits(part: PartitionRecord, job: JobRecord, groups: Iterable[str] | None) -> bool:
    """Whether `part` lets `job` run (module docstring); `groups` are its user's groups."""
    if part.state.upper() != "UP" or part.root_only or part.req_resv:
        return False
    if part.allow_groups is not None and not set(groups or ()) & set(part.allow_groups):
        return False
    if part.allow_accounts is not None and job.account not in part.allow_accounts:
        return False
    if job.account and job.account in part.deny_accounts:
        return False
    if part.allow_qos is not None and job.qos not in part.allow_qos:
        return False
    return not (job.qos and job.qos in part.deny_qos)


def usable_partitions(partitions: Mapping[str, PartitionRecord], job: JobRecord) -> list[str]:
    """The partitions Slurm knows that admit `job`, by name."""
    groups = user_groups(job.user) if job.user else None
    return [name for name, part in partitions.items() if admits(part, job, groups)]
