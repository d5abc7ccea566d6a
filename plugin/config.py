"""The adaptalloc plumbing configuration: ``[redis]``, ``[appkey]``, ``[learner]``, ``[slurm]``,
``[daemon]``, and one ``[node_types.NAME]`` table per described node type (partition).

One TOML file (``deploy/adaptalloc.example.toml`` lists every key with its default), read
with :mod:`tomllib`. Where it is looked for, first match wins:

1. the ``--config FILE`` option of a command;
2. ``$ADAPTALLOC_CONFIG``;
3. ``/etc/adaptalloc/adaptalloc.toml`` when that file exists;
4. nothing: every key has its default.

Every section and key is optional; an unknown section or key, a value of the wrong type or
out of range is a :class:`ConfigError` naming the file, the section, the key and what is
allowed, checked by the validator the policy file shares (policies/toml_keys.py)::

    adaptalloc.toml: [learner] max_age_days: must be a number ≥ 0, got -3

(The allocation policy has its own file, read by policies/; see deploy/policy.example.toml.)
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from plugin.appkey import DEFAULT_GENERIC_NAMES, MAX_USER_INFLUENCE, SCOPES, AppKeyRule
from plugin.errors import InputError, printable
from policies.config import MODES
from policies.refit_cadence import REFIT_GROWTH, REFIT_MAX_AGE_S
from policies.toml_keys import (
    ConfigFileError,
    Key,
    boolean,
    choice,
    key_hint,
    label,
    number,
    read_table,
    string,
    string_list,
    whole,
)

__all__ = [
    "CONFIG_ENV",
    "SYSTEM_CONFIG",
    "AppKeyConfig",
    "Config",
    "ConfigError",
    "DaemonConfig",
    "LearnerConfig",
    "NodeTypeConfig",
    "RedisConfig",
    "SlurmConfig",
    "find_config",
    "load_config",
    "parse_config",
    "read_toml_file",
]

CONFIG_ENV = "ADAPTALLOC_CONFIG"
SYSTEM_CONFIG = Path("/etc/adaptalloc/adaptalloc.toml")
#: Where every key is listed, for an unknown key's error.
EXAMPLE = "adaptalloc.example.toml"


class ConfigError(InputError):
    """The configuration file cannot be read or holds a value adaptalloc refuses."""


# The key declarations below, one line per key, use policies/toml_keys.py (the validator the
# policy file shares) under these short names.
_number = number
_integer = whole
_choice = choice
_string = string
_boolean = boolean
_string_list = string_list


def _redis_url_value(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return (
        value if not value or re.match(r"(redis|rediss|unix|redis\+sentinel)://", value) else None
    )


def _regex_value(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except OverflowError:
        raise ValueError("a repeat count too large") from None
    return value


_redis_url = Key(
    "a string starting with redis://, rediss://, unix:// or redis+sentinel:// (or empty)",
    _redis_url_value,
)
_regex = Key("a valid regular expression", _regex_value)


def _key(key: Key, doc: str) -> dict[str, Any]:
    return {"key": replace(key, doc=doc)}


@dataclass(frozen=True)
class RedisConfig:
    """``[redis]``: where the curve store lives and how to talk to it."""

    url: str = field(default="", metadata=_key(_redis_url, "empty: $REDIS_URL, else local"))
    username: str = field(default="", metadata=_key(_string, "ACL user (overrides the URL's)"))
    password_file: str = field(default="", metadata=_key(_string, "file holding the password"))
    tls_ca_file: str = field(default="", metadata=_key(_string, "CA bundle for rediss://"))
    socket_timeout_s: float = field(default=2.0, metadata=_key(_number(0, low_open=True), ""))
    connect_timeout_s: float = field(default=2.0, metadata=_key(_number(0, low_open=True), ""))
    retries: int = field(default=2, metadata=_key(_integer(0, 20), "retries per command"))
    backoff_base_s: float = field(default=0.05, metadata=_key(_number(0), ""))
    backoff_cap_s: float = field(default=1.0, metadata=_key(_number(0), ""))
    health_check_interval_s: int = field(default=30, metadata=_key(_integer(0), ""))


@dataclass(frozen=True)
class AppKeyConfig:
    """``[appkey]``: how a job becomes an app key (see plugin/appkey.py)."""

    template: str = field(default="{name}", metadata=_key(_string, ""))
    pattern: str = field(default="", metadata=_key(_regex, ""))
    comment_tag: bool = field(default=True, metadata=_key(_boolean, ""))
    admin_comment_tag: bool = field(default=True, metadata=_key(_boolean, ""))
    generic_names: tuple[str, ...] = field(
        default=DEFAULT_GENERIC_NAMES, metadata=_key(_string_list, "")
    )
    scope: str = field(
        default="user",
        metadata=_key(_choice(*SCOPES), "whose runs size a job: its user's, or every user's"),
    )
    shared: tuple[str, ...] = field(
        default=(), metadata=_key(_string_list, "apps whose runs every user shares (patterns)")
    )
    max_user_influence: float = field(
        default=MAX_USER_INFLUENCE,
        metadata=_key(_number(0, low_open=True), "how far one user's runs may move a shared curve"),
    )

    def rule(self) -> AppKeyRule:
        return AppKeyRule(
            template=self.template,
            pattern=self.pattern,
            comment_tag=self.comment_tag,
            admin_comment_tag=self.admin_comment_tag,
            generic_names=tuple(n.strip().lower() for n in self.generic_names),
            scope=self.scope,
            shared=tuple(p.strip().lower() for p in self.shared),
        )


@dataclass(frozen=True)
class LearnerConfig:
    """``[learner]``: observations, ageing, refits, imports."""

    source: str = field(default="auto", metadata=_key(_choice("auto", "sacct", "squeue"), ""))
    overlap_s: float = field(default=900.0, metadata=_key(_number(0), "re-read window"))
    initial_lookback_s: float = field(default=3600.0, metadata=_key(_number(0), ""))
    max_nodes: int = field(default=0, metadata=_key(_integer(0), "0: the cluster's size"))
    max_observations: int = field(default=500, metadata=_key(_integer(1, 1_000_000), ""))
    max_age_days: float = field(default=365.0, metadata=_key(_number(0), "0: never"))
    refit_debounce_s: float = field(default=60.0, metadata=_key(_number(0), ""))
    refit_max_apps: int = field(default=50, metadata=_key(_integer(1), ""))
    refit_growth: float = field(
        default=REFIT_GROWTH, metadata=_key(_number(0, 10), "0: refit on every change")
    )
    refit_max_age_h: float = field(
        default=REFIT_MAX_AGE_S / 3600.0, metadata=_key(_number(0), "0: never")
    )
    method: str = field(default="adept", metadata=_key(_choice("adept", "lm"), ""))
    decisions_maxlen: int = field(default=100_000, metadata=_key(_integer(1), ""))
    import_window_h: float = field(default=24.0, metadata=_key(_number(0, low_open=True), ""))
    import_pause_s: float = field(default=0.0, metadata=_key(_number(0), ""))

    @property
    def max_age_s(self) -> float | None:
        return None if self.max_age_days == 0 else self.max_age_days * 86400.0

    @property
    def refit_max_age_s(self) -> float | None:
        """H of the refit cadence (policies/refit_cadence.py), None: never."""
        return None if self.refit_max_age_h == 0 else self.refit_max_age_h * 3600.0


@dataclass(frozen=True)
class SlurmConfig:
    """``[slurm]``: which backend reads from Slurm, and how long a command may take."""

    backend: str = field(
        default="auto",
        metadata=_key(_choice("auto", "cli", "pyslurm", "libslurm", "libslurm-writes"), ""),
    )
    timeout_s: float = field(default=60.0, metadata=_key(_number(0, low_open=True), ""))


_POSITIVE = _number(0, low_open=True)


@dataclass(frozen=True)
class DaemonConfig:
    """``[daemon]``: the daemon's state directory, timings, limits and metrics (plugin/daemon/)."""

    state_dir: str = field(default="", metadata=_key(_string, "empty: /var/lib/adaptalloc"))
    mode: str = field(
        default="enforce",
        metadata=_key(
            _choice(*MODES),
            "advise: record what it would do, hold and change nothing; enforce: hold and size "
            "(a policy file's [partition.NAME] and [account.NAME] may set mode too)",
        ),
    )
    policy_file: str = field(default="", metadata=_key(_string, "empty: built-in policy"))
    heartbeat_interval_s: float = field(default=2.0, metadata=_key(_POSITIVE, ""))
    unhealthy_after_s: float = field(default=10.0, metadata=_key(_POSITIVE, ""))
    sweep_interval_s: float = field(default=2.0, metadata=_key(_POSITIVE, ""))
    spool_poll_s: float = field(default=0.05, metadata=_key(_POSITIVE, ""))
    batch_window_s: float = field(default=0.02, metadata=_key(_number(0), ""))
    max_batch: int = field(default=1000, metadata=_key(_integer(1), ""))
    straggler_s: float = field(
        default=0.1, metadata=_key(_number(0), "leave slow updates in flight after; 0: wait")
    )
    follow_ups: int = field(
        default=10, metadata=_key(_integer(0, 100), "sweeps after a wake-up for a job not yet seen")
    )
    max_hold_s: float = field(default=120.0, metadata=_key(_POSITIVE, "watchdog bound"))
    cluster_cache_s: float = field(default=2.0, metadata=_key(_number(0), ""))
    partition_cache_s: float = field(default=60.0, metadata=_key(_number(0), ""))
    prefetch_cluster: bool = field(
        default=True, metadata=_key(_boolean, "refresh those caches off the decision path")
    )
    slurm_timeout_s: float = field(default=20.0, metadata=_key(_POSITIVE, ""))
    slurm_parallelism: int = field(default=4, metadata=_key(_integer(1, 64), ""))
    redis_timeout_s: float = field(default=0.5, metadata=_key(_POSITIVE, ""))
    redis_retry_s: float = field(default=5.0, metadata=_key(_number(0), ""))
    decided_ttl_days: float = field(default=7.0, metadata=_key(_POSITIVE, ""))
    metrics_port: int = field(default=9405, metadata=_key(_integer(0, 65535), "0: off"))
    metrics_address: str = field(default="127.0.0.1", metadata=_key(_string, ""))
    learn: bool = field(default=True, metadata=_key(_boolean, ""))
    check_privileges: bool = field(
        default=True, metadata=_key(_boolean, "hold nothing unless Slurm grants what it needs")
    )
    sizing_user: str = field(
        default="",
        metadata=_key(_string, "resize as this coordinator, so Slurm checks its limits"),
    )
    resize_with_enforced_limits: bool = field(
        default=False,
        metadata=_key(
            _boolean, "resize where Slurm enforces limits; lifts those it does not check"
        ),
    )
    learn_interval_s: float = field(default=30.0, metadata=_key(_POSITIVE, ""))
    age_out_interval_s: float = field(default=3600.0, metadata=_key(_POSITIVE, ""))
    shutdown_grace_s: float = field(default=10.0, metadata=_key(_number(0), ""))
    ha: bool = field(
        default=False, metadata=_key(_boolean, "active/standby daemons, a lease in Redis")
    )
    lease_ttl_s: float = field(default=10.0, metadata=_key(_number(1.0, 300.0), "HA lease TTL"))


