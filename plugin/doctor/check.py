"""What one doctor check reports: its name, ok / warn / fail, what it saw and the fix.

The JSON contract of ``adaptalloc doctor --format json``::

    {"status": "ok"|"warn"|"fail",
     "checks": [{"name": ..., "status": "ok"|"warn"|"fail", "detail": ..., "fix": ...}]}

``status`` is the worst of the checks' (fail, else warn, else ok).

``fix`` is the exact command or edit that makes the check pass ("" when there is nothing to
do). The command exits 1 when any check failed; warnings do not change the exit code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["FAIL", "OK", "STATUSES", "WARN", "Check", "document", "failed", "overall"]

OK = "ok"
WARN = "warn"
FAIL = "fail"
STATUSES = (OK, WARN, FAIL)


@dataclass(frozen=True)
class Check:
    """The outcome of one check."""

    name: str
    status: str
    detail: str
    fix: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


def overall(checks: Sequence[Check]) -> str:
    """The worst status of `checks`: fail, else warn, else ok."""
    seen = {check.status for check in checks}
    return FAIL if FAIL in seen else WARN if WARN in seen else OK


def document(checks: Sequence[Check]) -> dict[str, Any]:
    """The ``--format json`` document."""
    return {"status": overall(checks), "checks": [check.to_dict() for check in checks]}


def failed(checks: Sequence[Check]) -> bool:
    """Whether any check failed (the command then exits 1)."""
    return any(check.status == FAIL for check in checks)
