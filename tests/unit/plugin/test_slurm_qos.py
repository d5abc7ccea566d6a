"""QOS limits: sacctmgr's parsable output, and the tighter of partition and QOS per job."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from plugin.daemon.cluster import ClusterView, tighter
from plugin.slurm import (
    JobRecord,
    NodeRecord,
    PartitionRecord,
    QosRecord,
    SlurmCommandError,
    SlurmParseError,
)
from plugin.slurm.cli_backend import CliSlurmReader
from plugin.slurm.parse import QOS_FORMAT, parse_qos_limits

# As the 22.05 testbed prints it (sacctmgr -n -P show qos format=QOS_FORMAT): Name,
# MaxTRESPerJob, MaxWall, GrpTRES, MaxTRESPerUser, MaxTRESPerAccount.
SACCTMGR = (
    "normal|||||\n"
    "aasmall|node=2|00:30:00|||\n"
    "big|cpu=64,node=16|2-00:00:00|||\n"
    "aashared|||node=5|node=4|node=3\n"
    "aagroup|node=8||cpu=64,node=6||\n"
)


def test_qos_limits_from_sacctmgr() -> None:
    assert parse_qos_limits(SACCTMGR) == [
        QosRecord("normal", None, None),
        QosRecord("aasmall", 2, 30),
        QosRecord("big", 16, 2 * 1440),
        QosRecord("aashared", None, None, 3),  # the tightest of group, per user, per account
        QosRecord("aagroup", 8, None, 6),
    ]
    # The earlier three-column output still reads (no group limits known).
    assert parse_qos_limits("aasmall|node=2|00:30:00\n") == [QosRecord("aasmall", 2, 30)]


@pytest.mark.parametrize("text", ["x", "|node=2|1:00:00", "q|node=2|soon"])
def test_unreadable_qos_lines_are_errors(text: str) -> None:
    with pytest.raises(SlurmParseError):
        parse_qos_limits(text)


def test_the_reader_asks_sacctmgr_with_an_argument_list() -> None:
    calls: list[Sequence[str]] = []

    def runner(args: Sequence[str], timeout: float) -> str:
        calls.append(args)
        return SACCTMGR

    assert len(CliSlurmReader(runner=runner).qos_limits()) == 5
    assert calls == [("sacctmgr", "-n", "-P", "show", "qos", f"format={QOS_FORMAT}")]


def test_tighter() -> None:
    assert tighter(None, None) is None
    assert tighter(8, None) == 8
    assert tighter(8, 2) == 2


class Slurm(CliSlurmReader):
    def __init__(self, qos: list[QosRecord] | None) -> None:
        super().__init__()
        self._qos = qos

    def nodes(self) -> list[NodeRecord]:
        return [NodeRecord(f"n{k}", "idle", 4, 0, ("debug",)) for k in range(8)]

    def partitions(self) -> list[PartitionRecord]:
        return [PartitionRecord("debug", "n[0-7]", 8, "UP", True, 6, 120)]

    def qos_limits(self) -> list[QosRecord]:
        if self._qos is None:
            raise SlurmCommandError("sacctmgr: slurmdbd is down")
        return self._qos


def job(qos: str) -> JobRecord:
    return JobRecord(1, "lu", "ann", "phys", "debug", "PENDING", "squeue", qos=qos)


@pytest.mark.parametrize(
    ("qos", "table", "nodes", "minutes"),
    [
        ("aasmall", [QosRecord("aasmall", 2, 30)], 2, 30),  # the QOS is tighter
        ("big", [QosRecord("big", 16, 2880)], 6, 120),  # the partition is tighter
        ("normal", [QosRecord("normal", None, None)], 6, 120),
        ("", [QosRecord("aasmall", 2, 30)], 6, 120),  # no QOS reported
        ("aasmall", None, 6, 120),  # sacctmgr down: the partition's limits alone
        ("aagroup", [QosRecord("aagroup", 8, None, 4)], 4, 120),  # a group/user/account cap
    ],
)
def test_the_policy_gets_the_tighter_limits(
    qos: str, table: list[QosRecord] | None, nodes: int, minutes: int
) -> None:
    state = ClusterView(Slurm(table)).state(job(qos), Counter())
    assert (state.max_nodes_per_job, state.max_time_min) == (nodes, minutes)
