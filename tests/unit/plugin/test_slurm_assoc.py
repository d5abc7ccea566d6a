"""Association limits: scontrol's assoc_mgr output, the job's association, the tighter limits."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from plugin.daemon.cluster import ClusterView
from plugin.slurm import (
    AssocRecord,
    JobRecord,
    NodeRecord,
    PartitionRecord,
    SlurmCommandError,
    SlurmParseError,
)
from plugin.slurm.cli_backend import CliSlurmReader
from plugin.slurm.parse import parse_assoc_mgr, pick_association

# As the 22.05 testbed prints it (scontrol show assoc_mgr users=aatest accounts=aachild
# flags=assoc) after: sacctmgr add account aaparent MaxTRESPerJob=node=2
# MaxWallDurationPerJob=00:30:00; add account aachild parent=aaparent; add user aatest
# account=aachild. Neither aachild nor aatest sets a limit: they show the inherited ones.
ASSOC_MGR = """Current Association Manager state

Association Records

ClusterName=adaptalloc Account=aachild UserName= Partition= Priority=0 ID=4
    SharesRaw/Norm/Level/Factor=1/18446744073709551616.00/1/0.00
    UsageRaw/Norm/Efctv=0.00/1.00/0.00
    ParentAccount=aaparent(3) Lft=3 DefAssoc=No
    GrpJobs=N(0) GrpJobsAccrue=N(0)
    GrpSubmitJobs=N(0) GrpWall=N(0.00)
    GrpTRES=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESRunMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    MaxJobs= MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=30
    MaxTRESPJ=node=2
    MaxTRESPN=
    MaxTRESMinsPJ=
    MinPrioThresh=
ClusterName=adaptalloc Account=aachild UserName=aatest(1001) Partition= Priority=0 ID=5
    SharesRaw/Norm/Level/Factor=1/18446744073709551616.00/1/0.00
    UsageRaw/Norm/Efctv=0.00/1.00/0.00
    ParentAccount= Lft=4 DefAssoc=Yes
    GrpJobs=N(0) GrpJobsAccrue=N(0)
    GrpSubmitJobs=N(0) GrpWall=N(0.00)
    GrpTRES=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESRunMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    MaxJobs= MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=30
    MaxTRESPJ=node=2
    MaxTRESPN=
    MaxTRESMinsPJ=
    MinPrioThresh=
"""

# The same, after also: sacctmgr add user aatest account=aachild partition=debug
# MaxTRESPerJob=node=6 MaxWallDurationPerJob=600 (a user's association for one partition).
PER_PARTITION = """Current Association Manager state

Association Records

ClusterName=adaptalloc Account=aachild UserName= Partition= Priority=0 ID=12
    SharesRaw/Norm/Level/Factor=1/18446744073709551616.00/1/0.00
    UsageRaw/Norm/Efctv=0.00/1.00/0.00
    ParentAccount=aaparent(11) Lft=7 DefAssoc=No
    GrpJobs=N(0) GrpJobsAccrue=N(0)
    GrpSubmitJobs=N(0) GrpWall=N(0.00)
    GrpTRES=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESRunMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    MaxJobs= MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=30
    MaxTRESPJ=node=2
    MaxTRESPN=
    MaxTRESMinsPJ=
    MinPrioThresh=
ClusterName=adaptalloc Account=aachild UserName=aatest(1001) Partition=debug Priority=0 ID=16
    SharesRaw/Norm/Level/Factor=1/18446744073709551616.00/1/0.00
    UsageRaw/Norm/Efctv=0.00/1.00/0.00
    ParentAccount= Lft=8 DefAssoc=No
    GrpJobs=N(0) GrpJobsAccrue=N(0)
    GrpSubmitJobs=N(0) GrpWall=N(0.00)
    GrpTRES=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESRunMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    MaxJobs= MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=600
    MaxTRESPJ=node=6
    MaxTRESPN=
    MaxTRESMinsPJ=
    MinPrioThresh=
ClusterName=adaptalloc Account=aachild UserName=aatest(1001) Partition= Priority=0 ID=15
    SharesRaw/Norm/Level/Factor=1/18446744073709551616.00/1/0.00
    UsageRaw/Norm/Efctv=0.00/1.00/0.00
    ParentAccount= Lft=10 DefAssoc=Yes
    GrpJobs=N(0) GrpJobsAccrue=N(0)
    GrpSubmitJobs=N(0) GrpWall=N(0.00)
    GrpTRES=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESRunMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    MaxJobs= MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=30
    MaxTRESPJ=node=2
    MaxTRESPN=
    MaxTRESMinsPJ=
    MinPrioThresh=
"""


def test_effective_inherited_limits_from_assoc_mgr() -> None:
    assert parse_assoc_mgr(ASSOC_MGR) == [
        AssocRecord("aachild", "", "", 2, 30),
        AssocRecord("aachild", "aatest", "", 2, 30),
    ]


# Captured on the testbed: account aagrp with GrpTRES=node=2, one 2-node job of aatest running
# (scontrol show assoc_mgr users=aatest accounts=aagrp flags=assoc; the usage in brackets).
GROUP_CAPPED = """Current Association Manager state

