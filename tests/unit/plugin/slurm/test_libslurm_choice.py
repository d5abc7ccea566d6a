"""Choosing the daemon's writer (plugin/slurm/factory.py `choose_writer`) and the combined
update's value checks (plugin/slurm/writer.py `JobUpdate`)."""

from __future__ import annotations

import pytest

from plugin.slurm.factory import choose_backend, choose_writer
from plugin.slurm.libslurm_backend import binding_version
from plugin.slurm.writer import MAX_ADMIN_COMMENT, JobUpdate, Resize


@pytest.mark.parametrize(
    ("requested", "binding", "slurm", "backend", "why"),
    [
        ("auto", (22, 5), (22, 5), "libslurm", "matches"),
        ("libslurm", (22, 5), (22, 5), "libslurm", "matches"),
        ("libslurm-writes", (22, 5), (22, 5), "libslurm", "matches"),
        ("libslurm-writes", None, (22, 5), "cli", "not built"),
        ("cli", (22, 5), (22, 5), "cli", "configured"),
        ("pyslurm", (22, 5), (22, 5), "cli", "configured"),
        ("auto", None, (22, 5), "cli", "not built"),
        ("auto", "the libslurm binding cannot load: boom", (22, 5), "cli", "boom"),
        ("auto", (22, 5), None, "cli", "unknown"),
        ("auto", (23, 2), (22, 5), "cli", "built for Slurm 23.02, not the installed 22.05"),
    ],
)
def test_choose_writer(
    requested: str,
    binding: tuple[int, int] | str | None,
    slurm: tuple[int, int] | None,
    backend: str,
    why: str,
) -> None:
    choice = choose_writer(requested, binding, slurm)
    assert (choice.backend, why in choice.reason) == (backend, True)


def test_choose_writer_refuses_an_unknown_backend() -> None:
    with pytest.raises(ValueError, match="libslurm"):
        choose_writer("ctypes", (22, 5), (22, 5))


def test_binding_version_reads_slurms_version_number() -> None:
    assert binding_version(0x160508) == (22, 5)
    assert binding_version(0x170211) == (23, 2)


def test_job_update_refuses_what_slurm_must_not_get() -> None:
    with pytest.raises(ValueError, match="control characters"):
        JobUpdate(3, admin_comment="adaptalloc:v1 app=x\nAdminComment=forged")
    with pytest.raises(ValueError, match="longer than"):
        JobUpdate(3, admin_comment="x" * (MAX_ADMIN_COMMENT + 1))
    with pytest.raises(ValueError, match="resize of job 4"):
        JobUpdate(3, resize=Resize(4, 2, 2))
    with pytest.raises(ValueError, match="job id"):
        JobUpdate(0)
    hostile = "adaptalloc:v1 app=x\"; $(touch /tmp/p) `id` ' Comment=y"
    assert JobUpdate(3, Resize(3, 2, 2, 10), hostile).admin_comment == hostile


def test_libslurm_writes_reads_with_the_cli_reader() -> None:
    assert choose_backend("libslurm-writes", (22, 5), (22, 5)).backend == "cli"
