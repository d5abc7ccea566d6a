"""``adaptalloc simulate --slurm-array DIR``: a sweep's cells as a Slurm job array, then gathered.

A sweep is traces × policy files × loads × seeds; a cell is one (trace, policy file, load,
seed) running every policy on one experiment (policies.simulation.sweep.Cell), so its
policies still share their fits. The pipeline, one step per function:

1. ``plan``: DIR/plan.json lists the cells (cell i: its trace, policy file, load and seed)
   and the options every cell shares; DIR/array.sh is the batch script.
2. ``submit``: ``sbatch --array=0-K DIR/array.sh`` (an argument list, never a shell); array
   task i runs ``python -m plugin simulate --plan DIR --cell i``.
3. ``run_cell``: one cell, written atomically to DIR/cells/i.json: its figures per policy
   (metrics) and the document's other parts (what was simulated).
4. ``gather``: every cell of every (trace, policy file) merged, the seeds of each load
   summarised as a local run does (mean and 95% interval): the same JSON document as
   ``adaptalloc simulate`` prints for one trace and one policy file; for several, one
   document each under ``{"sweeps": [...]}``.

Nothing a user typed reaches a shell: the script holds only the interpreter's path and
DIR, quoted with shlex.join, and names with control characters (or ``%``, which sbatch's
--output would expand) are refused with one line. Trace and policy paths go into plan.json,
which the cells read as data.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from plugin.errors import InputError, printable
from plugin.formats.swf import SwfTrace, read_swf
from plugin.policy_file import load_policy_config
from plugin.report.sim_document import assemble_document, document_parts, load_value
from policies import PolicyConfig, effective
from policies.simulation import MoldableRule, Setup
from policies.simulation.sweep import Cell, summarize_load
from policies.simulation.sweep import run_cell as run_sweep_cell
from policies.simulation.world import CODES_PER_KEY, SHARED

#: plan.json's and a cell file's format tags.
PLAN_FORMAT = "adaptalloc-simulate-plan/2"
CELL_FORMAT = "adaptalloc-simulate-cell/2"
#: sbatch's upper bound on one command.
SBATCH_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class SweepOptions:
    """What every cell of a sweep shares: the simulate command's options, as JSON values."""

    loads: tuple[float, ...] | None
    seeds: int
    seed: int
    backfill: bool
    moldable: tuple[float, float]
    max_parallelism: float | None
    curves: str
    parallelism_factor: tuple[float, float] | None
    noise: float
    procs_per_node: float | None
    max_jobs: int | None
    policies: tuple[str, ...]
    refits: str = "daemon"
    world: str = "cirne"
    codes_per_key: int = CODES_PER_KEY
    shared_codes: float = SHARED
    #: The partition's longest limit in minutes (None: the trace's longest limit).
    max_time: int | None = None
    #: The partition's MaxNodes (None: the machine).
    max_job_nodes: int | None = None

    @property
    def load_list(self) -> list[float | None]:
        return list(self.loads) if self.loads else [None]

    def setup(self, trace: SwfTrace, config: PolicyConfig) -> Setup:
        """The experiment's setup for `trace` with `config`; InputError for a bad value."""
        try:
            return Setup(
                machine=trace.machine,
                moldable=MoldableRule(*self.moldable),
                backfill=self.backfill,
                seed=self.seed,
                max_parallelism=self.max_parallelism,
                settings=effective(config),
                curves=self.curves,
                parallelism_factor=self.parallelism_factor,
                noise=self.noise,
                refits=self.refits,
                world=self.world,
                codes_per_key=self.codes_per_key,
                shared_codes=self.shared_codes,
                max_time_s=None if self.max_time is None else 60.0 * self.max_time,
                max_job_nodes=self.max_job_nodes,
            )
        except ValueError as exc:
            raise InputError(printable(str(exc))) from exc

    def read_trace(self, path: str) -> SwfTrace:
        trace = read_swf(path, self.procs_per_node)
        return trace if self.max_jobs is None else trace.head(self.max_jobs)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SweepOptions:
        try:
            return cls(
                loads=None if doc["loads"] is None else tuple(float(x) for x in doc["loads"]),
                seeds=int(doc["seeds"]),
                seed=int(doc["seed"]),
                backfill=bool(doc["backfill"]),
                moldable=(float(doc["moldable"][0]), float(doc["moldable"][1])),
                max_parallelism=(
                    None if doc["max_parallelism"] is None else float(doc["max_parallelism"])
                ),
                curves=str(doc["curves"]),
                parallelism_factor=(
                    None
                    if doc["parallelism_factor"] is None
                    else (
                        float(doc["parallelism_factor"][0]),
                        float(doc["parallelism_factor"][1]),
                    )
                ),
                noise=float(doc["noise"]),
                procs_per_node=(
                    None if doc["procs_per_node"] is None else float(doc["procs_per_node"])
                ),
                max_jobs=None if doc["max_jobs"] is None else int(doc["max_jobs"]),
                policies=tuple(str(p) for p in doc["policies"]),
                refits=str(doc.get("refits", "daemon")),  # a plan written before the option
                world=str(doc["world"]),
                codes_per_key=int(doc["codes_per_key"]),
                shared_codes=float(doc["shared_codes"]),
                max_time=None if doc["max_time"] is None else int(doc["max_time"]),
                max_job_nodes=(  # absent from a plan written before the option
                    None if doc.get("max_job_nodes") is None else int(doc["max_job_nodes"])
                ),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise InputError(f"the plan's options cannot be read: {printable(str(exc))}") from exc


@dataclass(frozen=True)
class PlannedCell:
    """Cell `index` of the plan: sweep `group` (one trace and one policy file), a load and a
    seed index."""

    index: int
    group: int
    trace: str
    config: str | None
    load_index: int
    seed_index: int


@dataclass(frozen=True)
class Plan:
    """Every cell of a sweep and the options they share."""

    options: SweepOptions
    cells: tuple[PlannedCell, ...]

    @classmethod
    def build(
        cls, traces: Sequence[str], configs: Sequence[str | None], options: SweepOptions
    ) -> Plan:
        """traces × configs × loads × seeds, in that order (absolute paths)."""
        cells: list[PlannedCell] = []
        group = 0
        for trace in traces:
            for config in configs:
                for li in range(len(options.load_list)):
                    for si in range(options.seeds):
                        cells.append(
                            PlannedCell(
                                len(cells),
                                group,
                                str(Path(trace).resolve()),
                                None if config is None else str(Path(config).resolve()),
                                li,
                                si,
                            )
                        )
                group += 1
        return cls(options, tuple(cells))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": PLAN_FORMAT,
            "options": asdict(self.options),
            "cells": [asdict(c) for c in self.cells],
        }

    @classmethod
    def read(cls, directory: Path) -> Plan:
        path = directory / "plan.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{printable(str(path))}: cannot read the plan: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("format") != PLAN_FORMAT:
            raise InputError(f"{printable(str(path))}: not an adaptalloc simulate plan")
        try:
            cells = tuple(
                PlannedCell(
                    int(c["index"]),
                    int(c["group"]),
                    str(c["trace"]),
                    None if c["config"] is None else str(c["config"]),
                    int(c["load_index"]),
                    int(c["seed_index"]),
                )
                for c in doc["cells"]
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{printable(str(path))}: a cell cannot be read: {exc}") from exc
        return cls(SweepOptions.from_json(doc["options"]), cells)


def check_name(what: str, text: str) -> None:
    """Refuse a path with control characters, or a `%` (sbatch expands it in --output)."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text) or "%" in text:
        raise InputError(
            f"{what} {printable(text)!r} has a control character or a %; choose another name"
        )


def batch_script(directory: Path, python: str = sys.executable) -> str:
    """The array's batch script: task i runs cell i (argv quoted with shlex.join)."""
    argv = shlex.join([python, "-m", "plugin", "-q", "simulate", "--plan", str(directory)])
    return (
        "#!/bin/sh\n"
        "# adaptalloc simulate --slurm-array: array task i runs the plan's cell i.\n"
        f'exec {argv} --cell "$SLURM_ARRAY_TASK_ID"\n'
    )


def write_plan(directory: Path, plan: Plan) -> Path:
    """DIR/plan.json, DIR/array.sh, DIR/cells/ and DIR/logs/; the script's path."""
    check_name("the results directory", str(directory))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if (directory / "plan.json").exists():
            raise InputError(
                f"{printable(str(directory))} already holds a plan; choose an empty directory"
            )
        (directory / "cells").mkdir(exist_ok=True)
        (directory / "logs").mkdir(exist_ok=True)
        (directory / "plan.json").write_text(
            json.dumps(plan.to_json(), indent=1) + "\n", encoding="utf-8"
        )
        script = directory / "array.sh"
        script.write_text(batch_script(directory), encoding="utf-8")
        script.chmod(0o755)
    except OSError as exc:
        raise InputError(f"{printable(str(directory))}: {exc.strerror or exc}") from exc
    return script


def submit(directory: Path, cells: int, partition: str | None = None, wait: bool = False) -> int:
    """Submit the array (tasks 0..cells-1); its job id. InputError with sbatch's own text."""
    argv = [
        "sbatch",
        "--parsable",
        f"--array=0-{cells - 1}",
        "--job-name=adaptalloc-simulate",
        f"--chdir={directory}",
        f"--output={directory / 'logs' / 'cell-%a.out'}",
        "--nodes=1",
        "--ntasks=1",
    ]
    if partition is not None:
        check_name("the partition", partition)
        argv.append(f"--partition={partition}")
    if wait:
        argv.append("--wait")
    argv.append(str(directory / "array.sh"))
    try:
        proc = subprocess.run(  # noqa: S603 - an argument list, no shell
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=None if wait else SBATCH_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"sbatch could not run: {exc}") from exc
    first = proc.stdout.strip().split(";")[0].split("\n")[0]
    if not first.isdigit():
        why = printable(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "")
        raise InputError(f"sbatch refused the array (exit {proc.returncode}): {why}")
    if wait and proc.returncode != 0:
        raise InputError(
            f"array job {first} ended with a failed cell (sbatch exit {proc.returncode}); "
            f"see {printable(str(directory / 'logs'))}"
        )
    return int(first)


def run_cell(directory: Path, index: int) -> Path:
    """Run the plan's cell `index`; write DIR/cells/<index>.json atomically; its path."""
    plan = Plan.read(directory)
    if not 0 <= index < len(plan.cells):
        raise InputError(f"no cell {index}: the plan has {len(plan.cells)}")
    planned = plan.cells[index]
    options = plan.options
    trace = options.read_trace(planned.trace)
    config = load_policy_config(planned.config)
    setup = options.setup(trace, config)
    load = options.load_list[planned.load_index]
    cell = Cell(trace.jobs, setup, load, planned.load_index, planned.seed_index, options.policies)
    try:
        results = run_sweep_cell(cell)
    except ValueError as exc:
        raise InputError(printable(str(exc))) from exc
    parts = None
    if planned.seed_index == 0:  # what was simulated: the document takes the first seed's
        parts = document_parts(
            trace, setup, cell.experiment(), results, config.source, options.seeds
        )
    doc = {
        "format": CELL_FORMAT,
        "cell": asdict(planned),
        "load": load,
        "metrics": {name: r.metrics.to_dict() for name, r in results.items()},
        "parts": parts,
    }
    out = directory / "cells" / f"{index}.json"
    tmp = out.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    tmp.replace(out)
    return out


def gather(directory: Path) -> dict[str, Any]:
    """The merged document (module doc); InputError naming the cells that are missing."""
    plan = Plan.read(directory)
    cells: dict[int, dict[str, Any]] = {}
    missing = []
    for planned in plan.cells:
        path = directory / "cells" / f"{planned.index}.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            missing.append(planned.index)
            continue
        except (OSError, ValueError) as exc:
            raise InputError(f"{printable(str(path))}: cannot read: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("format") != CELL_FORMAT:
            raise InputError(f"{printable(str(path))}: not a cell of adaptalloc simulate")
        cells[planned.index] = doc
    if missing:
        shown = ", ".join(str(i) for i in missing[:10]) + (", ..." if len(missing) > 10 else "")
        raise InputError(
            f"{len(missing)} of {len(plan.cells)} cells have no result yet ({shown}); "
            f"see {printable(str(directory / 'logs'))}"
        )
    documents = []
    for group in sorted({c.group for c in plan.cells}):
        mine = [c for c in plan.cells if c.group == group]
        head = next(cells[c.index] for c in mine if c.load_index == 0 and c.seed_index == 0)
        parts = head["parts"]
        offered = parts["trace"]["offered_load"]
        loads = []
        for li, load in enumerate(plan.options.load_list):
            seeds = sorted((c for c in mine if c.load_index == li), key=lambda c: c.seed_index)
            per_seed = [cells[c.index]["metrics"] for c in seeds]
            summaries = {
                name: summary.to_dict()
                for name, summary in summarize_load(per_seed, plan.options.policies).items()
            }
            given = load_value(load, offered if offered is not None else float("inf"))
            loads.append({"load": given, "policies": summaries})
        documents.append(assemble_document(parts, loads))
    return documents[0] if len(documents) == 1 else {"sweeps": documents}
