"""The learner's refit cadence (policies/refit_cadence.py): how many refits, how many of them
change a decision, and what a growth g > 0 costs in decision quality against g = 0 (every
change, the rule before this cadence).

Data: the dev traces of tests/data/swf (NASA iPSC/860; Lublin's synthetic model) and, when on
this machine, the team's CEA-Curie sample; the simulator's defaults (its workload model is a
synthetic assumption: A = median request × U[1, 4], 5% run noise). Which data chose what:
g (REFIT_GROWTH = 0.25) was chosen on NASA (first 1,500 jobs, loads 0.5-1.0, seeds 1-3: of
g = 0.1, 0.25, 0.5 the only one within the g = 0 seed range at every load) and checked on
Lublin and CEA-Curie (within it at every load), nothing tuned on those two; the figures are
in docs/benchmarks/refit-cadence.md. H (REFIT_MAX_AGE_S, a day) was not chosen by these data:
it only bounds how stale a curve with new runs gets.

1. Refits per application, on the NASA trace tiled in time (a synthetic assumption: its
   applications repeat), load 0.7, seed 1, the adaptive policy: how many refits each
   application had, how many a decision saw, and how many changed at least one decision (a
   decision made with the refit's curve differs, in nodes, time limit or rule, from the one
   the previous curve a decision saw gives in the same state). ADAPTALLOC_CADENCE_JOBS=30000
   gives the target size (~10 minutes here at g = 0); the default is 3,000.
2. Decision quality, g against g = 0: learned adaptive's mean response, kills and
   node-hours per trace and load, mean over seeds, with the g = 0 runs' range over the seeds
   (the seed noise the difference is held to). ADAPTALLOC_CADENCE_FULL=1 runs the full
   table (three traces, loads 0.5, 0.7, 0.9, 1.0, seeds 1-3, g in ADAPTALLOC_CADENCE_G,
   traces in ADAPTALLOC_CADENCE_TRACES; ~30 min here); the quick mode (the default, what CI
   runs: NASA, load 0.9, seed 1, g = 0 and the default) takes ~20 s.
ADAPTALLOC_FULL_BENCH=1 is the same switch as ADAPTALLOC_CADENCE_FULL=1. The docs' page
(docs/benchmarks/refit-cadence.md) is rendered from the last run (results.py).
Nothing is asserted about the figures: they are measurements. Asserted: every job ran.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table

import policies.simulation.adaptive as adaptive_module
import policies.simulation.experiment as experiment_module
from plugin.formats.swf import read_swf
from policies.decide import decide as policies_decide
from policies.decide import decide_with_runtime as policies_decide_with_runtime
from policies.refit_cadence import REFIT_GROWTH
from policies.simulation import Experiment, Setup, TraceJob, at_load
from policies.simulation.learning import CurveLearner
from predictor import Curve

from .results import full_run, mode_note, record
from .tiling import tile

SWF = Path(__file__).resolve().parents[1] / "data" / "swf"
CURIE = Path("/work/shared/data/swf/CEA-Curie-2011-sample.swf")
FULL = full_run("ADAPTALLOC_CADENCE_FULL")
TILED_JOBS = int(os.environ.get("ADAPTALLOC_CADENCE_JOBS", "3000"))
TABLE_JOBS = 1500
GROWTHS = tuple(
    float(g) for g in os.environ.get("ADAPTALLOC_CADENCE_G", f"{REFIT_GROWTH}").split(",")
)
LOADS = (0.5, 0.7, 0.9, 1.0) if FULL else (0.9,)
SEEDS = (1, 2, 3) if FULL else (1,)
#: The traces of the table (ADAPTALLOC_CADENCE_TRACES=nasa,lublin,curie; the full run's).
TRACES = os.environ.get("ADAPTALLOC_CADENCE_TRACES", "nasa,lublin,curie" if FULL else "nasa")
POLICY = "adaptive"


class _RecordingLearner(CurveLearner):
    """A CurveLearner that notes, per decision, the curve it hands out and the previous one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: app -> refits so far (the learner's own count, per application).
        self.per_app: Counter[int] = Counter()
        #: app -> (refit number of the curve decisions see now, the previous curve seen).
        self._seen: dict[int, tuple[int, Curve | None, Curve | None]] = {}
        #: (app, refit number) of the curves a decision saw, and of those that changed one.
        self.saw: set[tuple[int, int]] = set()
        self.changed: set[tuple[int, int]] = set()
        self.current: tuple[int, int, Curve | None] | None = None

    def curve(self, app: int, now: float) -> Curve | None:
        before = self.refits
        curve = super().curve(app, now)
        self.per_app[app] += self.refits - before
        number = self.per_app[app]
        last = self._seen.get(app)
        previous = None
        if last is not None:
            previous = last[2] if last[0] == number else last[1]
        self._seen[app] = (number, previous, curve)
        self.saw.add((app, number))
        self.current = (app, number, previous) if number > 1 else None
        return curve


def _note_change(learners: list[_RecordingLearner], decision: Any, other_of: Any) -> None:
    """Mark the learner's current refit when the previous curve decides otherwise."""
    learner = learners[-1]
    if learner.current is not None:
        app, number, previous = learner.current
        other = other_of(previous)
        key = (other.nodes, other.time_limit_min, other.rule)
        if key != (decision.nodes, decision.time_limit_min, decision.rule):
            learner.changed.add((app, number))


def _recording_decide(learners: list[_RecordingLearner]) -> Callable[..., Any]:
    """adaptive.decide, also run with the previous curve; marks the refits that change it."""
    decide: Callable[..., Any] = policies_decide

    def wrapped(
        request: Any, curve: Any, cluster: Any, settings: Any, budget: Any, *rest: Any
    ) -> Any:
        decision = decide(request, curve, cluster, settings, budget, *rest)
        _note_change(
            learners, decision, lambda prev: decide(request, prev, cluster, settings, budget, *rest)
        )
        return decision

    return wrapped


def _recording_decide_with_runtime(learners: list[_RecordingLearner]) -> Callable[..., Any]:
    """adaptive.decide_with_runtime (what the simulator calls with a curve), recorded the same
    way: without it the decisions made with a curve were never compared."""
    decide: Callable[..., Any] = policies_decide_with_runtime

    def wrapped(
        request: Any, curve: Any, cluster: Any, settings: Any, budget: Any, *rest: Any
    ) -> Any:
        decision, runtime = decide(request, curve, cluster, settings, budget, *rest)
        _note_change(
            learners,
            decision,
            lambda prev: decide(request, prev, cluster, settings, budget, *rest)[0],
        )
        return decision, runtime

    return wrapped


@pytest.mark.benchmark
def test_refits_per_application_and_those_that_change_a_decision(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = read_swf(SWF / "NASA-iPSC-1993-3.1-cln.swf")
    tiled = tile(trace.jobs, TILED_JOBS)
    learners: list[_RecordingLearner] = []

    def make(*args: Any, **kwargs: Any) -> _RecordingLearner:
        learners.append(_RecordingLearner(*args, **kwargs))
        return learners[-1]

    monkeypatch.setattr(experiment_module, "CurveLearner", make)
    monkeypatch.setattr(adaptive_module, "decide", _recording_decide(learners))
    monkeypatch.setattr(
        adaptive_module, "decide_with_runtime", _recording_decide_with_runtime(learners)
    )
    table = Table(
        title=f"Refits of learned adaptive, NASA tiled to {TILED_JOBS:,} jobs (synthetic "
        "assumption: its applications repeat), load 0.7, seed 1"
    )
    for column in ("g", "refits", "apps refitted", "per app: median", "p90", "max",
                   "seen by a decision", "changed a decision", "mean response s"):  # fmt: skip
        table.add_column(column, justify="right")
    experiment = Experiment(at_load(tiled, trace.machine, 0.7), Setup(machine=trace.machine))
    for g in sorted({0.0, *GROWTHS}):
        experiment.setup = dataclasses.replace(experiment.setup, refit_growth=g)
        result = experiment.run(POLICY)
        assert len(result.schedule) == len(tiled)
        learner = learners[-1]
        counts = np.array([c for c in learner.per_app.values() if c > 0])
        seen = sum(1 for _, number in learner.saw if number > 0)
        table.add_row(
            f"{g:g}",
            f"{learner.refits:,}",
            f"{len(counts):,}",
            f"{np.median(counts):.0f}",
            f"{np.percentile(counts, 90):.0f}",
            f"{counts.max():,}",
            f"{seen:,}",
            f"{len(learner.changed):,}",
            f"{result.metrics.mean_response_s:,.0f}",
        )
    with capsys.disabled():
        console = Console(width=160)
        console.print()
        console.print(table)
        console.print(
            "refits: the learner's refit rounds (policies/refit_cadence.py; g = 0: every "
            "change, the rule before this cadence). seen by a decision: refits whose curve some "
            "decision used; changed a decision: of those, the refits whose curve gave at least "
            "one decision (nodes, time limit, rule) the previous curve would not have, in the "
            "same state. The rest fed the same decisions: wasted fits."
        )
    record(
        "refit-cadence",
        title="The learner's refit cadence",
        source=__file__,
        full=FULL,
        tables=[table],
        notes=[
            "refits: the learner's refit rounds (policies/refit_cadence.py; g = 0: every "
            "change, the rule before this cadence). seen by a decision: refits whose curve "
            "some decision used; changed a decision: of those, the refits whose curve gave at "
            "least one decision (nodes, time limit, rule) the previous curve would not have.",
            f"NASA iPSC/860 tiled to {TILED_JOBS:,} jobs in time (a SYNTHETIC assumption: its "
            "applications repeat), load 0.7, seed 1, the simulator's defaults (synthetic "
            "Downey curves per application).",
        ],
        section="Refits, and how many change a decision",
    )


def _traces() -> list[tuple[str, tuple[TraceJob, ...], int]]:
    paths = {"nasa": SWF / "NASA-iPSC-1993-3.1-cln.swf", "lublin": SWF / "lublin_256.swf"}
    if CURIE.exists():
        paths["curie"] = CURIE
    out = []
    for name, path in paths.items():
        if name not in TRACES:
            continue
        trace = read_swf(path).head(TABLE_JOBS)
        out.append((path.name, trace.jobs, trace.machine))
    return out


def _fmt(values: list[float], digits: int = 0) -> str:
    return f"{statistics.fmean(values):,.{digits}f}"


def _run_cells(
    jobs: tuple[TraceJob, ...], machine: int, load: float, growths: list[float]
) -> dict[float, dict[str, list[float]]]:
    """Per g: learned adaptive's figures, one entry per seed (an experiment per seed, its
    fits shared between the g's: a fit depends only on its runs)."""
    cells: dict[float, dict[str, list[float]]] = {
        g: {"resp": [], "kills": [], "nh": [], "refits": []} for g in growths
    }
    for seed in SEEDS:
        experiment = Experiment(at_load(jobs, machine, load), Setup(machine, seed=seed))
        for g in growths:
            experiment.setup = dataclasses.replace(experiment.setup, refit_growth=g)
            result = experiment.run(POLICY)
            assert len(result.schedule) == len(jobs)
            m = result.metrics
            cells[g]["resp"].append(m.mean_response_s)
            cells[g]["kills"].append(float(m.killed))
            cells[g]["nh"].append(m.node_hours)
            cells[g]["refits"].append(float(result.refits))
    return cells


@pytest.mark.benchmark
def test_refit_growth_against_every_change(capsys: pytest.CaptureFixture[str]) -> None:
    growths = sorted({0.0, *GROWTHS})
    table = Table(
        title=f"Learned adaptive, refit growth g against g = 0 (every change), first "
        f"{TABLE_JOBS:,} jobs, seeds {SEEDS[0]}-{SEEDS[-1]} ({mode_note(FULL)})"
    )
    for column in ("trace", "load", "g", "resp s per seed", "resp Δ", "g=0 seed range",
                   "within", "kills", "node-h Δ", "refits"):  # fmt: skip
        table.add_column(column, justify="left" if column == "trace" else "right")
    for name, jobs, machine in _traces():
        for load in LOADS:
            cells = _run_cells(jobs, machine, load, growths)
            base = cells[0.0]
            spread = max(base["resp"]) - min(base["resp"])
            for g in growths:
                c = cells[g]
                delta = statistics.fmean(c["resp"]) - statistics.fmean(base["resp"])
                nh = statistics.fmean(c["nh"]) / statistics.fmean(base["nh"]) - 1.0
                table.add_row(
                    name.split("-")[0].split("_")[0],
                    f"{load:g}",
                    f"{g:g}",
                    " ".join(f"{r:,.0f}" for r in c["resp"]),
                    ""
                    if g == 0.0
                    else f"{delta:+,.0f} ({delta / statistics.fmean(base['resp']):+.0%})",
                    f"{spread:,.0f}" if g == 0.0 else "",
                    "" if g == 0.0 else ("yes" if abs(delta) <= spread else "NO"),
                    " ".join(f"{k:.0f}" for k in c["kills"]),
                    "" if g == 0.0 else f"{nh:+.1%}",
                    f"{statistics.fmean(c['refits']):,.0f}",
                )
    with capsys.disabled():
        console = Console(width=200)
        console.print()
        console.print(table)
        console.print(
            "resp: mean response (s) per seed; Δ: the mean over seeds against g = 0's; within: "
            "|Δ| ≤ the g = 0 runs' range over the seeds (the seed noise; one seed: 0, so any "
            "difference shows NO). node-h Δ: mean node-hours against g = 0's. g chosen on "
            "NASA, checked on Lublin and CEA-Curie (module doc). Full table: "
            "ADAPTALLOC_CADENCE_FULL=1."
        )
    record(
        "refit-cadence",
        title="The learner's refit cadence",
        source=__file__,
        full=FULL,
        tables=[table],
        notes=[
            "resp: mean response (s) per seed; Δ: the mean over seeds against g = 0's; "
            "within: |Δ| ≤ the g = 0 runs' range over the seeds (the seed noise; with one "
            "seed any difference shows NO). node-h Δ: mean node-hours against g = 0's.",
            "g = 0.25 was chosen on NASA (first 1,500 jobs, loads 0.5-1.0, seeds 1-3: of "
            "0.1, 0.25, 0.5 the only one within the g = 0 seed range at every load) and "
            "checked on Lublin and CEA-Curie, nothing tuned there. H = 24 h is not chosen "
            "by evidence: it bounds how stale a curve with new runs gets.",
            "The simulator's workload model is a SYNTHETIC assumption (A = median request × "
            "U[1, 4], 5% run noise).",
        ],
        section="Decision quality: g against g = 0",
    )
