"""Property tests of the comment tag parser and the app key rule on hostile job fields
(hypothesis).

``parse_tag`` returns None or a Tag whose parts are valid key parts, or raises AppKeyError
with one inert line; a tag it honours is one job_submit.lua's opt-out check sees the same
way (words split on ASCII whitespace only, as Lua's %s). ``AppKeyRule.key_for`` on any job
name, comment and admin comment returns a valid AppKey or raises AppKeyError. Memory is
bounded per test (fuzz_support.bounded_memory). Run with -s to see the cases tried.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin.appkey import TAG_MARKER, AppKey, AppKeyError, AppKeyRule, parse_tag

from .fuzz_support import CASES_TRIED, assert_one_inert_line, bounded_memory

PARSER = "comment tag / app key"
FUZZ = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PART = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
#: Lua's %s in job_submit.lua (C locale): the only separators a tag may rely on.
LUA_SPACE = " \t\n\v\f\r"

WORDS = st.one_of(
    st.sampled_from(
        [
            TAG_MARKER,
            "adaptalloc:v2",
            "adaptalloc:v\u0661",
            "adaptalloc:v\uff11",
            "adaptalloc:v1:held",
            "adaptalloc:v1;",
            "app=lulesh",
            "size=large",
            "resize=no",
            "resize=yes",
            "resize=NO",
            "app=lul\u0435sh",
            "app=\u212aelvin",
            "app=a;",
            ";",
            "app=",
            "size=\uff11",
            "app=\x1b[2J",
        ]
    ),
    st.text(max_size=15),
)
SEPARATORS = st.sampled_from([" ", "  ", "\t", "\n", "\u00a0", "\u2003", "\x1f", "\x85", ""])


@st.composite
def comments(draw: st.DrawFn) -> str:
    words = draw(st.lists(WORDS, max_size=8))
    return "".join(word + draw(SEPARATORS) for word in words)


@dataclass(frozen=True)
class Job:
    name: str
    user: str = "alice"
    account: str = "physics"
    partition: str = "batch"
    wckey: str = ""
    script: str | None = None
    comment: str | None = None
    admin_comment: str | None = None


@pytest.fixture(scope="module", autouse=True)
def _print_cases() -> Iterator[None]:
    yield
    print(f"\n[fuzz] {PARSER}: {CASES_TRIED[PARSER]:,} cases tried")


ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _lua_opted_out(comment: str) -> bool:
    """job_submit.lua's opted_out(), transcribed: the v1 tag up to ';' holds resize=no, any case."""
    match = re.search(r"[ \t\n\v\f\r]adaptalloc:v1[ \t\n\v\f\r]+([^;]*)", " " + comment)
    if match is None:
        return False
    tag = f" {match.group(1).translate(ASCII_LOWER)} "  # Lua's string.lower: ASCII letters only
    return re.search(r"[ \t\n\v\f\r]resize=no[ \t\n\v\f\r]", tag) is not None


@pytest.mark.slow
@FUZZ
@given(comments())
def test_parse_tag_on_hostile_comments(comment: str) -> None:
    CASES_TRIED[PARSER] += 1
    with bounded_memory():
        try:
            tag = parse_tag(comment)
        except AppKeyError as exc:
            assert_one_inert_line(str(exc))
            return
    if tag is None:
        assert not _lua_opted_out(comment), comment
        return
    for part in (tag.app, tag.size):
        assert part is None or PART.fullmatch(part), part
    # Where the daemon honours resize=no, so does the Lua (and the other way round when the
    # tag is one the daemon accepts): both split on ASCII whitespace only.
    assert (tag.resize is False) == _lua_opted_out(comment), comment


@pytest.mark.slow
@FUZZ
@given(st.text(max_size=80), st.one_of(st.none(), comments()), st.one_of(st.none(), comments()))
def test_key_for_on_hostile_job_fields(
    name: str, comment: str | None, admin_comment: str | None
) -> None:
    CASES_TRIED[PARSER] += 1
    job = Job(name=name, comment=comment, admin_comment=admin_comment)
    with bounded_memory():
        try:
            key = AppKeyRule().key_for(job)
        except AppKeyError as exc:
            assert_one_inert_line(str(exc))
            return
    assert isinstance(key, AppKey)
    assert PART.fullmatch(key.name)
    assert key.size is None or PART.fullmatch(key.size)
    assert AppKey.parse(str(key)) == key
