"""``adaptalloc decide`` and ``adaptalloc policy check``: the allocation policies, on the CLI.

decide
    Fits the curve from an observation CSV, builds the request and the cluster state from
    options, and prints the decision: ``{"nodes", "time_limit_min", "rule", "reason"}`` with
    ``--format json`` (DESIGN.md) and ``"max_nodes"`` (null when pinned, the range's largest
    size with release = "range"), plus ``"time_limit_reason"`` and every rule's
    ``"candidates"`` and the ``"load_rule"`` with ``--explain``. For the shapes the daemon
    decides by their own rule (plugin/daemon/shape.py, the same code) it adds keys:
    ``"tasks"``, ``"tasks_per_node"``, ``"placement"`` with ``--ntasks``; ``"scaling"`` with
    ``--scaling weak``; ``"partition"`` and ``"partitions"`` with several partitions
    (``--wait`` what-if waits, or ``--queue`` to read them from Slurm); ``"master_worker"``
    with ``--pattern master-worker`` (the cap, or why there is none); ``"roofline"`` when the
    curve that decided is a roofline prior (a node type the app has no curve on, described
    in the adaptalloc TOML's ``[node_types.NAME]``, which decide reads when it is given a
    partition or a pattern).
policy check
    Validates a policy file and prints the settings in effect for the defaults and for each
    partition and account table.

The policy file is read here (tomllib) and validated by `policies.parse_config`; every problem
is one line naming the file: unreadable, not TOML (with line and column), or a key the
policies refuse (with what is allowed).
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click
import numpy as np
import numpy.typing as npt
import structlog
from rich import box
from rich.console import Console
from rich.table import Table

import policies
import predictor
from plugin.cli.common import (
    elapsed_ms,
    emit_json,
    format_option,
    observation_options,
    predictor_call,
    source_name,
)
from plugin.cli.common import stdout_console as _stdout_console
from plugin.daemon import shape
from plugin.errors import InputError, TooManyRowsError, printable, quote_value
from plugin.formats.observations_csv import (
    RawObservations,
    load_observations,
    read_observations,
    read_observations_stream,
)
from plugin.learning.learner import curve_from_fit
from plugin.learning.priors import Prior
from plugin.policy_file import load_policy_config
from policies.decide import NO_BUDGET
from policies.fallback import curve_on_type
from policies.master_worker import Figures, WorkerCap
from policies.roofline import NodeType
from policies.rules import load_rule_words
from policies.second_size import Run, second_size

__all__ = [
    "decide",
    "load_policy_config",
    "parse_partitions",
    "parse_range",
    "parse_waits",
    "policy",
]

log = structlog.get_logger("adaptalloc")
T = TypeVar("T")
_RANGE = re.compile(r"\s*([0-9]{1,9})\s*(?:-\s*([0-9]{1,9})\s*)?")


# --- decide ---------------------------------------------------------------------------------


def parse_range(text: str) -> tuple[int, int]:
    """``--nodes``: ``MIN-MAX`` or a single ``N``; ValueError naming what is wrong."""
    match = _RANGE.fullmatch(text)
    if not match:
        raise ValueError(f"{quote_value(text)} is not a node range like 4-64")
    low = int(match.group(1))
    high = int(match.group(2) or low)
    if low < 1:
        raise ValueError(f"the range must start at 1 node or more, got {low}")
    if high < low:
        raise ValueError(f"the range's maximum must not be below its minimum, got {low}-{high}")
    return low, high


def _range_callback(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, int]:
    try:
        return parse_range(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


_PARTITION_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_WAIT = re.compile(r"\s*([A-Za-z0-9._-]{1,64})\s*=\s*([0-9]{1,12}(?:\.[0-9]{1,6})?)\s*")


def parse_partitions(text: str) -> list[str]:
    """``--partition``: one name or a list ``a,b`` (the user's order, repeats dropped);
    ValueError naming what is wrong."""
    out: list[str] = []
    for word in text.split(","):
        name = word.strip()
        if not _PARTITION_NAME.fullmatch(name):
            raise ValueError(
                f"{quote_value(name)} is not a partition name (letters, digits, '.', '_', '-'; "
                "a list is a,b)"
            )
        if name not in out:
            out.append(name)
    return out


_COUNT = re.compile(r"\s*([A-Za-z0-9._-]{1,64})\s*=\s*([0-9]{1,9})\s*")


def parse_counts(text: str) -> int | dict[str, int]:
    """``--idle``/``--total``: a bare ``N`` for every partition, or ``a=4,b=16`` per partition;
    ValueError naming what is wrong."""
    if text.strip().isdigit():
        return int(text)
    out: dict[str, int] = {}
    for word in text.split(","):
        match = _COUNT.fullmatch(word)
        if not match:
            raise ValueError(
                f"{quote_value(word.strip())} is not N or PARTITION=N (a whole number of nodes, "
                "like big=16)"
            )
        name = match.group(1)
        if name in out:
            raise ValueError(f"partition {name} is given two counts")
        out[name] = int(match.group(2))
    return out


def parse_waits(text: str) -> dict[str, float]:
    """``--wait``: ``a=0,b=3600``, each listed partition's wait in seconds; ValueError naming
    what is wrong."""
    out: dict[str, float] = {}
    for word in text.split(","):
        match = _WAIT.fullmatch(word)
        if not match:
            raise ValueError(
                f"{quote_value(word.strip())} is not PARTITION=SECONDS (a wait of 0 or more "
                "seconds, like big=3600)"
            )
        name, seconds = match.group(1), float(match.group(2))
        if name in out:
            raise ValueError(f"partition {name} is given two waits")
        out[name] = seconds
    return out


def parse_budget(text: str) -> policies.ExplorationBudget:
    """``JOBS,EXPLORED,NODE_HOURS,EXPLORED_NODE_HOURS``: the daemon's exploration counters, as
    a decision's record holds them (``adaptalloc explain JOB --format json``, ``budget``)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 4:
        raise ValueError(
            f"expected JOBS,EXPLORED,NODE_HOURS,EXPLORED_NODE_HOURS (four numbers), got "
            f"{quote_value(text)}"
        )
    try:
        jobs, explored = int(parts[0]), int(parts[1])
        hours, explored_hours = float(parts[2]), float(parts[3])
    except ValueError:
        raise ValueError(
            f"expected whole job counts and node-hours as numbers, got {quote_value(text)}"
        ) from None
    return policies.ExplorationBudget(jobs, explored, hours, explored_hours)


def _parsed(parse: Callable[[str], T]) -> Callable[[click.Context, click.Parameter, Any], T | None]:
    """A click callback: `parse` the option's text, ValueError as a bad-parameter line."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> T | None:
        if value is None:
            return None
        try:
            return parse(value)
        except ValueError as exc:
            raise click.BadParameter(printable(str(exc)), ctx=ctx, param=param) from None

    return callback


def _parsed_figure(
    zero: bool,
) -> Callable[[click.Context, click.Parameter, float | None], float | None]:
    """A click callback for a task figure or an intensity: finite and > 0 (≥ 0 with
    `zero`), as the tag's values (plugin/appkey.py)."""

    def callback(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
        if value is None:
            return None
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
            least = "≥ 0" if zero else "> 0"
            raise click.BadParameter(f"must be a finite number {least}", ctx=ctx, param=param)
        return value

    return callback


def _feasible_callback(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> policies.Feasible | None:
    if value is None:
        return None
    try:
        return policies.parse_feasible(value)
    except ValueError as exc:
        raise click.BadParameter(printable(str(exc)), ctx=ctx, param=param) from None


def _count(name: str, least: int, help_text: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """An optional whole-number option (None when not given)."""
    return click.option(
        name, type=click.IntRange(min=least), default=None, metavar="N", help=help_text
    )


def _raw(obs_csv: str, max_rows: int) -> RawObservations:
    """The file's runs as read (path, or stdin for ``-``), before any averaging."""
    try:
        if obs_csv == "-":
            return read_observations_stream(sys.stdin.buffer, source_name(obs_csv), max_rows)
        return read_observations(obs_csv, max_rows)
    except TooManyRowsError as exc:
        raise InputError(f"{exc}; pass --max-rows to raise the limit") from exc


def _fit_rows(
    raw: RawObservations, rows: npt.NDArray[np.bool_] | None, method: str
) -> tuple[predictor.Curve | None, str, str]:
    """The curve the learner would store for these runs (all of them, or `rows`), or None
    and why when the fit failed."""
    if rows is None:
        obs = load_observations(raw)
    else:
        obs = predictor_call(lambda: predictor.prepare(raw.n[rows], raw.runtime[rows]))
    fit = predictor_call(lambda: predictor.fit_observations(obs, method=method))
    if fit.status != "ok":
        return None, f"the fit failed ({printable(fit.message) or 'no reason given'})", ""
    return predictor_call(lambda: curve_from_fit(fit)), "", ""


def _curve_for_size(
    raw: RawObservations, size: float, method: str
) -> tuple[predictor.Curve | None, str, str]:
    """Problem size `size`'s curve from a study of several sizes (the file's size column):
    its own runs' when they span two node counts, else borrowed from the other sizes."""
    from plugin.formats.observations_csv import require_sizes  # noqa: PLC0415
    from plugin.learning.borrow import borrow_from_runs, own_runs  # noqa: PLC0415

    sizes = require_sizes(raw)
    own = own_runs(sizes, raw.n, size)
    if own is None:
        borrowed = predictor_call(lambda: borrow_from_runs(size, sizes, raw.n, raw.runtime))
        return borrowed.curve, "", borrowed.note
    return _fit_rows(raw, own, method)


@dataclass(frozen=True)
class _Run:
    """One CSV row as plugin/daemon/shape.py reads a stored observation."""

    nodes: int
    runtime_s: float
    size: float | None = None
    tasks_per_node: int | None = None
    node_type: str | None = None


def _cell(values: npt.NDArray[np.float64] | None, i: int) -> float | None:
    if values is None or not np.isfinite(values[i]):
        return None
    return float(values[i])


class _FileRuns:
    """The runs of --observations for the shapes: curve, per node type, the rows as runs."""

    def __init__(self, raw: RawObservations, method: str, size: float | None) -> None:
        self.raw, self.method, self.size = raw, method, size

    def curve(self) -> tuple[predictor.Curve | None, str, str]:
        if self.size is not None:
            return _curve_for_size(self.raw, self.size, self.method)
        return _fit_rows(self.raw, None, self.method)

    def typed(self, node_type: str) -> predictor.Curve | None:
        """The curve of the rows whose node_type is `node_type`, when they fit one."""
        if self.raw.node_type is None:
            return None
        rows = np.array([t == node_type for t in self.raw.node_type], dtype=bool)
        if np.unique(self.raw.n[rows]).size < 2 or rows.all():
            return None
        try:
            return _fit_rows(self.raw, rows, self.method)[0]
        except InputError:
            return None

    def typed_types(self) -> tuple[str, ...]:
        """The node types with a curve of their own (as the learner: when the rows span more
        than one type)."""
        kinds = sorted({t for t in self.raw.node_type or () if t is not None})
        return tuple(kinds) if len(kinds) > 1 else ()

    def run_types(self) -> frozenset[str | None]:
        return frozenset(self.raw.node_type or (None,))

    def runs(self) -> list[_Run]:
        raw = self.raw
        out = []
        for i in range(len(raw)):
            tpn = _cell(raw.tasks_per_node, i)
            out.append(
                _Run(
                    int(raw.n[i]),
                    float(raw.runtime[i]),
                    _cell(raw.size, i),
                    None if tpn is None else int(tpn),
                    raw.node_type[i] if raw.node_type is not None else None,
                )
            )
        return out

    def weak_runs(self) -> list[_Run]:
        return self.runs()

    def one_size_runs(self) -> list[Run]:
        """No runs: a file of runs at one size fits no curve and is refused when read, and
        its rows carry no time limits (policies/second_size.py needs them)."""
        return []


class _StoreRuns:
    """The app's curves and observations in the store, read as the daemon reads them
    (plugin/daemon/decider.py CurveSource: borrowing, per node type, sibling sizes)."""

    def __init__(self, app_text: str, redis_url: str | None) -> None:
        # Imported here: only --app needs Redis and the store's configuration.
        from plugin.appkey import AppKey  # noqa: PLC0415
        from plugin.cli.common import open_store  # noqa: PLC0415
        from plugin.daemon.decider import CurveSource  # noqa: PLC0415

        self.app = AppKey.parse(app_text)
        store = open_store(None, redis_url).store
        self.source = CurveSource(lambda: store)

    def curve(self) -> tuple[predictor.Curve | None, str, str]:
        from plugin.learning.borrow import BORROWED  # noqa: PLC0415

        app = self.app
        record = self.source.get(app)
        if record is None:
            return None, f"no curve is stored for app {app}", ""
        if record.curve is None:
            why = record.note or record.error or "none fitted yet"
            return None, f"app {app} has no usable stored curve ({printable(why)})", ""
        return record.curve, "", record.note if record.method == BORROWED else ""

    def typed(self, node_type: str) -> predictor.Curve | None:
        record = self.source.typed(self.app, node_type)
        return record.curve if record is not None else None

    def typed_types(self) -> tuple[str, ...]:
        return self.source.typed_types(self.app)

    def run_types(self) -> frozenset[str | None]:
        return self.source.run_node_types(self.app)

    def runs(self) -> list[Any]:
        return self.source.observations(self.app)

    def weak_runs(self) -> list[Any]:
        return [*self.runs(), *self.source.sibling_runs(self.app)]

    def one_size_runs(self) -> list[Run]:
        """The app's runs as the daemon's decider reads them for a second size."""
        return self.source.one_size_runs(self.app)


def _say(console: Console, text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _headline(decision: policies.Decision) -> str:
    if decision.nodes is None:
        return f"Left as submitted (rule: {decision.rule})."
    size = f"{decision.nodes} node" if decision.nodes == 1 else f"{decision.nodes} nodes"
    if decision.max_nodes is not None:
        size = f"{decision.nodes}-{decision.max_nodes} nodes (Slurm picks at start)"
    limit = (
        "time limit unchanged"
        if decision.time_limit_min is None
        else f"time limit {decision.time_limit_min} min"
    )
    return f"{size}, {limit} (rule: {decision.rule})."


def render_decision(
    decision: policies.Decision, console: Console, explain: bool, load_rule: str = ""
) -> None:
    """The decision for people: a headline, why, and with `explain` every rule's candidate
    and the load rule."""
    _say(console, _headline(decision))
    _say(console, f"Why: {printable(decision.reason)}.")
    _say(console, f"Time limit: {printable(decision.time_limit_reason)}.")
    if not explain:
        return
    if load_rule:
        _say(console, f"Load rule: {load_rule}.")
    table = Table(box=box.SIMPLE, show_header=True, title="Every rule's candidate")
    table.add_column("rule")
    table.add_column("nodes", justify="right")
    table.add_column("reason", overflow="fold")
    for candidate in decision.candidates:
        won = candidate.rule == decision.rule
        table.add_row(
            f"{candidate.rule}{' *' if won else ''}",
            "-" if candidate.nodes is None else str(candidate.nodes),
            printable(candidate.reason),
        )
    console.print(table)
    if decision.rule == policies.decision.CAP:
        note = "* the cap decided: the strategy's size was above the maximum useful size."
    else:
        note = "* the rule that decided the size; constraints may have moved it (see Why)."
    _say(console, note)


@click.command()
@click.option(
    "--app",
    "app_key",
    default=None,
    metavar="KEY",
    help="Use the curve stored for this app key (name or name@size) in Redis.",
)
@click.option(
    "--observations",
    "obs_csv",
    default=None,
    type=click.Path(allow_dash=True, path_type=str),
    metavar="OBS.csv",
    help="Fit the curve from these runs instead (header n,runtime; - for stdin).",
)
@click.option(
    "--redis-url",
    metavar="URL",
    default=None,
    help="With --app: the Redis to read (default: the adaptalloc TOML's [redis] url, $REDIS_URL).",
)
@click.option(
    "--nodes",
    "node_range",
    required=True,
    callback=_range_callback,
    metavar="MIN-MAX",
    help="The job's node range as submitted (sbatch --nodes=MIN-MAX).",
)
@click.option(
    "--time-limit",
    type=click.IntRange(min=1),
    default=None,
    metavar="MIN",
    help="The job's time limit in minutes; without it the limit is left alone.",
)
@click.option(
    "--idle",
    callback=_parsed(parse_counts),
    metavar="N|P=N,...",
    help="Idle nodes in the partition now (a=4,b=16 per partition; a bare N for all); "
    "without it the load counts as neutral.",
)
@_count(
    "--pending", 0, "Nodes requested by the other pending jobs in the partition (needs --idle)."
)
@click.option(
    "--total",
    callback=_parsed(parse_counts),
    metavar="N|P=N,...",
    help="Nodes in the partition; a job never gets more (a=64,b=16 per partition; a bare N "
    "for all).",
)
@_count("--partition-max-nodes", 1, "The partition's MaxNodes per job.")
@click.option(
    "--partition-max-time",
    type=click.IntRange(min=1),
    default=None,
    metavar="MIN",
    help="The partition's MaxTime in minutes.",
)
@click.option(
    "--partition",
    "partition_list",
    default=None,
    callback=_parsed(parse_partitions),
    metavar="P[,Q...]",
    help="Partition (selects [partition.P]); several (a,b) ask which one the daemon would "
    "choose by predicted completion, each on its node type's curve (needs --wait).",
)
@click.option(
    "--queue",
    "read_queue",
    is_flag=True,
    help="With several partitions: each one's wait and load from Slurm's current queue "
    "(sinfo, squeue, scontrol), as the daemon reads them, instead of --wait.",
)
@click.option(
    "--wait",
    "waits",
    default=None,
    callback=_parsed(parse_waits),
    metavar="P=S,...",
    help="With several partitions: the wait in seconds each would give the job (what-if).",
)
@_count(
    "--ntasks",
    1,
    "A fixed task count (sbatch --ntasks): which node count, and so tasks per node, the "
    "daemon would place it on, from the app's runs with tasks per node.",
)
@_count("--cpus-per-node", 1, "With --ntasks: the partition's CPUs per node (a placement cap).")
@click.option(
    "--scaling",
    type=click.Choice(["strong", "weak"]),
    default="strong",
    show_default=True,
    help="weak: size by Gustafson's law from the app's runs with a problem size "
    "(tag scaling=weak).",
)
@click.option(
    "--pattern",
    type=click.Choice(["master-worker"]),
    default=None,
    help="master-worker: cap the size at the nodes the workers one master keeps busy need "
    "(tag pattern=master-worker): from --tc, --vi and --vo with the partition's link_gbs, "
    "else learned from the curve.",
)
@click.option(
    "--tc", type=float, callback=_parsed_figure(False), metavar="S",
    help="With --pattern master-worker: seconds of compute per task on one worker (tag tc=).",
)  # fmt: skip
@click.option(
    "--vi", type=float, callback=_parsed_figure(True), metavar="BYTES",
    help="With --tc: bytes sent to a worker per task (tag vi=).",
)  # fmt: skip
@click.option(
    "--vo", type=float, callback=_parsed_figure(True), metavar="BYTES",
    help="With --tc: bytes a worker returns per task (tag vo=).",
)  # fmt: skip
@_count(
    "--ntasks-per-node",
    1,
    "With --pattern master-worker: tasks (the workers and the master) per node; Slurm's "
    "default is 1.",
)
@click.option(
    "--intensity", type=float, callback=_parsed_figure(False), metavar="FLOP/B",
    help="The app's operational intensity (tag intensity=), for the roofline prior on a "
    "partition it has no curve on ([node_types] in the adaptalloc TOML).",
)  # fmt: skip
@click.option("--account", default="", metavar="A", help="Account (selects [account.A]).")
@click.option(
    "--feasible",
    callback=_feasible_callback,
    metavar="TAG",
    help="Sizes the job's tag allows: powers_of_two, squares or a list like 6,12,24.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    metavar="policy.toml",
    help="Policy file (see deploy/policy.example.toml); the built-in defaults without it.",
)
@click.option("--explain", is_flag=True, help="Also show every rule's candidate and why.")
@click.option(
    "--budget",
    default=None,
    callback=_parsed(parse_budget),
    metavar="J,E,H,EH",
    help="The daemon's exploration counters: jobs decided and explored, node-hours decided "
    "and explored (a decision's record holds them: adaptalloc explain JOB --format json). "
    "Without it none, as in a daemon that has decided nothing yet: nothing is explored.",
)
@click.option(
    "--size",
    "problem_size",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="S",
    help="With --observations: decide for problem size S of a study with a 'size' column "
    "(its own runs' curve, or one borrowed from the other sizes).",
)
@observation_options
def decide(
    app_key: str | None,
    obs_csv: str | None,
    redis_url: str | None,
    node_range: tuple[int, int],
    time_limit: int | None,
    idle: int | dict[str, int] | None,
    pending: int | None,
    total: int | dict[str, int] | None,
    partition_max_nodes: int | None,
    partition_max_time: int | None,
    partition_list: list[str] | None,
    read_queue: bool,
    waits: dict[str, float] | None,
    ntasks: int | None,
    cpus_per_node: int | None,
    scaling: str,
    pattern: str | None,
    tc: float | None,
    vi: float | None,
    vo: float | None,
    ntasks_per_node: int | None,
    intensity: float | None,
    account: str,
    feasible: policies.Feasible | None,
    config_path: str | None,
    explain: bool,
    budget: policies.ExplorationBudget | None,
    problem_size: float | None,
    method: str,
    output_format: str,
    max_rows: int,
) -> None:
    """Choose the node count and time limit for a moldable job, and say why.

    The curve is the one stored for --app KEY, or fitted from --observations OBS.csv; the job
    is --nodes MIN-MAX (and --time-limit); the cluster is --idle, --pending and --total (and
    the partition's limits). Without --idle the load is unknown and counts as neutral. With
    --app the store's settings come from the adaptalloc TOML ($ADAPTALLOC_CONFIG,
    /etc/adaptalloc/adaptalloc.toml); --config is the policy file.
    """
    started = time.perf_counter()
    if (app_key is None) == (obs_csv is None):
        raise click.UsageError("give exactly one of --app KEY and --observations OBS.csv")
    if problem_size is not None and obs_csv is None:
        raise click.UsageError("--size goes with --observations (with --app, tag the key: cg@3000)")
    if redis_url is not None and app_key is None:
        raise click.UsageError("--redis-url goes with --app")
    if pending is not None and idle is None:
        raise click.UsageError("--pending needs --idle (the load is pending per idle node)")
    listed = partition_list or []
    _check_shape(node_range, listed, waits, ntasks, cpus_per_node, read_queue)
    seeds = _seeds(pattern, tc, vi, vo, ntasks_per_node, intensity)
    if read_queue and (idle, pending, total) != (None, None, None):
        raise click.UsageError("--queue reads the load from Slurm: drop --idle, --pending, --total")
    per_idle, per_total = (
        _per_partition("--idle", idle, listed),
        _per_partition("--total", total, listed),
    )
    partition = ",".join(listed)
    config = load_policy_config(config_path)
    try:
        request = policies.Request(
            node_range[0], node_range[1], time_limit, partition, account, feasible=feasible
        )
        cluster = policies.ClusterState(
            idle_nodes=_first(idle, listed),
            pending_demand_nodes=pending or 0,
            total_nodes=_first(total, listed),
            max_nodes_per_job=partition_max_nodes,
            max_time_min=partition_max_time,
        )
        what_if = _WhatIf(cluster, waits or {}, per_idle, per_total)
        for name in listed:
            what_if.state(name)  # each partition's --idle/--total checked now, not mid-decision
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    runs: _FileRuns | _StoreRuns
    if app_key is not None:
        runs = _StoreRuns(app_key, redis_url)
    else:
        runs = _FileRuns(_raw(str(obs_csv), max_rows), method, problem_size)
    # Judged by the first listed, as the daemon judges a job it places on none of its list.
    settings = policies.effective(config, listed[0] if listed else "", account)
    where = _live_queues(request, listed) if read_queue else what_if
    types = _node_types(listed, seeds)
    decision, shown = _shaped_decision(
        request,
        cluster,
        settings,
        runs,
        listed,
        where,
        ntasks,
        cpus_per_node,
        scaling,
        lambda name: policies.effective(config, name, account),
        _Seeded(seeds, ntasks_per_node or 1, types),
        budget or NO_BUDGET,
    )
    load_rule = load_rule_words(settings)
    if output_format == "json":
        doc = decision.to_dict(explain)
        if explain:
            doc["load_rule"] = load_rule
        emit_json({**doc, **shown})
    else:
        console = _stdout_console()
        render_decision(decision, console, explain, load_rule)
        _render_shape(shown, console)
        sys.stdout.flush()
    log.info(
        "decide",
        app=app_key and printable(app_key),
        path=obs_csv and printable(obs_csv),
        config=config.source,
        min_nodes=request.min_nodes,
        max_nodes=request.max_nodes,
        time_limit_min=time_limit,
        idle=idle,
        pending=pending,
        partitions=listed,
        tasks=ntasks,
        scaling=scaling,
        nodes=decision.nodes,
        new_time_limit_min=decision.time_limit_min,
        new_max_nodes=decision.max_nodes,
        rule=decision.rule,
        reason=printable(decision.reason),
        elapsed_ms=elapsed_ms(started),
    )


def _seeds(
    pattern: str | None,
    tc: float | None,
    vi: float | None,
    vo: float | None,
    ntasks_per_node: int | None,
    intensity: float | None,
) -> shape.Seeds:
    """The options of the seed papers' models as the tag's (plugin/appkey.py): the task
    figures go together and with --pattern (one UsageError line if not)."""
    given = [
        name for name, value in (("--tc", tc), ("--vi", vi), ("--vo", vo)) if value is not None
    ]
    if given and pattern is None:
        raise click.UsageError(f"{given[0]} goes with --pattern master-worker")
    if given and len(given) < 3:
        raise click.UsageError("--tc, --vi and --vo go together (the task figures)")
    if ntasks_per_node is not None and pattern is None:
        raise click.UsageError("--ntasks-per-node goes with --pattern master-worker")
    reported = None
    if tc is not None and vi is not None and vo is not None:
        try:
            reported = Figures(tc, vi, vo)
        except ValueError as exc:
            raise click.UsageError(f"--vi and --vo: {exc}") from None
    return shape.Seeds(pattern == "master-worker", reported, intensity)


def _node_types(listed: list[str], seeds: shape.Seeds) -> dict[str, Any]:
    """The adaptalloc TOML's [node_types.NAME] when they can matter (a partition or a
    pattern is given), else none (the file is not read)."""
    if not listed and not seeds.master_worker:
        return {}
    from plugin.config import load_config  # noqa: PLC0415

    return dict(load_config(None).node_types)


@dataclass(frozen=True)
class _Seeded:
    """What decide's seed-model options give _shaped_decision: the tag's seeds, tasks per
    node and the described node types."""

    seeds: shape.Seeds
    tasks_per_node: int
    node_types: dict[str, Any]


def _check_shape(
    node_range: tuple[int, int],
    listed: list[str],
    waits: dict[str, float] | None,
    ntasks: int | None,
    cpus_per_node: int | None,
    read_queue: bool = False,
) -> None:
    """The options for the job's shape agree with each other (one UsageError line if not)."""
    low = node_range[0]
    if ntasks is not None and ntasks < low:
        raise click.UsageError(
            f"--ntasks {ntasks} does not fit the range {low}-{node_range[1]}: each of the "
            f"at least {low} nodes needs a task"
        )
    if cpus_per_node is not None and ntasks is None:
        raise click.UsageError("--cpus-per-node goes with --ntasks")
    if waits is not None and len(listed) < 2:
        raise click.UsageError("--wait goes with several partitions (--partition a,b)")
    if read_queue and len(listed) < 2:
        raise click.UsageError("--queue goes with several partitions (--partition a,b)")
    if read_queue and waits is not None:
        raise click.UsageError("give one of --wait and --queue")
    if len(listed) >= 2 and not read_queue:
        if waits is None:
            raise click.UsageError(
                "several partitions need --wait P=SECONDS,... (the wait each would give the "
                "job) or --queue (the waits the current queue implies)"
            )
        for name in waits:
            if name not in listed:
                raise click.UsageError(
                    f"--wait names partition {name}, which --partition does not list"
                )
        for name in listed:
            if name not in waits:
                raise click.UsageError(f"--wait gives no wait for partition {name}")


def _per_partition(
    option: str, value: int | dict[str, int] | None, listed: list[str]
) -> dict[str, int]:
    """The per-partition counts of --idle/--total (empty for a bare N); a usage error unless
    they name exactly the listed partitions."""
    if not isinstance(value, dict):
        return {}
    if len(listed) < 2:
        raise click.UsageError(f"{option} P=N,... goes with several partitions (--partition a,b)")
    if set(value) != set(listed):
        raise click.UsageError(
            f"{option} must give a count for each of --partition's {', '.join(listed)}"
        )
    return value


def _first(value: int | dict[str, int] | None, listed: list[str]) -> int | None:
    """A bare count as is; per-partition counts give the first listed partition's."""
    if isinstance(value, dict):
        return value[listed[0]]
    return value


class _WhatIf:
    """Every partition with the options' cluster state (its own --idle/--total when given
    per partition) and the --wait given for it."""

    def __init__(
        self,
        cluster: policies.ClusterState,
        waits: dict[str, float],
        idle: dict[str, int] | None = None,
        total: dict[str, int] | None = None,
    ) -> None:
        self.cluster, self.waits = cluster, waits
        self.idle, self.total = idle or {}, total or {}

    def state(self, name: str) -> policies.ClusterState:
        return dataclasses.replace(
            self.cluster,
            idle_nodes=self.idle.get(name, self.cluster.idle_nodes),
            total_nodes=self.total.get(name, self.cluster.total_nodes),
        )

    def wait(self, name: str, nodes: int) -> float:
        return self.waits[name]

    def cpus(self, name: str) -> int | None:
        """Cores per node are not given in a what-if: unknown (refuses no fallback)."""
        return None


class _LiveQueues:
    """Each partition's state and wait from Slurm now, as the daemon reads them
    (plugin/daemon/cluster.py ClusterView: sinfo, squeue, scontrol show partition)."""

    def __init__(self, view: Any, job: Any, pending: list[Any], queues: dict[str, Any]) -> None:
        self.view, self.job, self.pending, self.queues = view, job, pending, queues

    def state(self, name: str) -> policies.ClusterState:
        from plugin.daemon.cluster import pending_demand  # noqa: PLC0415

        where = dataclasses.replace(self.job, partition=name)
        return self.view.state(where, pending_demand(self.pending))  # type: ignore[no-any-return]

    def wait(self, name: str, nodes: int) -> float:
        from policies.partition import wait_estimate  # noqa: PLC0415

        return wait_estimate(self.queues[name], nodes)

    def cpus(self, name: str) -> int | None:
        """The partition's CPUs per node from sinfo (None: unknown), as the daemon's."""
        return self.view.cpus_per_node(name)  # type: ignore[no-any-return]


def _live_queues(request: policies.Request, listed: list[str]) -> _LiveQueues:
    """Read the queue of each listed partition from Slurm (the adaptalloc TOML's [slurm]
    backend); InputError when Slurm cannot say or does not know a partition."""
    # Imported here: only --queue reads Slurm.
    from plugin.config import load_config  # noqa: PLC0415
    from plugin.daemon.cluster import ClusterView  # noqa: PLC0415
    from plugin.slurm import JobRecord, SlurmError, slurm_reader  # noqa: PLC0415

    slurm = load_config(None).slurm
    view = ClusterView(slurm_reader(slurm.backend, slurm.timeout_s))
    try:
        jobs = view.slurm.jobs()
    except SlurmError as exc:
        raise InputError(f"cannot read the queue: {printable(str(exc))[:300]}") from exc
    known = view.partitions()
    for name in listed:
        if name not in known:
            names = ", ".join(sorted(known)) or "none"
            raise InputError(f"Slurm knows no partition {name} (it knows: {printable(names)})")
    pending = [j for j in jobs if j.state == "PENDING"]
    job = JobRecord(
        0, "decide", "", request.account, ",".join(listed), "PENDING", "decide",
        nodes_min=request.min_nodes, nodes_max=request.max_nodes,
    )  # fmt: skip
    now = time.time()
    queues = {name: view.queue(name, pending, job, now) for name in listed}
    if any(q is None for q in queues.values()):
        raise InputError("cannot read the queue: sinfo or squeue failed (see the log)")
    return _LiveQueues(view, job, pending, queues)


def _shaped_decision(
    request: policies.Request,
    cluster: policies.ClusterState,
    settings: policies.PolicySettings,
    runs: _FileRuns | _StoreRuns,
    listed: list[str],
    where: _WhatIf | _LiveQueues,
    ntasks: int | None,
    cpus_per_node: int | None,
    scaling: str,
    settings_for: Callable[[str], policies.PolicySettings],
    seeded: _Seeded | None = None,
    budget: policies.ExplorationBudget = NO_BUDGET,
) -> tuple[policies.Decision, dict[str, Any]]:
    """The decision the daemon would make (plugin/daemon/decider.py, same order: weak
    scaling, then a fixed task count, then several partitions, else the run at a second size
    of an app whose runs all ran at one size, else the curve's; the master-worker cap and the
    roofline prior as there), and the keys it adds to the JSON document. `budget`: the
    daemon's exploration counters."""
    theta = settings.efficiency_threshold
    if scaling == "weak":
        weak = shape.weak_decision(request, runs.weak_runs(), cluster, theta)
        return weak, {"scaling": "weak"}
    # Slurm gives a job without --ntasks as many tasks as its minimum node count: the daemon
    # places only task counts above it (shape.fixed_tasks).
    if ntasks is not None and ntasks > request.min_nodes:
        placed = shape.placement_decision(
            ntasks, request, cluster, runs.runs(), theta, cpus_per_node
        )
        return placed.decision, {
            "tasks": ntasks,
            "tasks_per_node": placed.tasks_per_node,
            "placement": placed.detail,
        }
    curve, missing, borrowed = runs.curve()
    typed = _TypeCurves(runs, curve, where, settings_for, seeded, listed[0] if listed else "")
    shown: dict[str, Any] = {}
    decision: policies.Decision | None = None
    chosen = listed[0] if len(listed) == 1 else ""
    if len(listed) >= 2:
        pick = shape.partition_decision(
            request,
            listed,
            typed.curve_on,
            where.state,
            settings_for,
            where.wait,
            missing=lambda name: typed.refused.get(name) or missing or "no curve is known",
            cap_for=typed.cap_for if seeded and seeded.seeds.master_worker else None,
        )
        if pick is not None:
            shown = {"partition": pick.partition, "partitions": pick.detail["options"]}
            decision = pick.decision
            chosen = pick.partition or ""
            if decision is None:
                missing = missing or pick.reason
    if decision is None:
        if len(listed) == 1:
            curve = typed.curve_on(listed[0])
            missing = typed.refused.get(listed[0]) or missing
        master_worker = seeded is not None and seeded.seeds.master_worker
        if curve is None and not master_worker:
            second = second_size(request, runs.one_size_runs(), cluster, settings, budget)
            decision = second.decision if second is not None else None
    if decision is None:
        cap = typed.cap_for(chosen or typed.reference, curve)
        decision = shape.sized(
            request, curve, cluster, settings, budget, missing or "no curve is known", cap
        )
    decision, seed_keys = typed.shown(decision, chosen)
    shown.update(seed_keys)
    if borrowed:
        decision = dataclasses.replace(decision, reason=f"{decision.reason}; {borrowed}")
    if ntasks is not None:
        shown["tasks"] = ntasks
    return decision, shown


class _TypeCurves:
    """The curve on each partition and its master-worker cap, as the daemon's Decider
    (_curve_on, _cap_for) makes them: the type's own curve, else a roofline prior on a
    described type, else the curve of all runs unless refused across core counts
    (policies/fallback.py); what was used is remembered for the JSON document."""

    def __init__(
        self,
        runs: _FileRuns | _StoreRuns,
        generic: predictor.Curve | None,
        where: _WhatIf | _LiveQueues,
        settings_for: Callable[[str], policies.PolicySettings],
        seeded: _Seeded | None,
        reference: str,
    ) -> None:
        self.runs, self.generic, self.where = runs, generic, where
        self.settings_for, self.reference = settings_for, reference
        self.seeded = seeded or _Seeded(shape.Seeds(), 1, {})
        self.refused: dict[str, str] = {}
        self.priors: dict[str, Prior] = {}
        self.caps: dict[str, WorkerCap | str] = {}
        self.view = shape.TypeView(runs.typed, runs.typed_types, runs.run_types, self.node_type)

    def node_type(self, name: str) -> NodeType | None:
        config = self.seeded.node_types.get(name)
        if config is None:
            return None
        return NodeType(name, config.peak_gflops, config.bandwidth_gbs, self.where.cpus(name))

    def curve_on(self, name: str) -> predictor.Curve | None:
        own = self.runs.typed(name)
        no_prior = ""
        if own is None and self.seeded.node_types:
            found = shape.roofline_prior(
                self.view, name, self.generic, self.settings_for(name), self.seeded.seeds.intensity
            )
            if isinstance(found, Prior):
                self.priors[name] = found
                self.refused[name] = ""
                return found.curve
            no_prior = found or ""

        def run_cores() -> list[int | None]:
            types = {r.node_type for r in self.runs.runs()}
            return [None if t is None else self.where.cpus(t) for t in types]

        chosen, why = curve_on_type(own, self.generic, self.where.cpus(name), run_cores)
        because = f"{why}; {no_prior}" if why and no_prior else why
        self.refused[name] = f"no curve on {name} ({because})" if why else ""
        return chosen

    def cap_for(self, name: str, on: predictor.Curve | None) -> WorkerCap | str | None:
        seeds = self.seeded.seeds
        if not seeds.master_worker:
            return None
        config = self.seeded.node_types.get(name)
        link = config.link_gbs if config is not None else 0.0
        settings = self.settings_for(name)
        ratio = None
        if seeds.figures is not None and name != self.reference:
            ratio = shape.tc_ratio(self.view, self.generic, settings, seeds, self.reference, name)
        cap = shape.worker_cap(
            seeds, name, on, settings, link, self.seeded.tasks_per_node, ratio, self.reference
        )
        if cap is not None:
            self.caps[name] = cap
        return cap

    def shown(
        self, decision: policies.Decision, chosen: str
    ) -> tuple[policies.Decision, dict[str, Any]]:
        """The decision with the prior's note, and the "roofline" and "master_worker" keys."""
        keys: dict[str, Any] = {}
        if chosen in self.priors:
            prior = self.priors[chosen]
            decision = dataclasses.replace(decision, reason=f"{decision.reason}; {prior.note}")
            keys["roofline"] = prior.to_dict()
        if self.seeded.seeds.master_worker:
            cap = self.caps.get(chosen or self.reference)
            keys["master_worker"] = (
                cap.to_dict()
                if isinstance(cap, WorkerCap)
                else {"nodes": None, "reason": cap or ""}
            )
        return decision, keys


def _render_shape(shown: dict[str, Any], console: Console) -> None:
    """The placement table or the partitions compared, for people."""
    placement = shown.get("placement")
    if placement is not None and placement["table"]:
        table = Table(box=box.SIMPLE, show_header=True, title="Placements the runs predict")
        for heading in ("nodes", "tasks per node", "runtime s", "efficiency"):
            table.add_column(heading, justify="right")
        for row in placement["table"]:
            table.add_row(*("-" if row[k] is None else f"{row[k]:g}" for k in row))
        console.print(table)
    options = shown.get("partitions")
    if options:
        table = Table(box=box.SIMPLE, show_header=True, title="Partitions compared")
        for heading in ("partition", "nodes", "runtime s", "wait s", "completion s"):
            table.add_column(heading, justify="right")
        for row in options:
            table.add_row(*("-" if row[k] is None else printable(f"{row[k]}") for k in row))
        console.print(table)


# --- policy check ---------------------------------------------------------------------------


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _columns(config: policies.PolicyConfig) -> list[tuple[str, dict[str, Any], frozenset[str]]]:
    """(heading, effective settings, keys the table sets) for defaults, partitions, accounts."""
    out = [("defaults", config.defaults.to_dict(), frozenset[str]())]
    for name, sets in config.partitions.items():
        out.append(
            (f"partition.{name}", policies.effective(config, name, "").to_dict(), frozenset(sets))
        )
    for name, sets in config.accounts.items():
        out.append(
            (f"account.{name}", policies.effective(config, "", name).to_dict(), frozenset(sets))
        )
    return out


def check_document(config: policies.PolicyConfig) -> dict[str, Any]:
    return {
        "source": config.source,
        "valid": True,
        "defaults": config.defaults.to_dict(),
        "partition": {
            name: policies.effective(config, name, "").to_dict() for name in config.partitions
        },
        "account": {
            name: policies.effective(config, "", name).to_dict() for name in config.accounts
        },
    }


def render_check(config: policies.PolicyConfig, console: Console) -> None:
    columns = _columns(config)
    tables = len(columns) - 1
    _say(
        console,
        f"{config.source} is valid: {tables} override table{'' if tables == 1 else 's'}; "
        "the settings in effect (precedence: account, partition, defaults):",
    )
    table = Table(box=box.SIMPLE, show_header=True)
    table.add_column("key")
    for heading, _, _ in columns:
        table.add_column(printable(heading), justify="right")
    for key in policies.KEYS:
        cells = [_shown(values[key]) + (" *" if key in sets else "") for _, values, sets in columns]
        table.add_row(key, *cells)
    console.print(table)
    if tables:
        _say(console, "* set by that table; other values come from the defaults.")


@click.group()
def policy() -> None:
    """Policy configuration files."""


@policy.command()
@click.argument("config_file", metavar="FILE", type=click.Path(path_type=str))
@format_option
def check(config_file: str, output_format: str) -> None:
    """Validate a policy file and print the settings each partition and account gets.

    A problem is one line naming the file, the key and what is allowed; exit code 1.
    """
    config = load_policy_config(config_file)
    if output_format == "json":
        emit_json(check_document(config))
    else:
        render_check(config, _stdout_console())
        sys.stdout.flush()
    log.info(
        "policy_check",
        path=printable(config_file),
        partitions=len(config.partitions),
        accounts=len(config.accounts),
    )
