"""The doctor's judgment of the sizing user's power, from sacctmgr's answer (the testbed's
answers are in tests/integration/test_sizing_user.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from plugin.doctor.check import FAIL, OK, WARN
from plugin.doctor.sizer_scope import Scope, parse_scope, sizer_scope
from plugin.slurm.errors import SlurmCommandError


def answering(text: str) -> Callable[..., str]:
    def run(*args: str) -> str:
        assert args[:4] == ("sacctmgr", "-n", "-P", "show")
        return text

    return run


def test_parse_reads_level_and_accounts() -> None:
    assert parse_scope("aasizer|None|aagrp,aahome\n", "aasizer") == Scope(
        "none", ("aagrp", "aahome")
    )
    assert parse_scope("other|None|x\n", "aasizer") is None
    assert parse_scope("", "aasizer") is None


@pytest.mark.parametrize(
    ("answer", "status", "words"),
    [
        ("aasizer|None|aagrp,aahome\n", OK, "coordinates aagrp, aahome"),
        ("aasizer|None|aagrp,root\n", WARN, "coordinator of root"),
        ("aasizer|Operator|aagrp\n", WARN, "AdminLevel operator"),
        ("aasizer|Administrator|root\n", WARN, "coordinator of root"),
        ("aasizer|None|\n", WARN, "coordinates no account"),
        ("", WARN, "coordinates no account"),
    ],
)
def test_a_coordinator_of_root_or_an_admin_level_is_warned_of(
    answer: str, status: str, words: str
) -> None:
    check = sizer_scope(answering(answer), "aasizer")
    assert (check.status, check.name) == (status, "sizing_user_scope")
    assert words in check.detail
    assert (check.fix == "") == (status == OK)


def test_no_sizing_user_is_fine_and_a_silent_sacctmgr_fails() -> None:
    assert sizer_scope(answering("unused"), "").status == OK

    def broken(*args: str) -> str:
        raise SlurmCommandError("sacctmgr failed (exit 1): no slurmdbd")

    check = sizer_scope(broken, "aasizer")
    assert check.status == FAIL
    assert "no slurmdbd" in check.detail
