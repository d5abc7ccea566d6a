"""The report's placement section, assembled from runs (pure: no Redis)."""

from __future__ import annotations

import io

from rich.console import Console

from plugin.appkey import AppKey
from plugin.report.placement import assemble_placement, render_placement
from plugin.store.curves import Observation

APP = AppKey("heat")


def runs() -> list[Observation]:
    """8 tasks; T(c, p) = 1000 / (g(c) f(p)), f = {1: 1, 2: 1.9, 4: 2}, g = {2: 1.9, 4: 3.4,
    8: 4}: the placement rule picks 4 nodes x 2 (155 s at 85% node efficiency; 2 x 4 takes
    263 s, 8 x 1 250 s at 26%)."""
    f = {1: 1.0, 2: 1.9, 4: 2.0}
    g = {2: 1.9, 4: 3.4, 8: 4.0}
    out = [
        Observation(f"{i}", APP, 1, 1000.0 / f[p], 1.0 + i, tasks=p, tasks_per_node=p)
        for i, p in enumerate(f)
    ]
    out += [
        Observation(f"1{i}", APP, c, 1000.0 / g[c], 9.0 + i, tasks=8 if c == 8 else c,
                    tasks_per_node=1)
        for i, c in enumerate(g)
    ]  # fmt: skip
    out.append(Observation("99", APP, 4, 500.0, 20.0))  # no tasks per node: left out
    return out


def test_the_table_has_every_measured_and_predicted_placement_and_marks_the_choice() -> None:
    section = assemble_placement(runs(), {})
    assert section.tasks == 8  # the largest task count among the runs
    by_key = {(c.nodes, c.tasks_per_node): c for c in section.cells}
    assert by_key[(1, 1)].measured_s == 1000.0
    assert by_key[(1, 1)].runs == 1
    # Predicted, never run: 2 x 4, 4 x 2.
    assert by_key[(4, 2)].runs == 0
    assert by_key[(4, 2)].measured_s is None
    assert by_key[(4, 2)].predicted_s == round(1000.0 / (3.4 * 1.9), 3)
    assert by_key[(2, 4)].predicted_s == round(1000.0 / (1.9 * 2.0), 3)
    chosen = [c for c in section.cells if c.chosen]
    assert [(c.nodes, c.tasks_per_node) for c in chosen] == [(4, 2)]
    doc = section.to_dict()
    assert doc["tasks"] == 8
    assert sum(row["chosen"] for row in doc["table"]) == 1


def test_no_placement_runs_say_so_and_render_nothing_but_node_types() -> None:
    section = assemble_placement([Observation("1", APP, 2, 10.0, 1.0)], {"big": None})
    assert section.tasks is None
    assert section.cells == ()
    assert [t.node_type for t in section.node_types] == ["big"]
    assert section.node_types[0].A is None
    out = io.StringIO()
    render_placement(section, Console(file=out, width=120))
    assert "curves per node type" in out.getvalue()
    assert "placement for" not in out.getvalue()
