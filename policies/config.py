"""The policy configuration: its keys and defaults, validation, and per-partition/account overrides.

The administrator writes one TOML file (``deploy/policy.example.toml`` lists every key with its
default). The plugin parses the text; this module receives the parsed document and turns it
into frozen values, or raises `PolicyConfigError` naming the file, the dotted key and what is
allowed::

    policy.toml: partition.batch.efficiency_threshold must be a number in (0, 1], got "high"

Layout::

    [defaults]            # overrides the built-in defaults for every job
    [partition.NAME]      # overrides [defaults] for jobs in partition NAME
    [account.NAME]        # overrides both for jobs charged to account NAME

Precedence, most specific first: ``[account.NAME]``, then ``[partition.NAME]``, then
``[defaults]``, then the built-in defaults (`PolicySettings()`). Every table is optional; unknown
keys and tables are errors, so that a typo never passes silently. Rules that involve two keys
(light_pressure below heavy_pressure below crowded_pressure) are checked on every combination
a job can meet: the defaults, each partition, each account, and each partition with each
account.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from types import MappingProxyType
from typing import Any

STRATEGIES = ("load_adaptive", "efficiency", "pws")
EFFICIENCY_BASELINES = ("auto", "t1", "smallest_observed")
FALLBACKS = ("as_submitted", "min", "max")
TIME_LIMIT_REFERENCES = ("min", "max")
RELEASES = ("pinned", "range")
TABLES = ("defaults", "partition", "account")
#: Characters of a bad value quoted in an error message.
_SHOWN = 40
#: Sane upper bounds. A setting beyond them passes no useful policy and could make every
#: decision fail (a safety factor of 1e308 overflows the limit arithmetic).
MAX_PRESSURE = 1e6  # pending nodes per idle node: far beyond any queue
MAX_FIT_ERROR = 0.5  # the time limit divides by T(ref)·(1 - fit_error)
MAX_SAFETY_FACTOR = 10.0
MAX_FLOOR_MIN = 10_080  # a week


class PolicyConfigError(ValueError):
    """A configuration the policies refuse. ``str(exc)`` is one line: file, key, what is allowed."""

    def __init__(self, source: str, key: str, problem: str) -> None:
        super().__init__(f"{source}: {key} {problem}")
        self.source = source
        self.key = key


@dataclass(frozen=True)
class PolicySettings:
    """The settings that apply to one job (after overrides). Each field is documented in KEYS."""

    strategy: str = "load_adaptive"
    efficiency_threshold: float = 0.5
    efficiency_baseline: str = "auto"
    light_pressure: float = 0.5
    heavy_pressure: float = 2.0
    crowded_pressure: float = 8.0
    limit_to_idle: bool = True
    max_fit_error: float = 0.10
    fallback: str = "as_submitted"
    exploration_job_share: float = 0.1
    exploration_node_hour_share: float = 0.1
    scale_time_limit: bool = True
    time_limit_reference: str = "min"
    time_limit_safety_factor: float = 1.2
    time_limit_floor_min: int = 5
    release: str = "pinned"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


DEFAULTS = PolicySettings()


# --- key specifications ---------------------------------------------------------------------


@dataclass(frozen=True)
class KeySpec:
    """How one key is checked: `accepts` returns the value to store or None to refuse it."""

    allowed: str
    doc: str
    accepts: Callable[[object], object | None]


def _choice(options: tuple[str, ...]) -> Callable[[object], object | None]:
    return lambda v: v if isinstance(v, str) and v in options else None


def _number(
    low: float, high: float, low_open: bool = False, high_open: bool = False
) -> Callable[[object], object | None]:
    def accepts(v: object) -> object | None:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return None
        try:
            x = float(v)
        except OverflowError:  # an integer beyond any float
            return None
        if not math.isfinite(x):
            return None
        if x < low or (low_open and x == low) or x > high or (high_open and x == high):
            return None
        return x

    return accepts


def _whole(low: int, high: int) -> Callable[[object], object | None]:
    return lambda v: (
        v if isinstance(v, int) and not isinstance(v, bool) and low <= v <= high else None
    )


def _boolean(v: object) -> object | None:
    return v if isinstance(v, bool) else None


def _one_of(options: tuple[str, ...]) -> str:
    return "one of " + ", ".join(f'"{o}"' for o in options)


KEYS: Mapping[str, KeySpec] = MappingProxyType(
    {
        "strategy": KeySpec(
            _one_of(STRATEGIES),
            "Which rule picks the size: load_adaptive (between the efficient and the largest "
            "useful size, by load), efficiency (largest size at or above the threshold) or pws "
            "(the processor working set).",
            _choice(STRATEGIES),
        ),
        "efficiency_threshold": KeySpec(
            "a number in (0, 1]",
            "The efficiency rule's threshold: the largest size whose predicted efficiency is at "
            "least this.",
            _number(0.0, 1.0, low_open=True),
        ),
        "efficiency_baseline": KeySpec(
            _one_of(EFFICIENCY_BASELINES),
            "Efficiency relative to what: t1 (the model's T(1)), smallest_observed (the "
            "smallest size that was run) or auto (t1 when a one-node run was observed, else "
            "smallest_observed).",
            _choice(EFFICIENCY_BASELINES),
        ),
        "light_pressure": KeySpec(
            "a number in [0, 1e6]",
            "Load pressure (pending nodes per idle node) at or below which the load is light "
            "and the job gets the larger useful size.",
            _number(0.0, MAX_PRESSURE),
        ),
        "heavy_pressure": KeySpec(
            "a number in (0, 1e6]",
            "Load pressure at or above which the load is heavy and the job gets the efficient "
            "size; in between the size is interpolated. Must exceed light_pressure.",
            _number(0.0, MAX_PRESSURE, low_open=True),
        ),
        "crowded_pressure": KeySpec(
            "a number in (0, 1e6]",
            "Load pressure at or above which the job gets the user's minimum, the most "
            "efficient size of its range; from heavy_pressure up the size slides from the "
            "efficient size down to it. Must exceed heavy_pressure.",
            _number(0.0, MAX_PRESSURE, low_open=True),
        ),
        "limit_to_idle": KeySpec(
            "true or false",
            "Under the load-adaptive rule, never go past the idle nodes (nor below the user's "
            "minimum): without an estimate of the wait, a larger size cannot be shown to "
            "finish sooner.",
            _boolean,
        ),
        "max_fit_error": KeySpec(
            "a number in (0, 0.5]",
            "A curve whose largest relative fitting error exceeds this is unusable and the "
            "fallback applies; it never shortens a time limit either. 0.10 agrees with "
            "ADEPT's reliability check.",
            _number(0.0, MAX_FIT_ERROR, low_open=True),
        ),
        "fallback": KeySpec(
            _one_of(FALLBACKS),
            "What happens without a usable curve: as_submitted (leave the job alone), min or "
            "max (the range's smallest or largest size).",
            _choice(FALLBACKS),
        ),
        "exploration_job_share": KeySpec(
            "a number in [0, 1]",
            "Largest share of decided jobs that may run at a size the reliability judgment "
            "suggests; 0 turns exploration off.",
            _number(0.0, 1.0),
        ),
        "exploration_node_hour_share": KeySpec(
            "a number in [0, 1]",
            "Largest share of decided node-hours (predicted) that exploration may use; 0 "
            "turns exploration off.",
            _number(0.0, 1.0),
        ),
        "scale_time_limit": KeySpec(
            "true or false",
            "Rescale the user's time limit to the chosen size; false leaves it unchanged.",
            _boolean,
        ),
        "time_limit_reference": KeySpec(
            _one_of(TIME_LIMIT_REFERENCES),
            "The size the user's time limit is taken to be written for: the range's min or max.",
            _choice(TIME_LIMIT_REFERENCES),
        ),
        "time_limit_safety_factor": KeySpec(
            "a number in [1, 10]",
            "Multiplies the rescaled limit and the predicted runtime, against prediction error.",
            _number(1.0, MAX_SAFETY_FACTOR),
        ),
        "time_limit_floor_min": KeySpec(
            "a whole number of minutes in [1, 10080]",
            "The shortest time limit adaptalloc sets, in minutes (never above the user's own).",
            _whole(1, MAX_FLOOR_MIN),
        ),
        "release": KeySpec(
            _one_of(RELEASES),
            "How a sized job is released: pinned (exactly the chosen size) or range (the "
            "narrowed range [efficient, larger useful size], so that Slurm still picks the size "
            "when the job starts; its time limit fits the range's smallest size).",
            _choice(RELEASES),
        ),
    }
)


# --- the configuration ----------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyConfig:
    """A validated configuration: the defaults and the overrides of each table (only the keys
    the table sets). Use `effective` for the settings of one job."""

    source: str
    defaults: PolicySettings
    partitions: Mapping[str, Mapping[str, Any]]
    accounts: Mapping[str, Mapping[str, Any]]


def default_config(source: str = "built-in defaults") -> PolicyConfig:
    return PolicyConfig(source, DEFAULTS, MappingProxyType({}), MappingProxyType({}))


def effective(config: PolicyConfig, partition: str = "", account: str = "") -> PolicySettings:
    """The settings for a job in `partition` charged to `account` (precedence: module doc)."""
    overrides = {**config.partitions.get(partition, {}), **config.accounts.get(account, {})}
    return replace(config.defaults, **overrides) if overrides else config.defaults


def _show(value: object) -> str:
    """A value as the TOML file would spell it, short and on one line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = json.dumps(value[:_SHOWN])
        return text if len(value) <= _SHOWN else f'{text[:-1]}..." ({len(value):,} characters)'
    if isinstance(value, int | float):
        text = repr(value)
        return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text)} digits)"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__}"


