"""The policy configuration: its keys and defaults, validation, and per-partition/account overrides.

The administrator writes one TOML file (``deploy/policy.example.toml`` lists every key with its
default). The plugin parses the text; this module receives the parsed document and turns it
into frozen values, or raises `PolicyConfigError` naming the file, the table, the key and what
is allowed (the validator both configuration files share, policies/toml_keys.py)::

    policy.toml: [partition.batch] efficiency_threshold: must be a number in (0, 1], got "high"

Layout::

    [defaults]            # overrides the built-in defaults for every job
    [partition.NAME]      # overrides [defaults] for jobs in partition NAME
    [account.NAME]        # overrides both for jobs charged to account NAME

Precedence, most specific first: ``[account.NAME]``, then ``[partition.NAME]``, then
``[defaults]``, then the built-in defaults (`PolicySettings()`). A job that lists several
partitions takes the table of the one it is decided for (the caller names it: the daemon's
choice among them, else the only one that admits the job, else the first listed).

``mode`` ("advise" or "enforce") may be set in ``[partition.NAME]`` and ``[account.NAME]``
only: it overrides the site's ``[daemon] mode`` (adaptalloc.toml) for those jobs, with the
same precedence, and is kept apart from the sizing settings (`PolicyConfig.partition_modes`,
`account_modes`; resolved by policies/mode.py). ``[defaults]`` has no ``mode``: the site's
default lives in one place. Every table is optional; unknown
keys and tables are errors, so that a typo never passes silently. Rules that involve two keys
(light_pressure below heavy_pressure below crowded_pressure) are checked on every combination
a job can meet: the defaults, each partition, each account, and each partition with each
account.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from policies.toml_keys import (
    ConfigFileError,
    Key,
    boolean,
    choice,
    key_hint,
    label,
    number,
    read_table,
    show,
    whole,
)

STRATEGIES = ("load_adaptive", "efficiency", "pws")
EFFICIENCY_BASELINES = ("auto", "t1", "smallest_observed")
FALLBACKS = ("as_submitted", "min", "max")
TIME_LIMIT_REFERENCES = ("min", "max")
RELEASES = ("pinned", "range")
#: What the daemon does with a moldable job (policies/mode.py): record only, or hold and size.
MODES = ("advise", "enforce")
MODE_KEY = "mode"
TABLES = ("defaults", "partition", "account")
#: Sane upper bounds. A setting beyond them passes no useful policy and could make every
#: decision fail (a safety factor of 1e308 overflows the limit arithmetic).
MAX_PRESSURE = 1e6  # pending nodes per idle node: far beyond any queue
MAX_FIT_ERROR = 0.5  # the time limit divides by T(ref)·(1 - fit_error)
MAX_SAFETY_FACTOR = 10.0
MAX_FLOOR_MIN = 10_080  # a week


class PolicyConfigError(ConfigFileError):
    """A configuration the policies refuse. ``str(exc)`` is one line: file, table, key, what is
    allowed (`ConfigFileError`); ``key`` is the dotted key."""


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


#: Where every key is listed, for an unknown key's error.
EXAMPLE = "policy.example.toml"


def _spec(key: Key, doc: str) -> Key:
    return replace(key, doc=doc)


KEYS: Mapping[str, Key] = MappingProxyType(
    {
        "strategy": _spec(
            choice(*STRATEGIES),
            "Which rule picks the size: load_adaptive (between the efficient and the largest "
            "useful size, by load), efficiency (largest size at or above the threshold) or pws "
            "(the processor working set).",
        ),
        "efficiency_threshold": _spec(
            number(0.0, 1.0, low_open=True),
            "The efficiency rule's threshold: the largest size whose predicted efficiency is at "
            "least this.",
        ),
        "efficiency_baseline": _spec(
            choice(*EFFICIENCY_BASELINES),
            "Efficiency relative to what: t1 (the model's T(1)), smallest_observed (the "
            "smallest size that was run) or auto (t1 when a one-node run was observed, else "
            "smallest_observed).",
        ),
        "light_pressure": _spec(
            number(0.0, MAX_PRESSURE),
            "Load pressure (pending nodes per idle node) at or below which the load is light "
            "and the job gets the larger useful size.",
        ),
        "heavy_pressure": _spec(
            number(0.0, MAX_PRESSURE, low_open=True),
            "Load pressure at or above which the load is heavy and the job gets the efficient "
            "size; in between the size is interpolated. Must exceed light_pressure.",
        ),
        "crowded_pressure": _spec(
            number(0.0, MAX_PRESSURE, low_open=True),
            "Load pressure at or above which the job gets the user's minimum, the most "
            "efficient size of its range; from heavy_pressure up the size slides from the "
            "efficient size down to it. Must exceed heavy_pressure.",
        ),
        "limit_to_idle": _spec(
            boolean,
            "Under the load-adaptive rule, never go past the idle nodes (nor below the user's "
            "minimum): without an estimate of the wait, a larger size cannot be shown to "
            "finish sooner.",
        ),
        "max_fit_error": _spec(
            number(0.0, MAX_FIT_ERROR, low_open=True),
            "A curve whose largest relative fitting error exceeds this is unusable and the "
            "fallback applies; it never shortens a time limit either. 0.10 agrees with "
            "ADEPT's reliability check.",
        ),
        "fallback": _spec(
            choice(*FALLBACKS),
            "What happens without a usable curve: as_submitted (leave the job its range and "
            "limit; a curve refused for sizing still cuts the range's top where it saw the "
            "speedup stop), min or max (the range's smallest or largest size).",
        ),
        "exploration_job_share": _spec(
            number(0.0, 1.0),
            "Largest share of decided jobs that may run at a size the reliability judgment "
            "suggests; 0 turns exploration off.",
        ),
        "exploration_node_hour_share": _spec(
            number(0.0, 1.0),
            "Largest share of decided node-hours (predicted) that exploration may use; 0 "
            "turns exploration off.",
        ),
        "scale_time_limit": _spec(
            boolean,
            "Rescale the user's time limit to the chosen size; false leaves it unchanged.",
        ),
        "time_limit_reference": _spec(
            choice(*TIME_LIMIT_REFERENCES),
            "The size the user's time limit is taken to be written for: the range's min or max.",
        ),
        "time_limit_safety_factor": _spec(
            number(1.0, MAX_SAFETY_FACTOR),
            "Multiplies the rescaled limit and the predicted runtime, against prediction error; "
            "a size whose predicted runtime times it exceeds the user's limit is raised.",
        ),
        "time_limit_floor_min": _spec(
            whole(1, MAX_FLOOR_MIN, unit="minutes"),
            "The shortest time limit adaptalloc sets, in minutes (never above the user's own).",
        ),
        "release": _spec(
            choice(*RELEASES),
            "How a sized job is released: pinned (exactly the chosen size) or range (the "
            "narrowed range [efficient, larger useful size], so that Slurm still picks the size "
            "when the job starts; its time limit fits the range's smallest size).",
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
    #: ``mode`` set by a ``[partition.NAME]`` or ``[account.NAME]`` table (policies/mode.py).
    partition_modes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    account_modes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


def default_config(source: str = "built-in defaults") -> PolicyConfig:
    return PolicyConfig(source, DEFAULTS, MappingProxyType({}), MappingProxyType({}))


def effective(config: PolicyConfig, partition: str = "", account: str = "") -> PolicySettings:
    """The settings for a job in `partition` charged to `account` (precedence: module doc)."""
    overrides = {**config.partitions.get(partition, {}), **config.accounts.get(account, {})}
    return replace(config.defaults, **overrides) if overrides else config.defaults


_MODE = choice(*MODES)


def _named_tables(
    source: str, prefix: str, tables: object
) -> tuple[dict[str, Mapping[str, Any]], dict[str, str]]:
    """Each table's sizing overrides, and the ``mode`` of the tables that set one."""
    if not isinstance(tables, dict):
        raise PolicyConfigError(
            source, prefix, "", f"must hold one table per {prefix} name, got {show(tables)}"
        )
    out: dict[str, Mapping[str, Any]] = {}
    modes: dict[str, str] = {}
    for name, table in sorted(tables.items()):
        if not name:
            raise PolicyConfigError(source, f'{prefix}.""', "", "names must not be empty")
        where = f"{prefix}.{label(name)}"
        if isinstance(table, dict) and MODE_KEY in table:
            table = dict(table)  # noqa: PLW2901 - the sizing keys without mode
            value = table.pop(MODE_KEY)
            if _MODE.accepts(value) is None:
                raise PolicyConfigError(
                    source, where, MODE_KEY, f"must be {_MODE.allowed}, got {show(value)}"
                )
            modes[name] = value
        out[name] = MappingProxyType(_settings(source, where, table))
    return out, modes


