"""plugin/daemon/advise.py and the spool's advise lines: parsing, pairing lines with jobs
(pending: exact range; started: a size inside it; the lowest id takes the oldest line),
and the waiting lines' bounds."""

from __future__ import annotations

from pathlib import Path

from plugin.daemon.advise import (
    MATCH_S,
    AdviceQueue,
    AdviseLine,
    as_requested,
    pair,
    parse_line,
)
from plugin.daemon.modes import modes_text
from plugin.daemon.state import SpoolWatcher
from plugin.slurm import JobRecord
from policies.config import parse_config

UIDS = {"alice": 1001, "bob": 1002}


def _job(job_id: int, user: str = "alice", state: str = "PENDING", **kw: object) -> JobRecord:
    values: dict[str, object] = {"nodes_min": 2, "nodes_max": 6, "submit_time": 100}
    values.update(kw)
    return JobRecord(job_id, "j", user, "acct", "batch", state, "squeue", **values)  # type: ignore[arg-type]


def _pair(lines: list[AdviseLine], jobs: list[JobRecord]) -> list[tuple[int, int]]:
    found = pair(lines, jobs, UIDS.get, lambda job: False)
    index = {id(line): at for at, line in enumerate(lines)}
    return [(index[id(line)], job.job_id) for line, job in found]


def test_parse_line_reads_only_well_formed_advise_lines() -> None:
    assert parse_line(b"advise 100 1001 2 6") == AdviseLine(100, 1001, 2, 6)
    assert parse_line(b"advise 100 1001 2 6 16 4") == AdviseLine(100, 1001, 2, 6, 16, 4)
    for bad in (
        b"held 100 1001",
        b"advise 100 1001 6 2",
        b"advise 100 x 2 6",
        b"advise 1 2 3",
        b"advise 100 1001 2 6 16",
        b"advise 100 1001 2 6 16 -4",
    ):
        assert parse_line(bad) is None


def test_the_job_decided_carries_the_asked_task_counts_not_the_allocations() -> None:
    started = _job(5, state="RUNNING", nodes_min=8, nodes_max=8, num_tasks=8, ntasks_per_node=1)
    plain = as_requested(AdviseLine(100, 1001, 1, 8), started)
    assert (plain.nodes_min, plain.nodes_max, plain.num_tasks, plain.ntasks_per_node) == (
        1, 8, None, 0,
    )  # fmt: skip
    placed = as_requested(AdviseLine(100, 1001, 1, 8, 16, 4), started)
    assert (placed.num_tasks, placed.ntasks_per_node) == (16, 4)


def test_a_job_needs_a_count_inside_the_range_and_its_users_uid() -> None:
    line = AdviseLine(100, 1001, 2, 6)
    assert _pair([line], [_job(1, nodes_min=8), _job(2, user="bob"), _job(3)]) == [(0, 3)]


def test_a_started_job_pairs_when_its_size_fits_the_range() -> None:
    line = AdviseLine(100, 1001, 2, 6)
    started = _job(5, state="RUNNING", nodes_min=6, nodes_max=6, nodes_alloc=6)
    too_big = _job(4, state="RUNNING", nodes_min=8, nodes_max=8, nodes_alloc=8)
    assert _pair([line], [too_big, started]) == [(0, 5)]


def test_submit_time_must_be_the_lines_second_or_just_after() -> None:
    line = AdviseLine(100, 1001, 2, 6)
    assert _pair([line], [_job(1, submit_time=99)]) == []
    assert _pair([line], [_job(1, submit_time=103)]) == []
    assert _pair([line], [_job(1, submit_time=102)]) == [(0, 1)]


def test_identical_submissions_pair_in_id_order_once_each() -> None:
    lines = [AdviseLine(100, 1001, 2, 6), AdviseLine(100, 1001, 2, 6)]
    assert _pair(lines, [_job(9), _job(7), _job(8)]) == [(0, 7), (1, 8)]


def test_taken_jobs_are_skipped_and_the_range_is_the_lines() -> None:
    line = AdviseLine(100, 1001, 2, 6)
    jobs = [_job(1, state="RUNNING", nodes_min=4, nodes_max=4, nodes_alloc=4), _job(2)]
    found = pair([line], jobs, UIDS.get, lambda job: job.job_id == 1)
    assert [job.job_id for _, job in found] == [2]
    requested = as_requested(line, jobs[0])
    assert (requested.nodes_min, requested.nodes_max) == (2, 6)


def test_the_queue_forgets_paired_lines_and_expires_old_ones() -> None:
    now = [0.0]
    queue = AdviceQueue(clock=lambda: now[0])
    a, b = AdviseLine(100, 1001, 2, 6), AdviseLine(100, 1001, 2, 6)
    queue.add([a, b])
    queue.done([(a, _job(1))])
    assert queue.lines() == [b]
    assert queue.taken(_job(1))
    now[0] = MATCH_S + 1
    assert queue.expire() == 1
    assert not queue
    assert not queue.taken(_job(1))


def test_the_spool_watcher_counts_held_lines_and_keeps_advise_lines(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.write_text("")
    watcher = SpoolWatcher(spool)
    with spool.open("a") as out:
        out.write("held 100 0\nadvise 100 1001 2 6\nheld 101 0\nadvise 101 1001 1 8\n")
    assert watcher.woken()
    assert watcher.take_lines() == 2
    assert watcher.take_advice() == [AdviseLine(100, 1001, 2, 6), AdviseLine(101, 1001, 1, 8)]
    assert watcher.take_advice() == []
    with spool.open("a") as out:
        out.write("advise 102 1001 2 6\n")
    assert not watcher.woken()  # advise lines wait for the periodic sweep
    assert [a.at for a in watcher.take_advice()] == [102]


def test_modes_text_lists_the_default_and_the_overrides_with_plain_names() -> None:
    policy = parse_config(
        {
            "partition": {"batch": {"mode": "enforce"}, "bad name": {"mode": "advise"}},
            "account": {"trial": {"mode": "advise"}},
        },
        "policy.toml",
    )
    lines = modes_text("advise", policy).splitlines()
    assert lines[0].startswith("#")
    assert lines[1:] == ["default advise", "partition batch enforce", "account trial advise"]


def test_a_job_the_daemon_held_and_released_is_never_paired() -> None:
    queue = AdviceQueue()
    released = _job(1)  # held, decided, released: now pending like any other
    queue.enforced([released])
    line = AdviseLine(100, 1001, 2, 6)
    found = pair([line], [released, _job(2)], UIDS.get, queue.taken)
    assert [job.job_id for _, job in found] == [2]


def test_each_advise_job_meets_the_queue_it_would_have_met_on_arrival() -> None:
    from plugin.daemon.advise import arrival_demand  # noqa: PLC0415 - beside its test

    rigid = _job(1, nodes_min=3, nodes_max=3)  # pending before the burst
    burst = [_job(i, nodes_min=8, nodes_max=8) for i in (2, 3, 4)]  # 22.05 shows the max
    started = _job(5, state="RUNNING", nodes_min=8, nodes_max=8, nodes_alloc=8)
    lines = [AdviseLine(100, 1001, 1, 8) for _ in range(4)]
    batch = list(zip(lines, [*burst, started], strict=True))
    met = arrival_demand([rigid, *burst, started], batch)
    assert [met[i]["batch"] for i in (2, 3, 4, 5)] == [4, 5, 6, 7]  # 3 + 1 per advise job
