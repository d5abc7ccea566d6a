"""Property tests of the observation CSV parser on hostile input (hypothesis).

Whatever the bytes, ``read_observations_stream`` either returns runs that satisfy the
contract (whole n in [1, MAX_SIZE], finite positive runtimes, each cell an ASCII number)
or raises ObservationsError with one inert line; ``load_observations`` likewise. Memory is
bounded per test (fuzz_support.bounded_memory). Run with -s to see the cases tried.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin.errors import ObservationsError
from plugin.formats.observations_csv import (
    MAX_SIZE,
    RawObservations,
    load_observations,
    read_observations_stream,
)

from .fuzz_support import CASES_TRIED, assert_one_inert_line, bounded_memory

PARSER = "observation CSV"
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ASCII_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

#: Cells a person, a spreadsheet or an attacker might write.
NUMBER_LIKE = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "1_0",
            "\u0663",
            "\uff11",
            "\u0661\u0662",
            "1\u0665",
            "²",
            "0x10",
            "1e999",
            "-0",
            "",
            " ",
            "nan",
            "inf",
            "+.5",
            "5.",
            "1e",
            "--1",
            "٣.٥",
            "𝟗",
            "\x1b[2J",
        ]
    ),
    # Any text but what changes the CSV's structure (the row-level property needs cells).
    st.text(
        st.characters(blacklist_characters=',\n\r"\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029'),
        max_size=12,
    ),
)


@pytest.fixture(scope="module", autouse=True)
def _print_cases() -> Iterator[None]:
    yield
    print(f"\n[fuzz] {PARSER}: {CASES_TRIED[PARSER]:,} cases tried")


def _check(data: bytes) -> RawObservations | None:
    CASES_TRIED[PARSER] += 1
    with bounded_memory():
        try:
            raw = read_observations_stream(io.BytesIO(data), "OBS.csv", max_rows=1000)
        except ObservationsError as exc:
            assert_one_inert_line(str(exc))
            return None
        assert np.all(np.isfinite(raw.n))
        assert np.all(np.isfinite(raw.runtime))
        assert np.all((raw.n >= 1) & (raw.n <= MAX_SIZE) & (raw.n == np.floor(raw.n)))
        assert np.all(raw.runtime > 0)
        try:
            obs = load_observations(raw)
        except ObservationsError as exc:
            assert_one_inert_line(str(exc))
            return raw
        assert np.all(np.isfinite(obs.runtime))
        assert np.all(obs.runtime > 0)
        return raw


@pytest.mark.slow
@FUZZ
@given(st.binary(max_size=2000))
def test_arbitrary_bytes(data: bytes) -> None:
    _check(b"n,runtime\n" + data)
    _check(data)


@pytest.mark.slow
@FUZZ
@given(
    st.lists(st.tuples(NUMBER_LIKE, NUMBER_LIKE), min_size=1, max_size=30),
    st.sampled_from(["n,runtime", "runtime,n", "n , runtime ,note", "\ufeffn,runtime"]),
    st.sampled_from(["\n", "\r\n"]),
)
def test_rows_of_number_like_cells(rows: list[tuple[str, str]], header: str, eol: str) -> None:
    swap = header.startswith("runtime")
    lines = [header] + [f"{b},{a}" if swap else f"{a},{b}" for a, b in rows]
    raw = _check(eol.join(lines).encode("utf-8", "surrogatepass") + eol.encode())
    if raw is None:
        return
    # Accepted: every cell of every non-blank row was an ASCII decimal number.
    for a, b in rows:
        if (a + b).strip():
            assert ASCII_NUMBER.fullmatch(a.strip()), (a, b)
            assert ASCII_NUMBER.fullmatch(b.strip()), (a, b)


@pytest.mark.slow
@FUZZ
@given(st.lists(st.integers(1, 64), min_size=2, max_size=40), st.floats(1e-3, 1e6))
def test_valid_studies_read_back_exactly(sizes: list[int], t1: float) -> None:
    rows = [(n, t1 / n + 0.01 * t1) for n in sizes]
    text = "n,runtime\n" + "".join(f"{n},{t!r}\n" for n, t in rows)
    raw = _check(text.encode())
    assert raw is not None
    assert raw.n.tolist() == [float(n) for n, _ in rows]
    np.testing.assert_allclose(raw.runtime, [t for _, t in rows], rtol=1e-15)
