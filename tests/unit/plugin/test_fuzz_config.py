"""Property tests of the adaptalloc config file reader on hostile TOML (hypothesis).

Whatever the file holds, ``load_config`` returns a Config or raises ConfigError with one
inert line: never RecursionError, OverflowError or another exception (exit 70). Inputs:
arbitrary text, documents built from the real sections and keys with values of every TOML
type (nested arrays and inline tables included), and deep nesting. Memory is bounded per
test (fuzz_support.bounded_memory). Run with -s to see the cases tried.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin.config import Config, ConfigError, NodeTypeConfig, load_config

from .fuzz_support import CASES_TRIED, assert_one_inert_line, bounded_memory

PARSER = "adaptalloc config TOML"
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SECTIONS = {
    f.name: [k.name for k in fields(getattr(Config(), f.name))]
    for f in fields(Config)
    if f.name not in ("source", "node_types")
}
#: ``[node_types.NAME]`` tables, fuzzed under a few names (a partition's, and hostile ones).
SECTIONS.update(
    {
        f"node_types.{name}": [k.name for k in fields(NodeTypeConfig)]
        for name in ("big", '"a b"', '"é"', '"x;rm"')
    }
)


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped)
    return f'"{escaped}"'


def _toml_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


SCALARS = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.floats().map(_toml_float),
    st.booleans().map(lambda b: "true" if b else "false"),
    st.text(max_size=30)
    .filter(lambda t: all(ord(c) < 0xD800 or ord(c) > 0xDFFF for c in t))
    .map(_toml_string),
    st.sampled_from(
        ["1_000", "0x10", "1e999", "1979-05-27T07:32:00Z", '"(?P<app>x)"', '"a{99999999999}"']
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), inner, max_size=3).map(
            lambda d: "{" + ", ".join(f"{k} = {v}" for k, v in d.items()) + "}"
        ),
    ),
    max_leaves=12,
)


@pytest.fixture(scope="module", autouse=True)
def _print_cases() -> Iterator[None]:
    yield
    print(f"\n[fuzz] {PARSER}: {CASES_TRIED[PARSER]:,} cases tried")


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def _check(directory: Path, text: str) -> Config | None:
    CASES_TRIED[PARSER] += 1
    path = directory / "fuzz.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    with bounded_memory():
        try:
            return load_config(str(path))
        except ConfigError as exc:
            assert_one_inert_line(str(exc))
            return None


@pytest.mark.slow
@FUZZ
@given(st.text(max_size=500))
def test_arbitrary_text(scratch: Path, text: str) -> None:
    _check(scratch, text)


@pytest.mark.slow
@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(SECTIONS)),
            st.lists(st.tuples(st.data(), VALUES), max_size=4),
        ),
        max_size=4,
    )
)
def test_real_keys_with_values_of_every_type(
    scratch: Path, doc: list[tuple[str, list[tuple[Any, str]]]]
) -> None:
    lines = []
    for section, entries in doc:
        lines.append(f"[{section}]")
        for data, value in entries:
            key = data.draw(st.sampled_from([*SECTIONS[section], "unknown_key"]))
            lines.append(f"{key} = {value}")
    config = _check(scratch, "\n".join(lines) + "\n")
    if config is not None:
        assert config.daemon.unhealthy_after_s > config.daemon.heartbeat_interval_s


@pytest.mark.slow
@FUZZ
@given(
    st.integers(1, 20_000), st.sampled_from(["[", "{a = "]), st.sampled_from(["redis", "appkey"])
)
def test_deep_nesting(scratch: Path, depth: int, opener: str, section: str) -> None:
    closer = "]" if opener == "[" else "}"
    _check(scratch, f"[{section}]\nurl = {opener * depth}1{closer * depth}\n")
