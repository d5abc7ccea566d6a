"""The connection to Redis: URL resolution, timeouts, retries with backoff, one clear error.

The URL comes from, first match wins: the ``--redis-url`` option, ``[redis] url`` in the
configuration, ``$REDIS_URL`` (the testbed's ``.local/env`` sets it), and last
``redis://localhost:6379/0``. ``redis://`` is plain TCP, ``rediss://`` is TLS
(``[redis] tls_ca_file`` for a private CA), ``unix://`` a socket. An ACL user and password
may be in the URL (``redis://USER:PASSWORD@host:port/db``) or in the configuration
(``username``, ``password_file``), which wins.

Redis Sentinel: ``redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB]``
names the sentinels (port 26379 by default) and the monitored service; the client asks
them for the current master on every new connection (redis-py's ``Sentinel.master_for``),
so after a failover the next connection goes to the new master. The password (and user)
are the master's; the sentinels are asked without one. A command that was in flight on the
old master fails (a connection error, or the old master's READONLY once it is a replica,
which redis-py turns into a connection error): the daemon fails open on it as on any
Redis outage, and its next connection finds the new master.

Redis Cluster: ``redis+cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]`` names one
or more nodes to start from (port 6379 by default; no database, a cluster has only db 0);
redis-py's ``RedisCluster`` learns the slot map from them and sends each command to the
master of its key's slot. Every script and transaction of adaptalloc touches keys of one
slot (plugin/store/keys.py: one hash tag per app, one for the global keys). The password
(and user) are the nodes'; the configuration's win, as for plain URLs.

Every command has socket timeouts and is retried on connection errors and timeouts with
exponential backoff and jitter (redis-py's Retry). When Redis stays unreachable, the caller
gets :class:`StoreUnavailable`, one line naming the URL (password masked) and why; the
daemon fails open on it (the job keeps the size the user asked for).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import redis
import redis.cluster
import redis.sentinel
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

from plugin.config import RedisConfig
from plugin.errors import AdaptallocError, printable

__all__ = [
    "DEFAULT_URL",
    "StoreError",
    "StoreMisconfigured",
    "StoreUnavailable",
    "client_location",
    "connect",
    "guarded",
    "is_cluster",
    "mask_url",
    "resolve_url",
    "unavailable_as_error",
]

DEFAULT_URL = "redis://localhost:6379/0"
URL_ENV = "REDIS_URL"
SENTINEL_SCHEME = "redis+sentinel://"
SENTINEL_PORT = 26379
CLUSTER_SCHEME = "redis+cluster://"
CLUSTER_PORT = 6379
_SENTINEL_HOST = re.compile(r"[A-Za-z0-9._-]+")

P = ParamSpec("P")
R = TypeVar("R")


class StoreError(AdaptallocError):
    """The curve store refused an operation or holds data it cannot read."""


class StoreUnavailable(StoreError):  # noqa: N818 - the name the design gives the daemon
    """Redis cannot be reached (or refuses us); callers on the decision path fail open."""


class StoreMisconfigured(StoreUnavailable):
    """Redis is not even tried: the URL is malformed or the password file unreadable (the
    fix is in the configuration, not in Redis)."""


@dataclass(frozen=True)
class ResolvedUrl:
    """The URL to use and where it came from (for messages)."""

    url: str
    origin: str

    def __str__(self) -> str:
        return f"{mask_url(self.url)} ({self.origin})"


@dataclass(frozen=True)
class SentinelUrl:
    """A ``redis+sentinel://`` URL taken apart (module docstring)."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int
    username: str | None
    password: str | None


def parse_sentinel_url(url: str) -> SentinelUrl:
    """``redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,...]/SERVICE[/DB]``; ValueError
    naming what is wrong."""
    if not url.startswith(SENTINEL_SCHEME):
        raise ValueError(f"a Sentinel URL starts with {SENTINEL_SCHEME}")
    rest = url[len(SENTINEL_SCHEME) :]
    netloc, _, path = rest.partition("/")
    username, password, sentinels = _auth_and_hosts(netloc, SENTINEL_PORT, "sentinel")
    parts = [p for p in path.split("/") if p] if path else []
    if not parts or len(parts) > 2:
        raise ValueError("the path must be /SERVICE or /SERVICE/DB")
    if len(parts) == 2 and not parts[1].isdigit():
        raise ValueError(f"the database {parts[1]!r} is not a number")
    return SentinelUrl(
        tuple(sentinels), unquote(parts[0]), int(parts[1]) if len(parts) == 2 else 0,
        username, password,
    )  # fmt: skip


@dataclass(frozen=True)
class ClusterUrl:
    """A ``redis+cluster://`` URL taken apart (module docstring)."""

    nodes: tuple[tuple[str, int], ...]
    username: str | None
    password: str | None