def _unknown(source: str, key: str, name: str, known: tuple[str, ...]) -> PolicyConfigError:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f' (did you mean "{close[0]}"?)' if close else ""
    return PolicyConfigError(source, key, f"is not a known key{hint}; allowed: {', '.join(known)}")


def _settings_table(source: str, prefix: str, table: object) -> dict[str, Any]:
    """Validate one table of settings; return the overrides it holds."""
    if not isinstance(table, dict):
        raise PolicyConfigError(source, prefix, f"must be a table of settings, got {_show(table)}")
    out: dict[str, Any] = {}
    for name, value in table.items():
        key = f"{prefix}.{name}"
        spec = KEYS.get(name)
        if spec is None:
            raise _unknown(source, key, name, tuple(KEYS))
        accepted = spec.accepts(value)
        if accepted is None:
            raise PolicyConfigError(source, key, f"must be {spec.allowed}, got {_show(value)}")
        out[name] = accepted
    return out


def _named_tables(source: str, prefix: str, tables: object) -> dict[str, Mapping[str, Any]]:
    if not isinstance(tables, dict):
        raise PolicyConfigError(
            source, prefix, f"must hold one table per {prefix} name, got {_show(tables)}"
        )
    out: dict[str, Mapping[str, Any]] = {}
    for name, table in sorted(tables.items()):
        if not name:
            raise PolicyConfigError(source, f'{prefix}.""', "names must not be empty")
        label = name if name.replace("-", "").replace("_", "").isalnum() else json.dumps(name)
        out[name] = MappingProxyType(_settings_table(source, f"{prefix}.{label}", table))
    return out


