"""The store's Lua scripts (plugin/store/lua/) and how they run in pipelines, on a single
Redis as on Redis Cluster.

redis-py loads a script on first use (EVALSHA, then SCRIPT LOAD on NOSCRIPT). A plain
pipeline does that for its scripts before it runs; a Redis Cluster pipeline refuses script
objects altogether ("Calling pipelined function evalsha is blocked"), so `queue` puts a
plain ``EVALSHA`` command in it (routed to the master of its keys' slot), and `run`, when a
master answers NOSCRIPT (first use, or it restarted, or a failover promoted a node that
never saw the script), loads the scripts on every master and runs again the calls that
master refused (they never ran; the others are not repeated).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis
import redis.cluster
from redis.exceptions import NoScriptError

from plugin.store.connection import is_cluster

__all__ = ["Call", "load", "queue", "run"]


@dataclass(frozen=True)
class Call:
    """One script call: the script, its keys and its arguments."""

    script: Any
    keys: Sequence[str]
    args: Sequence[str | int | float]


def load(client: Any, name: str) -> Any:
    """The script ``plugin/store/lua/<name>`` registered on `client` (a redis-py Script).
    Nothing is sent to Redis here (a store is made before anyone knows Redis is up): the
    script is loaded on its first NOSCRIPT."""
    text = (resources.files("plugin.store") / "lua" / name).read_text(encoding="utf-8")
    return client.register_script(text)


def queue(
    pipe: Any, script: Any, keys: Sequence[str], args: Sequence[Any], by_text: bool = False
) -> None:
    """Put one call of `script` in `pipe`, a plain or a Redis Cluster pipeline (module
    docstring); its reply comes with the pipeline's. `by_text`: on a cluster, send the
    script itself (EVAL), never NOSCRIPT, for callers that execute the pipeline themselves
    (a transaction cannot be run again in part)."""
    if isinstance(pipe, redis.cluster.ClusterPipeline):
        # The node named here: else redis-py asks a server which arguments are keys
        # (COMMAND GETKEYS), one round trip per call (10x slower ingest).
        pipe.execute_command(  # type: ignore[no-untyped-call]
            "EVAL" if by_text else "EVALSHA", script.script if by_text else script.sha,
            len(keys), *keys, *args,
            target_nodes=pipe.get_node_from_key(keys[0]),  # type: ignore[no-untyped-call]
        )  # fmt: skip
    else:
        script(keys=list(keys), args=list(args), client=pipe)


def run(client: Any, calls: Sequence[Call]) -> list[Any]:
    """The replies of `calls`, run in one pipeline (no transaction: each script is atomic on
    its own); on a cluster the pipeline sends each call to the master of its keys' slot.
    Calls a master answered NOSCRIPT (it never ran them) are run again once the scripts
    are loaded on every master; the others ran once. Any other error is raised."""
    replies = _execute(client, calls)
    missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
    if missing:
        if not is_cluster(client):
            raise replies[missing[0]]
        for script in {id(c.script): c.script for c in calls}.values():
            script.sha = client.script_load(script.script)  # on every master
        for i, reply in zip(missing, _execute(client, [calls[i] for i in missing]), strict=True):
            replies[i] = reply
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return replies


def _execute(client: Any, calls: Sequence[Call]) -> list[Any]:
    if not calls:
        return []
    pipe = client.pipeline(transaction=False)
    for call in calls:
        queue(pipe, call.script, call.keys, call.args)
    return list(pipe.execute(raise_on_error=False))
