"""plugin.report.groups: job arrays and jobs submitted together summarised in one row."""

from __future__ import annotations

import pytest

from plugin.report.groups import group_runs
from plugin.report.model import Run


def run(job: str, nodes: int, runtime: float, end: float = 0.0) -> Run:
    return Run(job, nodes, runtime, end)


def test_array_tasks_are_one_row_with_min_mean_max() -> None:
    runs = [run(f"900_{k}", 8, 100.0 + k, 10.0 + k) for k in (3, 1, 2)]
    (group,) = group_runs(runs, t1=800.0)
    assert (group.group_id, group.kind, group.tasks) == ("900", "array", 3)
    assert (group.first_job, group.last_job) == ("900_1", "900_3")
    assert (group.runtime_min, group.runtime_mean, group.runtime_max) == (101.0, 102.0, 103.0)
    assert group.efficiency_max == pytest.approx(800.0 / (8 * 101.0))
    assert group.efficiency_min == pytest.approx(800.0 / (8 * 103.0))
    assert group.node_hours == pytest.approx(8 * 306.0 / 3600.0)
    assert (group.first_end, group.last_end) == (11.0, 13.0)


def test_consecutive_ids_on_the_same_size_are_a_group() -> None:
    runs = [
        run("101", 4, 10.0, 1.0),
        run("102", 4, 12.0, 2.0),
        run("103", 4, 11.0, 3.0),
        run("104", 8, 6.0, 4.0),  # another size: not the same submission
        run("106", 8, 6.5, 5.0),  # a gap in the ids
    ]
    groups = group_runs(runs)
    assert [(g.group_id, g.kind, g.tasks) for g in groups] == [
        ("101-103", "group", 3),
        ("104", "job", 1),
        ("106", "job", 1),
    ]
    assert groups[0].efficiency_mean is None  # no curve, no efficiency


def test_other_ids_stand_alone() -> None:
    runs = [run("csv-aa", 2, 5.0, 2.0), run("csv-ab", 2, 5.0, 1.0), run("12_x", 2, 5.0, 3.0)]
    groups = group_runs(runs)
    assert [g.group_id for g in groups] == ["csv-ab", "csv-aa", "12_x"]  # by end time
    assert all(g.kind == "job" and g.tasks == 1 for g in groups)


def test_every_run_is_in_exactly_one_group() -> None:
    runs = [run(str(1000 + k), 1 + k % 3, 1.0 + k, float(k)) for k in range(50)]
    runs += [run(f"7_{k}", 2, 3.0, 100.0 + k) for k in range(20)]
    groups = group_runs(runs, t1=10.0)
    assert sum(g.tasks for g in groups) == len(runs)
    assert sum(g.node_hours for g in groups) == pytest.approx(
        sum(r.nodes * r.runtime_s for r in runs) / 3600.0
    )
