"""The store's Lua scripts (plugin/store/lua/) and how they run in pipelines, on a single
Redis as on Redis Cluster.

redis-py loads a script on first use (EVALSHA, then SCRIPT LOAD on NOSCRIPT). A plain
pipeline does that for its scripts before it runs; a Redis Cluster pipeline refuses script
objects altogether ("Calling pipelined function evalsha is blocked"), so `queue` puts a
plain ``EVALSHA`` command in it (redis-py routes it by its keys), `load` loads the scripts
on every master first (SCRIPT LOAD goes to all of them) and `run`, when a
master answers NOSCRIPT anyway (it restarted, or a failover promoted a node that never saw
the script), loads them again and runs the calls once more. Every script of the store is
safe to run twice (idempotent, or counting each job once), so the repeat changes nothing
the first run did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis
import redis.cluster

from plugin.store.connection import is_cluster

__all__ = ["Call", "load", "queue", "run"]


@dataclass(frozen=True)
class Call:
    """One script call: the script, its keys and its arguments."""

    script: Any
    keys: Sequence[str]
    args: Sequence[str | int | float]


def load(client: Any, name: str) -> Any:
    """The script ``plugin/store/lua/<name>`` registered on `client` (a redis-py Script);
    on a cluster loaded on every master at once."""
    text = (resources.files("plugin.store") / "lua" / name).read_text(encoding="utf-8")
    script = client.register_script(text)
    if is_cluster(client):
        script.sha = client.script_load(text)
    return script


def queue(pipe: Any, script: Any, keys: Sequence[str], args: Sequence[Any]) -> None:
    """Put one call of `script` in `pipe`, a plain or a Redis Cluster pipeline (module
    docstring); its reply comes with the pipeline's."""
    if isinstance(pipe, redis.cluster.ClusterPipeline):
        # The node named here: else redis-py asks a server which arguments are keys
        # (COMMAND GETKEYS), one round trip per call (10x slower ingest).
        pipe.execute_command(  # type: ignore[no-untyped-call]
            "EVALSHA", script.sha, len(keys), *keys, *args,
            target_nodes=pipe.get_node_from_key(keys[0]),  # type: ignore[no-untyped-call]
        )  # fmt: skip
    else:
        script(keys=list(keys), args=list(args), client=pipe)


def run(client: Any, calls: Sequence[Call]) -> list[Any]:
    """The replies of `calls`, run in one pipeline (no transaction: each script is atomic on
    its own); on a cluster the pipeline sends each call to the master of its keys' slot."""
    if not calls:
        return []
    for attempt in (1, 2):
        pipe = client.pipeline(transaction=False)
        for call in calls:
            queue(pipe, call.script, call.keys, call.args)
        try:
            return list(pipe.execute())
        except redis.exceptions.NoScriptError:
            if attempt == 2 or not is_cluster(client):
                raise
            for script in {id(c.script): c.script for c in calls}.values():
                script.sha = client.script_load(script.script)
    raise AssertionError("unreachable")  # pragma: no cover
