"""Files users hand the CLI are read with bounds: a policy or config TOML and an SWF trace
of /dev/zero end in one error line and exit 1, not in MemoryError (exit 70) after eating
the machine's memory. The CLI runs in a child process under a 3 GiB address-space limit, so
a reader without its bound fails fast here instead of swapping."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LIMIT = 3 * 1024**3


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["policy", "check", "/dev/zero"], {}, "larger than 1,048,576 bytes"),
        (["apps"], {"ADAPTALLOC_CONFIG": "/dev/zero"}, "larger than 1,048,576 bytes"),
        (["simulate", "/dev/zero"], {}, "line 1: longer than 65,536 characters"),
    ],
)  # fmt: skip
def test_dev_zero_is_one_error_line(
    args: list[str], env: dict[str, str], words: str, tmp_path: Path
) -> None:
    proc = subprocess.run(  # noqa: S603 - our interpreter and module, no shell
        [sys.executable, "-m", "plugin", *args],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True, text=True, timeout=120, check=False, preexec_fn=_limited,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-500:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-500:]
    assert "/dev/zero" in lines[0]
    assert words in lines[0]
