"""slurmctld's own RPC statistics (`sdiag`, root only), for tests and benchmarks that count
what the daemon asks of slurmctld."""

from __future__ import annotations

import re
import subprocess

#: One "by message type" row: `REQUEST_UPDATE_JOB ( 3001) count:12 ave_time:345 total_time:…`.
SDIAG_ROW = re.compile(r"^\s+([A-Z_0-9]+)\s+\(\s*\d+\)\s+count:(\d+)\s+ave_time:(\d+)", re.M)


def _sdiag(*args: str) -> str:
    return subprocess.run(  # noqa: S603 - fixed program, our own flags, no shell
        ["sdiag", *args],  # noqa: S607
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout


def reset_rpc_stats() -> None:
    """`sdiag -r`: the next `rpc_stats` covers only what happens from now on."""
    _sdiag("-r")


def rpc_stats() -> dict[str, tuple[int, float]]:
    """Message type -> (count, mean ms inside slurmctld) since the last reset."""
    by_type = _sdiag().split("Remote Procedure Call statistics by user", 1)[0]
    return {m[1]: (int(m[2]), int(m[3]) / 1000.0) for m in SDIAG_ROW.finditer(by_type)}


def rpc_counts() -> dict[str, int]:
    """Message type -> count since the last reset."""
    return {name: count for name, (count, _) in rpc_stats().items()}
