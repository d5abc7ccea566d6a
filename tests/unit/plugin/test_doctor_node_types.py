"""The doctor's node types check (plugin/doctor/node_types.py) on configurations read as the
daemon reads them; the partitions are given as ``scontrol show partition`` lists them (the
testbed's run is in tests/integration/test_doctor.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugin.config import Config, parse_config
from plugin.doctor import FAIL, OK, WARN
from plugin.doctor.node_types import node_types_check
from plugin.slurm.errors import SlurmError
from plugin.slurm.records import PartitionRecord

TESTBED = ("debug", "batch", "big")


def partitions(*names: str) -> list[PartitionRecord]:
    return [PartitionRecord(name, "node[1-8]", 8, "UP", name == "debug") for name in names]


def config(**types: dict[str, float]) -> Config:
    return parse_config({"node_types": types}, "adaptalloc.toml")


def check(conf: Config, names: Sequence[str] = TESTBED) -> tuple[str, str, str]:
    found = node_types_check(conf, lambda: partitions(*names))
    return found.status, found.detail, found.fix


def test_nothing_described_is_fine_and_says_what_is_off() -> None:
    status, detail, _ = check(Config())
    assert status == OK
    assert "no roofline priors" in detail


def test_described_partitions_with_node_numbers_pass() -> None:
    status, detail, fix = check(
        config(
            batch={"peak_gflops": 1000, "bandwidth_gbs": 100, "link_gbs": 12.5},
            big={"peak_gflops": 3000, "bandwidth_gbs": 200},
        )
    )
    assert (status, fix) == (OK, "")
    assert "batch (1000 GFLOP/s, 100 GB/s, ridge 10 flop/byte)" in detail


def test_a_type_naming_no_partition_fails_with_the_partitions_slurm_has() -> None:
    status, detail, fix = check(config(bigg={"peak_gflops": 3000, "bandwidth_gbs": 200}))
    assert status == FAIL
    assert "[node_types.bigg] names no partition" in detail
    assert "batch, big, debug" in detail
    assert "rename [node_types.bigg]" in fix


@pytest.mark.parametrize(
    ("numbers", "slip"),
    [
        ({"peak_gflops": 3, "bandwidth_gbs": 200}, "ridge"),  # TFLOP/s, not GFLOP/s
        ({"peak_gflops": 0.5, "bandwidth_gbs": 0.5}, "peak_gflops = 0.5"),
        ({"peak_gflops": 3e9, "bandwidth_gbs": 200}, "peak_gflops"),  # FLOP/s
        ({"peak_gflops": 1000, "bandwidth_gbs": 100, "link_gbs": 1e4}, "link_gbs"),
        ({"peak_gflops": 1000, "bandwidth_gbs": 2e5}, "bandwidth_gbs"),
    ],
)
def test_numbers_no_node_has_are_warned_of_as_a_unit_slip(
    numbers: dict[str, float], slip: str
) -> None:
    status, detail, fix = check(config(big=numbers))
    assert status == WARN
    assert f"[node_types.big] {slip}" in detail
    assert "units" in fix


def test_partitions_slurm_cannot_list_fail_the_check() -> None:
    def broken() -> list[PartitionRecord]:
        raise SlurmError("scontrol: error: Unable to contact slurm controller")

    found = node_types_check(config(big={"peak_gflops": 1, "bandwidth_gbs": 1}), broken)
    assert found.status == FAIL
    assert "cannot list" in found.detail