def _auth_and_hosts(
    netloc: str, default_port: int, what: str
) -> tuple[str | None, str | None, list[tuple[str, int]]]:
    """``[[USER]:PASSWORD@]HOST[:PORT][,...]`` -> (user, password, [(host, port), ...])."""
    username = password = None
    if "@" in netloc:
        auth, _, netloc = netloc.rpartition("@")
        user, colon, secret = auth.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    hosts = []
    for item in netloc.split(","):
        host, colon, port = item.partition(":")
        if not _SENTINEL_HOST.fullmatch(host) or (colon and not port.isdigit()):
            raise ValueError(f"{what} {item!r} is not HOST or HOST:PORT")
        number = int(port) if colon else default_port
        if not 0 < number < 65536:
            raise ValueError(f"{what} port {number} is out of range")
        hosts.append((host, number))
    return username, password, hosts


def parse_cluster_url(url: str) -> ClusterUrl:
    """``redis+cluster://[[USER]:PASSWORD@]HOST[:PORT][,...][/]``; ValueError naming what is
    wrong (a database other than 0 is one: a cluster has no other)."""
    if not url.startswith(CLUSTER_SCHEME):
        raise ValueError(f"a Cluster URL starts with {CLUSTER_SCHEME}")
    netloc, _, path = url[len(CLUSTER_SCHEME) :].partition("/")
    if path.strip("/") not in ("", "0"):
        raise ValueError("a Redis Cluster has only database 0; drop the path")
    username, password, nodes = _auth_and_hosts(netloc, CLUSTER_PORT, "cluster node")
    return ClusterUrl(tuple(nodes), username, password)


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (safe for logs and messages)."""
    for scheme in (SENTINEL_SCHEME, CLUSTER_SCHEME):
        if url.startswith(scheme):
            netloc, slash, path = url[len(scheme) :].partition("/")
            if "@" in netloc:
                auth, _, hosts = netloc.rpartition("@")
                user = auth.partition(":")[0]
                netloc = f"{user}:***@{hosts}" if ":" in auth else netloc
            return printable(scheme + netloc + slash + path)
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.password is None:
        return printable(url)
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    netloc = f"{user}:***@{host}{port}"
    return printable(urlunsplit(parts._replace(netloc=netloc)))


def resolve_url(
    explicit: str | None, config: RedisConfig, environ: Mapping[str, str] | None = None
) -> ResolvedUrl:
    """--redis-url, then [redis] url, then $REDIS_URL, then the local default."""
    env = os.environ if environ is None else environ
    if explicit:
        return ResolvedUrl(explicit, "--redis-url")
    if config.url:
        return ResolvedUrl(config.url, "[redis] url")
    if env.get(URL_ENV):
        return ResolvedUrl(env[URL_ENV], f"${URL_ENV}")
    return ResolvedUrl(DEFAULT_URL, f"the default; set ${URL_ENV} or [redis] url")


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return printable(text.splitlines()[0] if text else text)[:200]


def connect(
    explicit_url: str | None = None,
    config: RedisConfig | None = None,
    environ: Mapping[str, str] | None = None,
    check: bool = True,
) -> redis.Redis:
    """A redis-py client (str responses) with timeouts and retries; PING it when `check`.

    Raises
    ------
    StoreUnavailable
        When the URL is malformed, the password file unreadable, or Redis does not answer.
    """
    cfg = config or RedisConfig()
    where = resolve_url(explicit_url, cfg, environ)
    options: dict[str, object] = {
        "decode_responses": True,
        "socket_timeout": cfg.socket_timeout_s,
        "socket_connect_timeout": cfg.connect_timeout_s,
        "health_check_interval": cfg.health_check_interval_s,
        "retry": Retry(
            ExponentialWithJitterBackoff(cap=cfg.backoff_cap_s, base=cfg.backoff_base_s),
            cfg.retries,
        ),
        "retry_on_error": [redis.ConnectionError, redis.TimeoutError],
        "client_name": "adaptalloc",
    }
    if cfg.username:
        options["username"] = cfg.username
    if cfg.password_file:
        try:
            options["password"] = Path(cfg.password_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise StoreMisconfigured(
                f"cannot read [redis] password_file {printable(cfg.password_file)}: "
                f"{exc.strerror or type(exc).__name__}"
            ) from exc
    if where.url.startswith("rediss://") and cfg.tls_ca_file:
        options["ssl_ca_certs"] = cfg.tls_ca_file
    try:
        if where.url.startswith(CLUSTER_SCHEME):
            client = _cluster_client(parse_cluster_url(where.url), options)
        elif where.url.startswith(SENTINEL_SCHEME):
            client = _sentinel_client(parse_sentinel_url(where.url), cfg, options)
        else:
            client = redis.Redis.from_url(where.url, **options)
    except (ValueError, TypeError) as exc:
        raise StoreMisconfigured(f"Redis URL {where} is not usable: {_reason(exc)}") from exc
    except redis.RedisError as exc:  # a cluster's nodes are asked for the slot map at once
        raise _unavailable(exc, str(where)) from exc
    if check:
        try:
            client.ping()
        except redis.RedisError as exc:
            client.close()
            raise _unavailable(exc, str(where)) from exc
    return client


def _sentinel_client(url: SentinelUrl, cfg: RedisConfig, options: dict[str, object]) -> redis.Redis:
    """The master of `url`'s service, found through its sentinels on every new connection;
    the configuration's username and password win over the URL's, as for plain URLs."""
    master = dict(options)
    if url.username and "username" not in master:
        master["username"] = url.username
    if url.password is not None and "password" not in master:
        master["password"] = url.password
    sentinel = redis.sentinel.Sentinel(  # type: ignore[no-untyped-call]
        list(url.sentinels),
        sentinel_kwargs={
            "socket_timeout": cfg.socket_timeout_s,
            "socket_connect_timeout": cfg.connect_timeout_s,
        },
    )
    client: redis.Redis = sentinel.master_for(url.service, db=url.db, **master)  # type: ignore[no-untyped-call]
    return client


class _Cluster(redis.cluster.RedisCluster):
    """redis-py's RedisCluster, but "no node of the cluster answers" is a
    ``redis.ConnectionError`` as on a single Redis (redis-py raises RedisClusterException,
    which is no RedisError), so every caller's fail-open path catches it."""

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        with _cluster_down_as_connection_error():
            return super().execute_command(*args, **kwargs)  # type: ignore[no-untyped-call]

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction, shard_hint)  # type: ignore[no-untyped-call]
        execute = pipe.execute

        def checked(raise_on_error: bool = True) -> Any:
            with _cluster_down_as_connection_error():
                return execute(raise_on_error)

        pipe.execute = checked
        return pipe