@dataclass(frozen=True)
class NodeTypeConfig:
    """``[node_types.NAME]``: one node type, NAME a partition, as the performance models see
    it (docs/science/seed-models.md): the roofline's peak compute and memory bandwidth per
    node (policies/roofline.py), and the link bandwidth a master-worker master sends over
    (policies/master_worker.py; 0: not known)."""

    peak_gflops: float = field(
        default=0.0, metadata=_key(_number(0, low_open=True), "peak FLOP/s per node, in 10^9")
    )
    bandwidth_gbs: float = field(
        default=0.0, metadata=_key(_number(0, low_open=True), "memory bandwidth per node, GB/s")
    )
    link_gbs: float = field(
        default=0.0, metadata=_key(_number(0), "a node's network link, GB/s; 0: unknown")
    )


#: A node type's name: a partition name as Slurm accepts it (and observations record it).
_NODE_TYPE_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class Config:
    """The whole plumbing configuration; ``source`` names the file (or "defaults")."""

    redis: RedisConfig = field(default_factory=RedisConfig)
    appkey: AppKeyConfig = field(default_factory=AppKeyConfig)
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    slurm: SlurmConfig = field(default_factory=SlurmConfig)
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    #: ``[node_types.NAME]`` tables, by partition name (sorted).
    node_types: tuple[tuple[str, NodeTypeConfig], ...] = ()
    source: str = "defaults"

    def node_type(self, name: str) -> NodeTypeConfig | None:
        """The ``[node_types.NAME]`` of partition `name`, None when it has none."""
        return dict(self.node_types).get(name)


