"""How many tasks, and tasks per node, a run records (plugin/learning/importers.py): tasks
per node only when it is true of every node. The sacct path on the testbed is in
tests/integration/test_import_tasks.py."""

from __future__ import annotations

import pytest

from plugin.learning.importers import task_spread


@pytest.mark.parametrize(
    ("nodes", "tasks", "per_node", "recorded"),
    [
        (4, 16, 4, (16, 4)),  # even, both given
        (4, 16, None, (16, 4)),  # even, derived
        (4, 10, None, (10, None)),  # uneven: 3, 3, 2, 2
        (4, 10, 3, (10, None)),  # the busiest node's 3 is not every node's
        (4, None, 2, (8, 2)),  # 2 on every node
        (4, None, None, (None, None)),
        (1, 7, 7, (7, 7)),
    ],
)
def test_the_spread_recorded_is_true_of_every_node(
    nodes: int, tasks: int | None, per_node: int | None, recorded: tuple[int | None, ...]
) -> None:
    assert task_spread(nodes, tasks, per_node) == recorded


@pytest.mark.parametrize(
    ("nodes", "tasks", "per_node", "message"),
    [
        (4, 16, 3, "16 tasks on 4 nodes cannot have 3 tasks per node"),
        (4, 10, 2, "10 tasks on 4 nodes cannot have 2 tasks per node"),
        (4, 10, 4, "10 tasks on 4 nodes cannot have 4 tasks per node"),
        (4, 2, None, "2 tasks on 4 nodes leave a node without a task"),
    ],
)
def test_contradicting_columns_are_refused(
    nodes: int, tasks: int, per_node: int | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        task_spread(nodes, tasks, per_node)
