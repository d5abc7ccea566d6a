"""Which listed partitions admit a job (plugin/daemon/access.py), from partition lines as
``scontrol show partition -o`` prints them on the testbed (Slurm 22.05)."""

from __future__ import annotations

import grp
import os
import pwd
from dataclasses import replace
from typing import Any

import pytest

from plugin.daemon.access import admits, usable_partitions, user_groups
from plugin.slurm import JobRecord, PartitionRecord
from plugin.slurm.parse import parse_scontrol_partitions

#: The testbed's line for a partition made with AllowGroups=root (captured 2026-11-23).
RESTRICTED = (
    "PartitionName=restricted AllowGroups=root AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL "
    "Default=NO QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 "
    "Hidden=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=1 LLN=NO "
    "MaxCPUsPerNode=UNLIMITED Nodes=node[1-2] PriorityJobFactor=1 PriorityTier=1 RootOnly=NO "
    "ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=8 "
    "TotalNodes=2 SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED "
    "MaxMemPerNode=UNLIMITED TRES=cpu=8,mem=2000M,node=2,billing=8"
)
OPEN = RESTRICTED.replace("restricted", "debug").replace("AllowGroups=root", "AllowGroups=ALL")


def job(**fields: Any) -> JobRecord:
    base: dict[str, Any] = {
        "job_id": 7,
        "name": "heat",
        "user": "ann",
        "account": "phys",
        "partition": "debug,restricted",
        "state": "PENDING",
        "source": "squeue",
        "qos": "normal",
    }
    base.update(fields)
    return JobRecord(**base)


def part(line: str) -> PartitionRecord:
    (record,) = parse_scontrol_partitions(line)
    return record


def test_the_access_rules_are_read_from_the_partition_line() -> None:
    restricted = part(RESTRICTED)
    assert restricted.allow_groups == ("root",)
    assert restricted.allow_accounts is None
    assert restricted.allow_qos is None
    assert restricted.deny_accounts == ()
    assert restricted.deny_qos == ()
    assert not restricted.root_only
    assert not restricted.req_resv
    denied = part(OPEN.replace("AllowAccounts=ALL", "DenyAccounts=bio,chem"))
    assert denied.deny_accounts == ("bio", "chem")
    assert denied.allow_accounts is None


def test_allow_groups_admit_only_members() -> None:
    restricted, open_ = part(RESTRICTED), part(OPEN)
    assert not admits(restricted, job(), {"ann", "users"})
    assert admits(restricted, job(), {"users", "root"})
    assert not admits(restricted, job(), None)  # groups unknown: not admitted
    assert admits(open_, job(), None)


@pytest.mark.parametrize(
    ("change", "fields", "admitted"),
    [
        ({"allow_accounts": ("bio",)}, {}, False),
        ({"allow_accounts": ("bio", "phys")}, {}, True),
        ({"allow_accounts": ("phys",)}, {"account": ""}, False),
        ({"deny_accounts": ("phys",)}, {}, False),
        ({"deny_accounts": ("bio",)}, {}, True),
        ({"allow_qos": ("high",)}, {}, False),
        ({"allow_qos": ("high", "normal")}, {}, True),
        ({"deny_qos": ("normal",)}, {}, False),
        ({"root_only": True}, {}, False),
        ({"req_resv": True}, {}, False),
        ({"state": "DOWN"}, {}, False),
        ({"state": "INACTIVE"}, {}, False),
    ],
)
def test_accounts_qos_and_state(
    change: dict[str, Any], fields: dict[str, Any], admitted: bool
) -> None:
    assert admits(replace(part(OPEN), **change), job(**fields), {"users"}) is admitted


def test_usable_partitions_use_this_hosts_groups() -> None:
    me = pwd.getpwuid(os.getuid()).pw_name
    mine = user_groups(me)
    assert mine is not None
    assert grp.getgrgid(os.getgid()).gr_name in mine
    assert user_groups("no-such-user-adaptalloc") is None
    table = {"debug": part(OPEN), "restricted": part(RESTRICTED)}
    allowed = replace(table["restricted"], allow_groups=tuple(sorted(mine)))
    assert usable_partitions(table, job(user="no-such-user-adaptalloc")) == ["debug"]
    assert usable_partitions({**table, "restricted": allowed}, job(user=me)) == [
        "debug",
        "restricted",
    ]