_SECTIONS: dict[str, type[Any]] = {
    "redis": RedisConfig,
    "appkey": AppKeyConfig,
    "learner": LearnerConfig,
    "slurm": SlurmConfig,
    "daemon": DaemonConfig,
}
S = TypeVar("S")


def _section(cls: type[S], table: object, source: str, name: str) -> S:
    keys = {f.name: f.metadata["key"] for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**read_table(source, name, table, keys, EXAMPLE))


def parse_config(doc: Mapping[str, Any], source: str) -> Config:
    """Validate a parsed TOML document; ConfigError names the file, table, key and what is
    allowed (one line, control characters escaped)."""
    try:
        return _parse(doc, source)
    except ConfigFileError as exc:
        raise ConfigError(printable(str(exc))) from None


def _node_types(table: object, source: str) -> tuple[tuple[str, NodeTypeConfig], ...]:
    """The ``[node_types.NAME]`` tables: NAME a partition name, each with both roofline
    numbers (a type without them describes nothing the models can use)."""
    if not isinstance(table, dict):
        raise ConfigFileError(source, "node_types", "", "must hold [node_types.NAME] tables")
    out: list[tuple[str, NodeTypeConfig]] = []
    for name, values in sorted(table.items()):
        where = f"node_types.{label(name)}"
        if not _NODE_TYPE_NAME.fullmatch(name):
            raise ConfigFileError(
                source, where, "", "NAME must be a partition name (letters, digits, '.', '_', '-')"
            )
        node_type = _section(NodeTypeConfig, values, source, where)
        for key in ("peak_gflops", "bandwidth_gbs"):
            if getattr(node_type, key) <= 0:
                raise ConfigFileError(source, where, key, "is required (a number > 0)")
        out.append((name, node_type))
    return tuple(out)