def _settings(source: str, table: str, values: object) -> dict[str, Any]:
    try:
        return read_table(source, table, values, KEYS, EXAMPLE)
    except ConfigFileError as exc:
        raise PolicyConfigError(exc.source, exc.table, exc.name, exc.problem) from None


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
                source, where, above, f"must be above {below}{said} ({low:g}), got {high:g}"
            )
        raise PolicyConfigError(
            source, where, below, f"must be below {above}{said} ({high:g}), got {low:g}"
        )


def parse_config(doc: Mapping[str, object], source: str) -> PolicyConfig:
    """Validate a parsed TOML document into a PolicyConfig; raise PolicyConfigError if refused."""
    for name in doc:
        if name not in TABLES:
            hint = key_hint(name, TABLES, EXAMPLE)
            raise PolicyConfigError(source, "", label(name), f"not a known table ({hint})")
    table = doc.get("defaults", {})
    if isinstance(table, dict) and MODE_KEY in table:
        raise PolicyConfigError(
            source,
            "defaults",
            MODE_KEY,
            "the site's mode is [daemon] mode in adaptalloc.toml; set mode here only in "
            "[partition.NAME] or [account.NAME] tables",
        )
    base = _settings(source, "defaults", table)
    defaults = replace(DEFAULTS, **base)
    partitions, partition_modes = _named_tables(source, "partition", doc.get("partition", {}))
    accounts, account_modes = _named_tables(source, "account", doc.get("account", {}))
    config = PolicyConfig(
        source,
        defaults,
        MappingProxyType(partitions),
        MappingProxyType(accounts),
        MappingProxyType(partition_modes),
        MappingProxyType(account_modes),
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
