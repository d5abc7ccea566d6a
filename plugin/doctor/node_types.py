"""Whether the node types the adaptalloc TOML describes (``[node_types.NAME]``) are partitions
Slurm has, with numbers a node could have (docs/science/seed-models.md).

A type naming no partition describes nothing the daemon decides on (a typo, or a partition
renamed): fail, since the site meant it to. Numbers outside what any node has are taken for
a unit slip and warned of (the parser has already refused anything not a positive number):

* ``peak_gflops``, the peak FLOP/s of one node in 10⁹: from 1 (below any server node; a
  Raspberry Pi 4's four cores peak near 13) to 10⁶ (a node of eight of today's largest GPUs
  peaks near 5·10⁵ in FP64); a value given in TFLOP/s or per core lands below, one in MFLOP/s
  above;
* ``bandwidth_gbs``, one node's memory bandwidth in GB/s: from 1 (a Pi 4 streams about 4) to
  10⁵ (eight HBM3e GPUs hold about 6·10⁴); a value in Gbit/s or per channel may slip;
* ``link_gbs``, one node's network link in GB/s (0: not known): from 0.01 (100 Mbit/s) to
  10³ (eight 400 Gbit/s ports are 400); a value in Gbit/s is 8× too high;
* the ridge point peak/bandwidth, in flop/byte: from 0.1 to 10³ (CPU nodes sit near 5-20,
  GPU nodes near 10-60): a peak and a bandwidth from different units or sources land
  outside.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from plugin.config import Config
from plugin.doctor.check import FAIL, OK, WARN, Check
from plugin.errors import printable
from plugin.slurm.errors import SlurmError
from plugin.slurm.records import PartitionRecord

__all__ = ["NAME", "PLAUSIBLE", "node_types_check"]

NAME = "node_types"
#: (least, most) a node's value may plausibly be (module docstring: what chose them).
PLAUSIBLE = {
    "peak_gflops": (1.0, 1e6),
    "bandwidth_gbs": (1.0, 1e5),
    "link_gbs": (0.01, 1e3),
    "ridge": (0.1, 1e3),
}
#: What each value is, for the warning.
UNITS = {
    "peak_gflops": "GFLOP/s per node",
    "bandwidth_gbs": "GB/s of memory bandwidth per node",
    "link_gbs": "GB/s of network link per node",
    "ridge": "flop/byte (peak_gflops / bandwidth_gbs)",
}


def _implausible(name: str, values: dict[str, float]) -> list[str]:
    out = []
    for key, value in values.items():
        if key == "link_gbs" and value == 0:
            continue  # 0: not known
        least, most = PLAUSIBLE[key]
        if not least <= value <= most:
            out.append(
                f"[node_types.{name}] {key} = {value:g} is outside {least:g}-{most:g} {UNITS[key]}"
            )
    return out


def node_types_check(config: Config, partitions: Callable[[], Sequence[PartitionRecord]]) -> Check:
    """ok: none described, or each names a partition with plausible numbers; warn: a
    number outside what a node has (module docstring); fail: a type naming no partition
    Slurm has, or the partitions cannot be read."""
    if not config.node_types:
        return Check(
            NAME,
            OK,
            "no [node_types.NAME] described: no roofline priors, and master-worker caps only "
            "from the runs",
        )
    try:
        known = {p.name for p in partitions()}
    except SlurmError as exc:
        return Check(
            NAME,
            FAIL,
            f"cannot list Slurm's partitions: {printable(str(exc))[:200]}",
            "run `scontrol show partition` as the daemon's account",
        )
    missing = [name for name, _ in config.node_types if name not in known]
    if missing:
        listed = ", ".join(sorted(known)) or "none"
        return Check(
            NAME,
            FAIL,
            f"[node_types.{missing[0]}] names no partition Slurm has (it has: {printable(listed)})",
            f"in {config.source}, rename [node_types.{missing[0]}] to the partition whose nodes "
            "it describes, or remove it",
        )
    slips: list[str] = []
    for name, node_type in config.node_types:
        values = {
            "peak_gflops": node_type.peak_gflops,
            "bandwidth_gbs": node_type.bandwidth_gbs,
            "link_gbs": node_type.link_gbs,
            "ridge": node_type.peak_gflops / node_type.bandwidth_gbs,
        }
        slips += _implausible(name, values)
    if slips:
        return Check(
            NAME,
            WARN,
            "; ".join(slips),
            f"check the units in {config.source} (docs/science/seed-models.md)",
        )
    shown = ", ".join(
        f"{name} ({t.peak_gflops:g} GFLOP/s, {t.bandwidth_gbs:g} GB/s, ridge "
        f"{t.peak_gflops / t.bandwidth_gbs:.3g} flop/byte)"
        for name, t in config.node_types
    )
    return Check(NAME, OK, f"{len(config.node_types)} node types described: {shown}")
