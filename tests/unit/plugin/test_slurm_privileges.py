"""The daemon's start-up privilege check, without Slurm: the decision and what it reads."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from plugin.slurm.errors import SlurmCommandError
from plugin.slurm.privileges import ACTIONS, check_privileges, judge

CONFIG = "Configuration data as of 2026-11-23T09:00:00\nSlurmUser               = slurm(64030)\n"


@pytest.mark.parametrize(
    ("uid", "user", "level", "missing"),
    [
        (0, "root", None, ()),
        (64030, "slurm", None, ()),  # SlurmUser
        (1000, "ops", "Administrator", ()),
        (1000, "ops", "Admin", ()),
        (1000, "ops", "Operator", ("AdminComment",)),
        (1000, "ops", "None", ACTIONS),
        (1000, "ops", None, ACTIONS),  # unreadable: nothing
        (1000, "ops", "Coordinator?", ACTIONS),
    ],
)
def test_judge(uid: int, user: str, level: str | None, missing: tuple[str, ...]) -> None:
    verdict = judge(uid, user, "slurm", level)
    assert verdict.missing == missing
    assert (verdict.problem() is None) == (not missing)


def runner(
    answers: dict[str, str | None],
) -> tuple[list[tuple[str, ...]], Callable[..., str]]:
    calls: list[tuple[str, ...]] = []

    def run(*args: str) -> str:
        calls.append(args)
        answer = answers.get(args[0])
        if answer is None:
            raise SlurmCommandError(f"{args[0]} failed")
        return answer

    return calls, run


def test_an_operator_is_told_what_is_missing_and_how_to_fix_it() -> None:
    calls, run = runner({"scontrol": CONFIG, "sacctmgr": "Operator\n"})
    verdict = check_privileges(run, uid=1000, user="ops")
    assert verdict.missing == ("AdminComment",)
    assert calls[-1] == ("sacctmgr", "-n", "-P", "show", "user", "ops", "format=AdminLevel")
    problem = verdict.problem()
    assert problem is not None
    assert "AdminComment" in problem
    assert "set adminlevel=Admin" in problem


def test_slurm_user_needs_no_accounting_and_a_dead_slurmdbd_is_missing_privileges() -> None:
    calls, run = runner({"scontrol": CONFIG, "sacctmgr": None})
    assert check_privileges(run, uid=64030, user="slurm").ok
    assert all(c[0] != "sacctmgr" for c in calls)
    assert not check_privileges(run, uid=1000, user="ops").ok
    _, nothing = runner({})
    missing = check_privileges(nothing, uid=1000, user="ops")
    assert missing.missing == ACTIONS
    assert "sacctmgr did not say" in (missing.problem() or "")