#: Keys that must rise in this order on every combination of tables.
ORDERED = (("light_pressure", "heavy_pressure"), ("heavy_pressure", "crowded_pressure"))


def _check_combination(
    source: str, settings: PolicySettings, where: str, sets: Mapping[str, Any], context: str = ""
) -> None:
    """Two-key rules, reported against the key the table `where` sets (`sets`)."""
    for below, above in ORDERED:
        low, high = getattr(settings, below), getattr(settings, above)
        if low < high:
            continue
        said = "" if above in sets and below in sets else context
        if above in sets and below not in sets:
            raise PolicyConfigError(
                source, f"{where}.{above}", f"must be above {below}{said} ({low:g}), got {high:g}"
            )
        raise PolicyConfigError(
            source, f"{where}.{below}", f"must be below {above}{said} ({high:g}), got {low:g}"
        )


def parse_config(doc: Mapping[str, object], source: str) -> PolicyConfig:
    """Validate a parsed TOML document into a PolicyConfig; raise PolicyConfigError if refused."""
    for name in doc:
        if name not in TABLES:
            raise _unknown(source, name, name, TABLES)
    base = _settings_table(source, "defaults", doc.get("defaults", {}))
    defaults = replace(DEFAULTS, **base)
    partitions = _named_tables(source, "partition", doc.get("partition", {}))
    accounts = _named_tables(source, "account", doc.get("account", {}))
    config = PolicyConfig(
        source, defaults, MappingProxyType(partitions), MappingProxyType(accounts)
    )
    _check_combination(source, defaults, "defaults", base, " of the built-in defaults")
    for p, sets in partitions.items():
        _check_combination(source, effective(config, p, ""), f"partition.{p}", sets, " of defaults")
    for a, sets in accounts.items():
        _check_combination(source, effective(config, "", a), f"account.{a}", sets, " of defaults")
        for p in partitions:
            _check_combination(
                source, effective(config, p, a), f"account.{a}", sets, f" of partition.{p}"
            )
    return config


def setting_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(PolicySettings))