Association Records

ClusterName=adaptalloc Account=aagrp UserName= Partition= Priority=0 ID=14
    SharesRaw/Norm/Level/Factor=1/18446744073709551616.00/1/0.00
    UsageRaw/Norm/Efctv=0.00/1.00/0.00
    ParentAccount=root(1) Lft=8 DefAssoc=No
    GrpJobs=N(1) GrpJobsAccrue=N(1)
    GrpSubmitJobs=N(2) GrpWall=N(0.00)
    GrpTRES=cpu=N(8),mem=N(0),energy=N(0),node=2(2),billing=N(8),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESRunMins=cpu=N(80),mem=N(0),energy=N(0),node=N(20),billing=N(80),fs/disk=N(0),vmem=N(0),pages=N(0)
    MaxJobs= MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=
    MaxTRESPJ=
    MaxTRESPN=
    MaxTRESMinsPJ=
    MinPrioThresh=
ClusterName=adaptalloc Account=aagrp UserName=aatest(1001) Partition= Priority=0 ID=15
    SharesRaw/Norm/Level/Factor=1/18446744073709551616.00/1/0.00
    UsageRaw/Norm/Efctv=0.00/1.00/0.00
    ParentAccount= Lft=9 DefAssoc=Yes
    GrpJobs=N(1) GrpJobsAccrue=N(1)
    GrpSubmitJobs=N(2) GrpWall=N(0.00)
    GrpTRES=cpu=N(8),mem=N(0),energy=N(0),node=N(2),billing=N(8),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0)
    GrpTRESRunMins=cpu=N(80),mem=N(0),energy=N(0),node=N(20),billing=N(80),fs/disk=N(0),vmem=N(0),pages=N(0)
    MaxJobs= MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=
    MaxTRESPJ=
    MaxTRESPN=
    MaxTRESMinsPJ=
    MinPrioThresh=