def _parse(doc: Mapping[str, Any], source: str) -> Config:
    sections: dict[str, Any] = {}
    for name, table in doc.items():
        if name == "node_types":
            sections[name] = _node_types(table, source)
            continue
        cls = _SECTIONS.get(name)
        if cls is None:
            hint = key_hint(name, [*_SECTIONS, "node_types"], EXAMPLE)
            raise ConfigFileError(source, label(name), "", f"not a known section ({hint})")
        sections[name] = _section(cls, table, source, name)
    config = Config(**sections, source=source)
    try:
        config.appkey.rule()
    except (ValueError, re.error) as exc:
        raise ConfigFileError(source, "appkey", "", str(exc)) from exc
    if config.redis.backoff_cap_s < config.redis.backoff_base_s:
        raise ConfigFileError(source, "redis", "backoff_cap_s", "must be ≥ backoff_base_s")
    if config.daemon.unhealthy_after_s <= config.daemon.heartbeat_interval_s:
        raise ConfigFileError(
            source, "daemon", "unhealthy_after_s", "must exceed heartbeat_interval_s"
        )
    return config


def find_config(explicit: str | None, environ: Mapping[str, str] | None = None) -> Path | None:
    """The config file to read: --config, then $ADAPTALLOC_CONFIG, then /etc/…, else None."""
    env = os.environ if environ is None else environ
    if explicit:
        return Path(explicit)
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    return SYSTEM_CONFIG if SYSTEM_CONFIG.is_file() else None


def load_config(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Find, read and validate the configuration (defaults when there is no file)."""
    path = find_config(explicit, environ)
    if path is None:
        return Config()
    source = printable(str(path))
    return parse_config(read_toml_file(path, source), source)


#: Largest TOML file read (this one, the policy file): both are a few kilobytes; a file
#: like /dev/zero is refused after this many bytes, not read into memory whole.
MAX_TOML_BYTES = 1024 * 1024


def read_toml_file(path: str | Path, source: str) -> dict[str, Any]:
    """Read and parse one TOML file (this one and the policy file, plugin/policy_file.py).

    Raises ConfigError with one line naming `source`: unreadable, larger than
    MAX_TOML_BYTES, not UTF-8, not TOML (with line and column), nested too deeply or
    holding an integer too long to convert.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_TOML_BYTES + 1)
        if len(raw) > MAX_TOML_BYTES:
            raise ConfigError(f"{source}: larger than {MAX_TOML_BYTES:,} bytes; is it a TOML file?")
        text = raw.decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or type(exc).__name__}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text (byte {exc.start})") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {printable(str(exc))}") from exc
    except RecursionError:  # tomllib recurses once per level of nested arrays and tables
        raise ConfigError(f"{source}: not valid TOML: arrays or tables nested too deeply") from None
    except ValueError as exc:  # an integer beyond Python's 4300-digit conversion limit
        raise ConfigError(f"{source}: not valid TOML: {printable(str(exc))[:120]}") from exc
