"""plugin.formats.observations_csv: the observation CSV contract, in-process.

The same bad inputs are run through the real command line in test_cli.py; here the exact
messages (line numbers, column names, quoting) are checked quickly.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from plugin.errors import ObservationsError, TooManyRowsError
from plugin.formats.observations_csv import (
    DEFAULT_MAX_ROWS,
    MAX_LINE_BYTES,
    load_observations,
    read_observations,
    read_observations_stream,
)

from .conftest import DATA_DIR, LU_CSV


def read_bytes(data: bytes, max_rows: int = DEFAULT_MAX_ROWS) -> tuple[list[float], list[float]]:
    raw = read_observations_stream(io.BytesIO(data), "OBS.csv", max_rows)
    return raw.n.tolist(), raw.runtime.tolist()


def error_for(data: bytes, max_rows: int = DEFAULT_MAX_ROWS) -> str:
    with pytest.raises(ObservationsError) as info:
        read_bytes(data, max_rows)
    message = str(info.value)
    assert "\n" not in message
    assert "\x1b" not in message
    return message


def test_reads_the_lu_file() -> None:
    raw = read_observations(LU_CSV)
    assert_array_equal(raw.n, [2, 4, 8, 16, 32, 64])
    assert raw.runtime[0] == pytest.approx(0.5)
    assert len(raw) == 6
    assert raw.source == str(LU_CSV)


@pytest.mark.parametrize("path", sorted(DATA_DIR.glob("*.csv")), ids=lambda p: p.name)
def test_every_shared_data_file_reads_and_prepares(path: Path) -> None:
    obs = load_observations(read_observations(path))
    assert len(obs) >= 2
    assert np.all(obs.runtime > 0)


def test_column_order_extra_columns_bom_crlf_blank_lines_and_spaces() -> None:
    data = (
        b'\xef\xbb\xbf runtime , note, n \r\n0.5,first,2\r\n\r\n  \r\n0.3,"a, b",4\r\n0.31,,4\r\n'
    )
    n, t = read_bytes(data)
    assert n == [2, 4, 4]
    assert t == [0.5, 0.3, 0.31]


def test_whole_numbers_written_as_floats_and_exponents_are_sizes() -> None:
    n, t = read_bytes(b"n,runtime\n2.0,1e2\n4,5E1\n")
    assert n == [2, 4]
    assert t == [100.0, 50.0]


def test_repeated_sizes_are_kept_in_file_order() -> None:
    n, _ = read_bytes(b"n,runtime\n4,1\n2,2\n4,1.1\n")
    assert n == [4, 2, 4]


def test_stream_stops_right_after_the_row_limit() -> None:
    class CountingStream(io.BytesIO):
        lines_read = 0

        def readline(self, size: int | None = -1) -> bytes:
            self.lines_read += 1
            return super().readline(size)

    stream = CountingStream(b"n,runtime\n" + b"2,1\n4,0.5\n" * 1000)
    with pytest.raises(TooManyRowsError) as info:
        read_observations_stream(stream, "OBS.csv", max_rows=10)
    assert str(info.value) == "OBS.csv has more than 10 rows"
    assert info.value.limit == 10
    assert stream.lines_read <= 13


def test_exactly_max_rows_is_accepted() -> None:
    n, _ = read_bytes(b"n,runtime\n2,1\n4,0.5\n", max_rows=2)
    assert n == [2, 4]


def test_max_rows_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_rows"):
        read_bytes(b"n,runtime\n2,1\n4,0.5\n", max_rows=0)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "OBS.csv is empty; expected a CSV file with a header n,runtime"),
        (b"\n  \n\n", "OBS.csv is empty"),
        (b"n,runtime\n", "OBS.csv has a header but no rows"),
        (b"2,0.5\n4,0.3\n", "OBS.csv line 1: no header; the first line must name the columns"),
        (
            b"N,Runtime\n2,0.5\n",
            "OBS.csv line 1: missing columns 'n' and 'runtime'; found 'N', 'Runtime', "
            "but column names are case-sensitive",
        ),
        (
            b"n,time\n2,0.5\n",
            "OBS.csv line 1: missing column 'runtime'; the header has 'n', 'time'",
        ),
        (b"n,runtime,n\n2,1,2\n", "OBS.csv line 1: column 'n' appears more than once"),
        (b"n,runtime\n2,0.5\n4\n", "OBS.csv line 3: missing value for runtime"),
        (b"n,runtime\n2,0.5\n4,\n", "OBS.csv line 3: missing value for runtime"),
        (b"n,runtime\n2,0.5\n,0.3\n", "OBS.csv line 3: missing value for n"),
        (b"n,runtime\n2,0.5\n4,fast\n", "OBS.csv line 3: runtime is not a number: 'fast'"),
        (b"n,runtime\nfour,0.5\n", "OBS.csv line 2: n is not a number: 'four'"),
        (b"n,runtime\n2.5,0.5\n", "OBS.csv line 2: n must be a whole number of nodes, got 2.5"),
        (b"n,runtime\n0,0.5\n", "OBS.csv line 2: n must be at least 1, got 0"),
        (b"n,runtime\n-4,0.5\n", "OBS.csv line 2: n must be at least 1, got -4"),
        (b"n,runtime\n1e12,0.5\n", "OBS.csv line 2: n must be at most 1,000,000,000, got 1e12"),
        (b"n,runtime\n2,0.5\n4,0.3\n8,-3\n", "OBS.csv line 4: runtime must be positive, got -3"),
        (b"n,runtime\n2,0\n", "OBS.csv line 2: runtime must be positive, got 0"),
        (
            b"n,runtime\n1,1e307\n2,6e306\n",
            "OBS.csv line 2: runtime must be at most 1e+12 seconds, got 1e307",
        ),
        (b"n,runtime\n2,nan\n", "OBS.csv line 2: runtime must be a finite number, got 'nan'"),
        (b"n,runtime\n2,NaN\n", "OBS.csv line 2: runtime must be a finite number, got 'NaN'"),
        (b"n,runtime\n2,inf\n", "OBS.csv line 2: runtime must be a finite number, got 'inf'"),
        (b"n,runtime\n2,-inf\n", "OBS.csv line 2: runtime must be a finite number, got '-inf'"),
        (b"n,runtime\n2,1e999\n", "OBS.csv line 2: runtime must be a finite number, got '1e999'"),
        (b"n,runtime\ninf,1\n", "OBS.csv line 2: n must be a finite number, got 'inf'"),
        (b"n,runtime\n2,0.5\n\xff\xfe\n", "OBS.csv line 3: not UTF-8 text (byte 0xff)"),
        (b'n,runtime\n2,"0.5\n4,0.3\n', "OBS.csv line 3: not valid CSV: unexpected end of data"),
        (b"n,runtime\r2,0.5\r4,0.3\r", "OBS.csv line 1: not valid CSV: a carriage return"),
    ],
)
def test_bad_input_is_one_clear_line(data: bytes, expected: str) -> None:
    assert error_for(data).startswith(expected)


@pytest.mark.parametrize(
    ("cell", "column"),
    [
        ("1_0", "n"),  # float("1_0") == 10.0
        ("\u0663", "n"),  # Arabic-Indic three: float() reads 3.0
        ("\uff11", "n"),  # full-width one
        ("\u0661\u0662", "n"),
        ("0_5", "runtime"),
        ("\uff10.5", "runtime"),
        ("1\u0665", "runtime"),
    ],
)
def test_only_ascii_decimal_numbers_are_accepted(cell: str, column: str) -> None:
    # Failed before: float() took these, so n=1_0 became 10 nodes without a word.
    row = f"{cell},0.5" if column == "n" else f"2,{cell}"
    message = error_for(f"n,runtime\n{row}\n".encode())
    assert message.startswith(f"OBS.csv line 2: {column} is not a number: ")
    assert message.endswith("(write plain ASCII digits)")


@pytest.mark.parametrize("cell", ["12", "+3", "0.5", ".5", "5.", "1e3", "2E-1", " 4 "])
def test_ascii_decimal_forms_are_still_read(cell: str) -> None:
    _, runtimes = read_bytes(f"n,runtime\n1,10\n2,{cell}\n".encode())
    assert runtimes == [10.0, float(cell)]


def test_hostile_values_are_escaped_and_truncated() -> None:
    message = error_for(b"n,runtime\n2,\x1b[31mred\x1b[0m\n")
    assert message == "OBS.csv line 2: runtime is not a number: '\\x1b[31mred\\x1b[0m'"
    message = error_for(b"n,runtime\n2," + b"A" * 5000 + b"\n")
    assert (
        message
        == "OBS.csv line 2: runtime is not a number: '" + "A" * 40 + "...' (5,000 characters)"
    )
    message = error_for(b"\x1b]0;pwned\x07,runtime\n")
    assert "\\x1b]0;pwned\\x07" in message


def test_a_long_number_is_truncated_too() -> None:
    message = error_for(b"n,runtime\n2.5" + b"0" * 5000 + b",1\n")
    assert message == (
        "OBS.csv line 2: n must be a whole number of nodes, got 2.5"
        + "0" * 37
        + "... (5,003 characters)"
    )
    assert len(message) < 200


def test_binary_garbage_is_one_clear_line() -> None:
    message = error_for(bytes(range(256)) * 4)
    assert message.startswith("OBS.csv line ")
    assert len(message) < 400


def test_a_file_without_newlines_is_not_read_whole() -> None:
    message = error_for(b"n,runtime" + b"x" * (MAX_LINE_BYTES + 10))
    assert message.startswith("OBS.csv line 1: longer than 1,048,576 bytes")


def test_a_huge_field_is_refused() -> None:
    message = error_for(b"n,runtime,note\n2,1," + b"a" * 200_000 + b"\n")
    assert message.startswith("OBS.csv line 2: not valid CSV: field larger than field limit")


def test_missing_file_directory_and_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ObservationsError, match=r"nope\.csv: cannot open: No such file"):
        read_observations(tmp_path / "nope.csv")
    with pytest.raises(ObservationsError, match=r"cannot open: Is a directory"):
        read_observations(tmp_path)
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.csv"
        locked.write_text("n,runtime\n2,1\n4,0.5\n")
        locked.chmod(0)
        with pytest.raises(ObservationsError, match=r"cannot open: Permission denied"):
            read_observations(locked)


def test_a_path_with_control_characters_is_escaped(tmp_path: Path) -> None:
    with pytest.raises(ObservationsError) as info:
        read_observations(tmp_path / "evil\x1b[2J.csv")
    assert "\x1b" not in str(info.value)
    assert "evil\\x1b[2J.csv" in str(info.value)


def test_load_observations_reports_the_predictors_refusal_with_the_file_name() -> None:
    raw = read_observations_stream(io.BytesIO(b"n,runtime\n4,1\n4,1.1\n"), "OBS.csv")
    with pytest.raises(ObservationsError) as info:
        load_observations(raw)
    assert str(info.value) == (
        "OBS.csv: need runs at two or more distinct sizes to fit a speedup curve"
    )


def test_load_observations_averages_repeats() -> None:
    raw = read_observations_stream(io.BytesIO(b"n,runtime\n4,1\n2,2\n4,1.2\n"), "OBS.csv")
    obs = load_observations(raw)
    assert_array_equal(obs.n, [2, 4])
    assert obs.runtime[1] == pytest.approx(1.1)
    assert_array_equal(obs.runs, [1, 2])


# --- the optional columns -----------------------------------------------------------------------


def test_optional_columns_are_read_with_blanks_as_unknown() -> None:
    data = (
        b"node_type,n,runtime,size,tasks,tasks_per_node\n"
        b"batch,4,10,1e6,64,16\n"
        b",8,6,,,\n"
        b"gpu,2,18,2.5e5,8,4\n"
    )
    raw = read_observations_stream(io.BytesIO(data), "OBS.csv")
    assert raw.size is not None
    assert raw.tasks is not None
    assert raw.tasks_per_node is not None
    assert_array_equal(raw.size, [1e6, np.nan, 2.5e5])
    assert_array_equal(raw.tasks, [64, np.nan, 8])
    assert_array_equal(raw.tasks_per_node, [16, np.nan, 4])
    assert raw.node_type == ("batch", None, "gpu")


def test_files_without_the_optional_columns_have_none() -> None:
    raw = read_observations_stream(io.BytesIO(b"n,runtime\n1,10\n2,6\n"), "OBS.csv")
    assert (raw.size, raw.tasks, raw.tasks_per_node, raw.node_type) == (None, None, None, None)


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (b"4,10,0,,,", ("line 3", "size must be positive")),
        (b"4,10,-2,,,", ("line 3", "size must be positive")),
        (b"4,10,inf,,,", ("line 3", "size must be a finite number")),
        (b"4,10,big,,,", ("line 3", "size is not a number")),
        (b"4,10,,2.5,,", ("line 3", "tasks must be a whole number")),
        (b"4,10,,0,,", ("line 3", "tasks must be a whole number")),
        (b"4,10,,,x,", ("line 3", "tasks_per_node is not a number")),
        (b"4,10,,,,GPU", ("line 3", "node_type", "not a partition name")),
        (b"4,10,,,,a b", ("line 3", "node_type", "not a partition name")),
        (b"4,10,,,,a\x1b[2J", ("line 3", "node_type")),
    ],
)
def test_bad_optional_cells_name_the_line_and_column(row: bytes, words: tuple[str, ...]) -> None:
    message = error_for(b"n,runtime,size,tasks,tasks_per_node,node_type\n2,18,1,,,\n" + row + b"\n")
    for word in words:
        assert word in message


def test_a_repeated_optional_column_is_refused() -> None:
    assert "column 'size' appears more than once" in error_for(b"n,runtime,size,size\n1,2,3,4\n")