"""


def test_a_group_node_limit_is_the_accounts_and_caps_the_users_jobs() -> None:
    records = parse_assoc_mgr(GROUP_CAPPED)
    assert [r.max_nodes_group for r in records] == [2, None]  # "node=2(2)" and "node=N(2)"
    assert [r.nodes_in_use for r in records] == [2, 2]
    assert pick_association(records, "aatest", "aagrp", "debug") == AssocRecord(
        "aagrp", "aatest", "", None, None, max_nodes_group=2, nodes_in_use=2, nodes_free_group=0
    )


def test_the_nodes_a_group_has_free_are_its_limit_less_its_running_jobs() -> None:
    """GrpTRES node=3 with 2 in use: a job of the group can start on 1 node now."""
    text = GROUP_CAPPED.replace("node=2(2)", "node=3(2)")
    found = pick_association(parse_assoc_mgr(text), "aatest", "aagrp", "debug")
    assert found is not None
    assert (found.max_nodes_group, found.nodes_free_group) == (3, 1)
    own = text.replace("node=N(2),billing", "node=5(2),billing")  # the user's own limit
    found = pick_association(parse_assoc_mgr(own), "aatest", "aagrp", "debug")
    assert found is not None
    assert (found.max_nodes_group, found.nodes_free_group) == (3, 1)
    unlimited = GROUP_CAPPED.replace("node=2(2)", "node=N(2)")
    found = pick_association(parse_assoc_mgr(unlimited), "aatest", "aagrp", "debug")
    assert found is not None
    assert (found.max_nodes_group, found.nodes_free_group) == (None, None)


def test_no_association_reads_as_none() -> None:
    header = "Current Association Manager state\n\nAssociation Records\n\n"
    assert parse_assoc_mgr(header) == []
    assert pick_association(parse_assoc_mgr(ASSOC_MGR), "ann", "aachild", "debug") is None


@pytest.mark.parametrize(
    ("partition", "expected"),
    [
        ("debug", AssocRecord("aachild", "aatest", "debug", 6, 600)),  # the partition's own
        ("big", AssocRecord("aachild", "aatest", "", 2, 30)),  # else the general one
    ],
)
def test_the_job_gets_its_partition_association_first(
    partition: str, expected: AssocRecord
) -> None:
    records = parse_assoc_mgr(PER_PARTITION)
    assert pick_association(records, "aatest", "aachild", partition) == expected


def test_unreadable_wall_limit_is_an_error() -> None:
    with pytest.raises(SlurmParseError):
        parse_assoc_mgr(ASSOC_MGR.replace("MaxWallPJ=30", "MaxWallPJ=soon"))


def test_the_reader_asks_scontrol_with_an_argument_list() -> None:
    calls: list[Sequence[str]] = []

    def runner(args: Sequence[str], timeout: float) -> str:
        calls.append(args)
        return ASSOC_MGR

    reader = CliSlurmReader(runner=runner)
    assert reader.assoc_limits("aatest", "aachild", "debug") == AssocRecord(
        "aachild", "aatest", "", 2, 30
    )
    assert calls == [
        ("scontrol", "show", "assoc_mgr", "users=aatest", "accounts=aachild", "flags=assoc")
    ]


@pytest.mark.parametrize(
    ("user", "account"),
    [("a,root", "phys"), ("ann", "phys flags=qos"), ("-x", "phys"), ("ann", ""), ("", "p")],
)
def test_names_scontrol_would_not_take_as_one_are_not_asked(user: str, account: str) -> None:
    def runner(args: Sequence[str], timeout: float) -> str:
        raise AssertionError(f"ran {args}")

    assert CliSlurmReader(runner=runner).assoc_limits(user, account, "debug") is None


class Slurm(CliSlurmReader):
    def __init__(self, assoc: AssocRecord | None, fail: bool = False) -> None:
        super().__init__()
        self.assoc, self.fail, self.calls = assoc, fail, 0

    def nodes(self) -> list[NodeRecord]:
        return [NodeRecord(f"n{k}", "idle", 4, 0, ("debug",)) for k in range(8)]

    def partitions(self) -> list[PartitionRecord]:
        return [PartitionRecord("debug", "n[0-7]", 8, "UP", True, 6, 120)]

    def qos_limits(self) -> list:  # type: ignore[type-arg]
        return []

    def assoc_limits(self, user: str, account: str, partition: str) -> AssocRecord | None:
        self.calls += 1
        if self.fail:
            raise SlurmCommandError("scontrol: slurmctld is down")
        return self.assoc


def job(user: str = "aatest", account: str = "aachild") -> JobRecord:
    return JobRecord(1, "lu", user, account, "debug", "PENDING", "squeue")


@pytest.mark.parametrize(
    ("assoc", "fail", "nodes", "minutes"),
    [
        (AssocRecord("aachild", "aatest", "", 2, 30), False, 2, 30),  # the assoc is tighter
        (AssocRecord("aachild", "aatest", "", 16, 2880), False, 6, 120),  # the partition
        (AssocRecord("aachild", "aatest", "", None, 45), False, 6, 45),
        (None, False, 6, 120),  # no association
        (AssocRecord("aachild", "aatest", "", 2, 30), True, 6, 120),  # read failed: fail-open
        (AssocRecord("aagrp", "aatest", "", None, None, 3), False, 3, 120),  # a group cap
        (AssocRecord("aagrp", "aatest", "", None, None, 3, 2, 1), False, 1, 120),  # 2 in use
        (AssocRecord("aagrp", "aatest", "", None, None, 3, 3, 0), False, 1, 120),  # full
    ],
)
def test_the_policy_gets_the_tighter_limits(
    assoc: AssocRecord | None, fail: bool, nodes: int, minutes: int
) -> None:
    state = ClusterView(Slurm(assoc, fail)).state(job(), Counter())
    assert (state.max_nodes_per_job, state.max_time_min) == (nodes, minutes)


def test_associations_are_cached_per_user_account_partition() -> None:
    now = [0.0]
    slurm = Slurm(AssocRecord("aachild", "aatest", "", 2, 30))
    view = ClusterView(slurm, partition_cache_s=60.0, clock=lambda: now[0])
    view.state(job(), Counter())
    view.state(job(), Counter())
    assert slurm.calls == 1
    view.state(job(account="other"), Counter())
    assert slurm.calls == 2
    now[0] = 61.0
    view.state(job(), Counter())
    assert slurm.calls == 3


def test_an_association_under_a_group_limit_is_read_again_after_the_cluster_cache() -> None:
    """Its usage changes as jobs start and end: cluster_cache_s, not partition_cache_s."""
    now = [0.0]
    slurm = Slurm(AssocRecord("aagrp", "aatest", "", None, None, 3, 2, 1))
    view = ClusterView(slurm, cache_s=2.0, partition_cache_s=60.0, clock=lambda: now[0])
    view.state(job(), Counter())
    now[0] = 1.0
    view.state(job(), Counter())
    assert slurm.calls == 1
    now[0] = 3.0
    view.state(job(), Counter())
    assert slurm.calls == 2


def test_a_failing_read_is_logged_once() -> None:
    now = [0.0]
    slurm = Slurm(None, fail=True)
    view = ClusterView(slurm, partition_cache_s=1.0, clock=lambda: now[0])
    with capture_logs() as logs:
        for step in range(3):
            now[0] = 2.0 * step
            view.state(job(), Counter())
    assert slurm.calls == 3  # retried after each cache period
    assert [e["event"] for e in logs].count("assoc_limits_unknown") == 1


_PIECES = st.sampled_from(
    [
        "ClusterName=c ",
        "Account=",
        "UserName=",
        "Partition=",
        "MaxWallPJ=",
        "MaxTRESPJ=node=",
        "(1001)",
        "\n",
        "    ",
        ",",
        "=",
        "N(0)",
        "UNLIMITED",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=12)), max_size=40))
def test_any_text_gives_records_or_a_parse_error(pieces: list[str]) -> None:
    try:
        records = parse_assoc_mgr("".join(pieces))
    except SlurmParseError:
        return
    for record in records:
        assert record.max_nodes_per_job is None or record.max_nodes_per_job >= 0
        assert record.max_wall_min is None or record.max_wall_min >= 0
