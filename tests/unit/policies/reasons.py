"""What a decision's reason sentence must say, checked without pinning its wording."""

from __future__ import annotations


def assert_names(reason: str, *facts: str) -> None:
    """Every fact (a size with its unit, a percentage, the rule's word, a setting) is in `reason`.

    The rule, the size and these facts are the behaviour; the sentence around them may change.
    """
    missing = [fact for fact in facts if fact not in reason]
    assert not missing, f"{reason!r} does not name {missing}"