@contextmanager
def _cluster_down_as_connection_error() -> Iterator[None]:
    try:
        yield
    except redis.exceptions.RedisClusterException as exc:
        raise redis.ConnectionError(_reason(exc)) from exc


def _cluster_client(url: ClusterUrl, options: dict[str, object]) -> redis.Redis:
    """A ``RedisCluster`` started from `url`'s nodes (it finds the others itself). Typed as
    ``redis.Redis``: the store calls only the commands both share. Connection errors and
    timeouts are retried with the same backoff; MOVED and ASK redirections by redis-py."""
    node_options = {k: v for k, v in options.items() if k != "retry_on_error"}
    if url.username and "username" not in node_options:
        node_options["username"] = url.username
    if url.password is not None and "password" not in node_options:
        node_options["password"] = url.password
    with _cluster_down_as_connection_error():  # it asks the nodes for the slot map at once
        client: redis.Redis = _Cluster(  # type: ignore[assignment]
            startup_nodes=[
                redis.cluster.ClusterNode(host, port)  # type: ignore[no-untyped-call]
                for host, port in url.nodes
            ],
            **node_options,  # type: ignore[arg-type]
        )
    return client


def is_cluster(client: object) -> bool:
    """True for a Redis Cluster client (its pipelines and scripts have rules of their own)."""
    return isinstance(client, redis.cluster.RedisCluster)


def _unavailable(exc: redis.RedisError, where: str) -> StoreUnavailable:
    if isinstance(exc, redis.AuthenticationError) or "NOAUTH" in str(exc):
        return StoreUnavailable(f"Redis at {where} refused our credentials: {_reason(exc)}")
    return StoreUnavailable(f"Redis at {where} is unreachable: {_reason(exc)}")


#: redis-py errors that mean "the store is not there for us right now".
UNAVAILABLE = (
    redis.ConnectionError,  # includes AuthenticationError, BusyLoadingError
    redis.TimeoutError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.NoPermissionError,
    redis.exceptions.AuthorizationError,
)


@contextmanager
def unavailable_as_error(where: str = "Redis") -> Iterator[None]:
    """Turn redis-py's connection errors into StoreUnavailable, other errors into StoreError."""
    try:
        yield
    except UNAVAILABLE as exc:
        raise _unavailable(exc, where) from exc
    except redis.ResponseError as exc:
        if "NOAUTH" in str(exc):
            raise _unavailable(exc, where) from exc
        raise StoreError(f"Redis refused a command: {_reason(exc)}") from exc


def guarded(method: Callable[P, R]) -> Callable[P, R]:
    """Decorator for store methods: redis-py errors become StoreUnavailable/StoreError.

    The message names the store's ``where`` attribute (its masked URL) when it has one.
    """

    @wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        where = str(getattr(args[0], "where", "Redis")) if args else "Redis"
        with unavailable_as_error(where):
            return method(*args, **kwargs)

    return wrapper


def client_location(client: redis.Redis) -> str:
    """``redis://host:port/db`` (or ``unix://path``) of a client, without credentials."""
    if isinstance(client, redis.cluster.RedisCluster):
        nodes = ",".join(f"{printable(str(n.host))}:{n.port}" for n in client.get_nodes()[:3])
        return f"redis+cluster://{nodes}"
    pool = client.connection_pool
    kwargs = pool.connection_kwargs
    if isinstance(pool, redis.sentinel.SentinelConnectionPool):
        return f"redis+sentinel://{printable(pool.service_name)}/{kwargs.get('db', 0)}"
    if kwargs.get("path"):
        return f"unix://{printable(str(kwargs['path']))}"
    scheme = "rediss" if kwargs.get("ssl") or "ssl_ca_certs" in kwargs else "redis"
    host = kwargs.get("host", "localhost")
    return f"{scheme}://{printable(str(host))}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"
