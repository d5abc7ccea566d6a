"""``adaptalloc decide`` and ``adaptalloc policy check``: the allocation policies, on the CLI.

decide
    Fits the curve from an observation CSV, builds the request and the cluster state from
    options, and prints the decision: ``{"nodes", "time_limit_min", "rule", "reason"}`` with
    ``--format json`` (DESIGN.md) and ``"max_nodes"`` (null when pinned, the range's largest
    size with release = "range"), plus ``"time_limit_reason"`` and every rule's
    ``"candidates"`` and the ``"load_rule"`` with ``--explain``.
policy check
    Validates a policy file and prints the settings in effect for the defaults and for each
    partition and account table.

The policy file is read here (tomllib) and validated by `policies.parse_config`; every problem
is one line naming the file: unreadable, not TOML (with line and column), or a key the
policies refuse (with what is allowed).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import click
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
    read,
)
from plugin.cli.common import stdout_console as _stdout_console
from plugin.errors import InputError, printable, quote_value
from plugin.learning.learner import curve_from_fit
from plugin.policy_file import load_policy_config
from policies.rules import load_rule_words

__all__ = ["decide", "load_policy_config", "parse_range", "policy"]

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


def _curve_from_observations(
    obs_csv: str, method: str, max_rows: int
) -> tuple[predictor.Curve | None, str, str]:
    """The curve the learner would store for these runs (None, and why, when the fit failed)."""
    obs = read(obs_csv, max_rows)
    fit = predictor_call(lambda: predictor.fit_observations(obs, method=method))
    if fit.status != "ok":
        return None, f"the fit failed ({printable(fit.message) or 'no reason given'})", ""
    return predictor_call(lambda: curve_from_fit(fit)), "", ""


def _curve_for_size(
    obs_csv: str, size: float, method: str, max_rows: int
) -> tuple[predictor.Curve | None, str, str]:
    """Problem size `size`'s curve from a study of several sizes (the file's size column):
    its own runs' when they span two node counts, else borrowed from the other sizes."""
    from plugin.formats.observations_csv import (  # noqa: PLC0415
        read_observations,
        require_sizes,
    )
    from plugin.learning.borrow import borrow_from_runs, own_runs  # noqa: PLC0415

    if obs_csv == "-":
        raise InputError("--size reads a file, not standard input")
    raw = read_observations(obs_csv, max_rows)
    sizes = require_sizes(raw)
    own = own_runs(sizes, raw.n, size)
    if own is None:
        borrowed = predictor_call(lambda: borrow_from_runs(size, sizes, raw.n, raw.runtime))
        return borrowed.curve, "", borrowed.note
    obs = predictor_call(lambda: predictor.prepare(raw.n[own], raw.runtime[own]))
    fit = predictor_call(lambda: predictor.fit_observations(obs, method=method))
    if fit.status != "ok":
        return None, f"the fit failed ({printable(fit.message) or 'no reason given'})", ""
    return predictor_call(lambda: curve_from_fit(fit)), "", ""


def _curve_from_store(
    app_text: str, redis_url: str | None
) -> tuple[predictor.Curve | None, str, str]:
    """The app's stored curve, or one borrowed from its sibling sizes (then the third item
    says so: plugin/learning/borrow.py); None, and why, when there is none. Errors if Redis
    is down."""
    # Imported here: only --app needs Redis and the store's configuration.
    from plugin.appkey import AppKey  # noqa: PLC0415
    from plugin.cli.common import open_store  # noqa: PLC0415
    from plugin.learning.borrow import BORROWED, curve_with_borrowing  # noqa: PLC0415

    app = AppKey.parse(app_text)
    record = curve_with_borrowing(open_store(None, redis_url).store, app)
    if record is None:
        return None, f"no curve is stored for app {app}", ""
    if record.curve is None:
        why = record.note or record.error or "none fitted yet"
        return None, f"app {app} has no usable stored curve ({printable(why)})", ""
    return record.curve, "", record.note if record.method == BORROWED else ""


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
    if decision.rule == "cap":
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
@_count("--idle", 0, "Idle nodes in the partition now; without it the load counts as neutral.")
@_count(
    "--pending", 0, "Nodes requested by the other pending jobs in the partition (needs --idle)."
)
@_count("--total", 1, "Nodes in the partition; a job never gets more.")
@_count("--partition-max-nodes", 1, "The partition's MaxNodes per job.")
@click.option(
    "--partition-max-time",
    type=click.IntRange(min=1),
    default=None,
    metavar="MIN",
    help="The partition's MaxTime in minutes.",
)
@click.option("--partition", default="", metavar="P", help="Partition (selects [partition.P]).")
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
    idle: int | None,
    pending: int | None,
    total: int | None,
    partition_max_nodes: int | None,
    partition_max_time: int | None,
    partition: str,
    account: str,
    feasible: policies.Feasible | None,
    config_path: str | None,
    explain: bool,
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
    load_curve: Callable[[], tuple[predictor.Curve | None, str, str]]
    if app_key is not None and obs_csv is None:
        load_curve = partial(_curve_from_store, app_key, redis_url)
    elif obs_csv is not None and app_key is None and problem_size is not None:
        load_curve = partial(_curve_for_size, obs_csv, problem_size, method, max_rows)
    elif obs_csv is not None and app_key is None:
        load_curve = partial(_curve_from_observations, obs_csv, method, max_rows)
    else:
        raise click.UsageError("give exactly one of --app KEY and --observations OBS.csv")
    if problem_size is not None and obs_csv is None:
        raise click.UsageError("--size goes with --observations (with --app, tag the key: cg@3000)")
    if redis_url is not None and app_key is None:
        raise click.UsageError("--redis-url goes with --app")
    if pending is not None and idle is None:
        raise click.UsageError("--pending needs --idle (the load is pending per idle node)")
    config = load_policy_config(config_path)
    try:
        request = policies.Request(
            node_range[0], node_range[1], time_limit, partition, account, feasible=feasible
        )
        cluster = policies.ClusterState(
            idle_nodes=idle,
            pending_demand_nodes=pending or 0,
            total_nodes=total,
            max_nodes_per_job=partition_max_nodes,
            max_time_min=partition_max_time,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    curve, missing, borrowed = load_curve()
    settings = policies.effective(config, partition, account)
    decision = policies.decide(
        request, curve, cluster, settings, missing=missing or "no curve is known"
    )
    if borrowed:
        decision = dataclasses.replace(decision, reason=f"{decision.reason}; {borrowed}")
    load_rule = load_rule_words(settings)
    if output_format == "json":
        doc = decision.to_dict(explain)
        if explain:
            doc["load_rule"] = load_rule
        emit_json(doc)
    else:
        render_decision(decision, _stdout_console(), explain, load_rule)
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
        nodes=decision.nodes,
        new_time_limit_min=decision.time_limit_min,
        new_max_nodes=decision.max_nodes,
        rule=decision.rule,
        reason=printable(decision.reason),
        elapsed_ms=elapsed_ms(started),
    )


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
