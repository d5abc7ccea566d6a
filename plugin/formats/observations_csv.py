"""Read observation CSVs: header ``n,runtime`` (seconds), one row per run.

The contract (DESIGN.md, "Contracts other tools rely on"): repeated ``n`` are repetitions,
``n = 1`` is optional, extra columns are ignored and the columns may come in any order.
Four optional columns say more about a run when present (a blank cell: not known):
``size`` (the problem size, a finite number > 0), ``tasks`` and ``tasks_per_node`` (whole
numbers ≥ 1) and ``node_type`` (a partition name, ``[a-z0-9._-]{1,64}``).
Header names are matched exactly after stripping whitespace; a UTF-8 byte-order mark is
accepted.

The file is streamed row by row with the :mod:`csv` module, never loaded whole: values go
into compact ``array('d')`` buffers, the row limit is checked as rows arrive (a file with
ten million rows fails after limit + 1 rows), and physical lines are read with a length
cap, so that a file without newlines cannot be pulled into memory either. Lines are
decoded one at a time, so that a byte that is not UTF-8 is reported on its own line.

Each row is checked here, so that a bad value is reported with its line and column; the
checks that need the whole data set (at least two distinct sizes, outliers, averaging)
are the predictor's (:func:`predictor.prepare`), whose ``ValueError`` is re-raised by
:func:`load_observations` as an :class:`~plugin.errors.ObservationsError` naming the file.
"""

from __future__ import annotations

import codecs
import csv
import math
import re
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

import predictor
from plugin.errors import ObservationsError, TooManyRowsError, printable, quote_value

__all__ = [
    "COLUMNS",
    "DEFAULT_MAX_ROWS",
    "MAX_LINE_BYTES",
    "MAX_RUNTIME_S",
    "MAX_SIZE",
    "OPTIONAL_COLUMNS",
    "RawObservations",
    "load_observations",
    "read_observations",
    "read_observations_stream",
    "require_sizes",
]

#: The columns the contract requires, in the order they are reported when missing.
COLUMNS = ("n", "runtime")
#: Columns read when present: problem size, tasks, tasks per node, node type (partition).
OPTIONAL_COLUMNS = ("size", "tasks", "tasks_per_node", "node_type")
_NODE_TYPE = re.compile(r"[a-z0-9._-]{1,64}")
#: Default row limit; the CLI's ``--max-rows`` changes it.
DEFAULT_MAX_ROWS = 1_000_000
#: Longest runtime accepted, in seconds (31,700 years, as SWF's largest field): a runtime
#: near 1e308 overflowed the fit into a silent nonsense curve.
MAX_RUNTIME_S = 1e12
#: Longest physical line accepted, in bytes; no observation row comes close.
MAX_LINE_BYTES = 1 << 20
#: Largest size accepted: above any cluster, far below where floats lose whole numbers.
MAX_SIZE = 1_000_000_000

#: A number as a person writes it in ASCII: ``12``, ``-0.5``, ``.5``, ``3e4``, and the
#: words inf/infinity/nan (refused later with "must be finite"). float() alone also takes
#: ``1_0``, ``١٢`` (Arabic-Indic) and ``１２`` (full-width), which no CSV tool writes and a
#: reader of the file would not see as the number float() makes of them.
_ASCII_NUMBER = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
    re.IGNORECASE,
)
_EXPECTED = "expected a CSV file with a header n,runtime and one row per run"


@dataclass(frozen=True)
class RawObservations:
    """The runs of one observation file, in file order, before any averaging.

    Attributes
    ----------
    n : (R,) float array of sizes, whole numbers in [1, MAX_SIZE].
    runtime : (R,) float array of runtimes in seconds, finite and > 0.
    source : the file's name as shown in messages (escaped).
    size, tasks, tasks_per_node : (R,) float arrays when the file has the column, NaN
        where a cell is blank; None when it has not.
    node_type : one partition name (or None, blank) per row when the file has the column.
    """

    n: npt.NDArray[np.float64]
    runtime: npt.NDArray[np.float64]
    source: str
    size: npt.NDArray[np.float64] | None = None
    tasks: npt.NDArray[np.float64] | None = None
    tasks_per_node: npt.NDArray[np.float64] | None = None
    node_type: tuple[str | None, ...] | None = None

    def __len__(self) -> int:
        return int(self.n.size)


def _decoded_lines(stream: BinaryIO, source: str) -> Iterator[str]:
    """Physical lines of `stream`, each decoded on its own as strict UTF-8.

    A leading byte-order mark is dropped. A line longer than MAX_LINE_BYTES, a byte that
    is not UTF-8 or a read error raises ObservationsError naming the line.
    """
    lineno = 0
    while True:
        lineno += 1
        try:
            raw = stream.readline(MAX_LINE_BYTES + 1)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise ObservationsError(f"{source} line {lineno}: cannot read: {reason}") from exc
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES:
            raise ObservationsError(
                f"{source} line {lineno}: longer than {MAX_LINE_BYTES:,} bytes; {_EXPECTED}"
            )
        if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = raw[exc.start : exc.start + 1].hex()
            raise ObservationsError(
                f"{source} line {lineno}: not UTF-8 text (byte 0x{bad}); {_EXPECTED}"
            ) from None


def _csv_records(lines: Iterable[str], source: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every CSV record that is not blank; csv errors name the line."""
    reader = csv.reader(lines, strict=True)
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ObservationsError(
                f"{source} line {reader.line_num}: not valid CSV: {_csv_problem(exc)}"
            ) from None
        if "".join(fields).strip():  # skip blank lines (and rows of empty cells)
            yield reader.line_num, fields


def _csv_problem(exc: csv.Error) -> str:
    """The csv module's complaint, reworded where it would puzzle a non-programmer."""
    text = str(exc)
    if text.startswith("new-line character seen in unquoted field"):
        return "a carriage return inside a row; save the file with Unix (\\n) or DOS line endings"
    return printable(text)


def _is_number(text: str) -> bool:
    """Whether `text` is an ASCII number (used to recognise a missing header)."""
    return _ASCII_NUMBER.fullmatch(text.strip()) is not None


def _optional_positions(header: list[str], where: str) -> dict[str, int]:
    """Positions of the optional columns the header has."""
    names = [name.strip() for name in header]
    found = {}
    for name in OPTIONAL_COLUMNS:
        if names.count(name) > 1:
            raise ObservationsError(f"{where}: column {name!r} appears more than once")
        if name in names:
            found[name] = names.index(name)
    return found


def _optional_cell(fields: list[str], index: int, column: str) -> float | str | None:
    """One optional cell: None when blank, else its checked value (see OPTIONAL_COLUMNS)."""
    text = fields[index].strip() if index < len(fields) else ""
    if not text:
        return None
    if column == "node_type":
        if not _NODE_TYPE.fullmatch(text):
            raise _CellError(
                f"node_type {quote_value(text)} is not a partition name "
                "(1-64 of a-z, 0-9, '.', '_', '-')"
            )
        return text
    number = _parse_number(fields, index, column)
    if column == "size":
        if number <= 0:
            raise _CellError(f"size must be positive, got {quote_value(text, quotes=False)}")
        return number
    if number != math.floor(number) or not 1 <= number <= MAX_SIZE:
        raise _CellError(
            f"{column} must be a whole number from 1 to {MAX_SIZE:,}, "
            f"got {quote_value(text, quotes=False)}"
        )
    return number


def _column_positions(header: list[str], where: str) -> tuple[int, int]:
    """Positions of the n and runtime columns in `header`, or a message saying what is wrong."""
    names = [name.strip() for name in header]
    if all(_is_number(name) for name in names if name):
        raise ObservationsError(
            f"{where}: no header; the first line must name the columns n,runtime"
        )
    for name in COLUMNS:
        if names.count(name) > 1:
            raise ObservationsError(f"{where}: column {name!r} appears more than once")
    missing = [name for name in COLUMNS if name not in names]
    if missing:
        raise ObservationsError(f"{where}: {_missing_columns(missing, names)}")
    return names.index("n"), names.index("runtime")


def _missing_columns(missing: list[str], names: list[str]) -> str:
    """Explain which required columns are absent, pointing out names that differ in case."""
    wanted = " and ".join(repr(name) for name in missing)
    plural = "s" if len(missing) > 1 else ""
    message = f"missing column{plural} {wanted}"
    near = [name for name in names if name.lower() in missing]
    if near:
        found = ", ".join(quote_value(name) for name in near)
        return f"{message}; found {found}, but column names are case-sensitive"
    shown = ", ".join(quote_value(name) for name in names[:8])
    more = f" and {len(names) - 8:,} more" if len(names) > 8 else ""
    return f"{message}; the header has {shown}{more}"


def _is_float(text: str) -> bool:
    """Whether float() takes `text` (it takes more than _ASCII_NUMBER does)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


class _CellError(ValueError):
    """A data row's problem, without the file and line (added by the caller)."""


def _parse_number(fields: list[str], index: int, column: str) -> float:
    """The finite number in one cell (this runs once per cell: keep it lean)."""
    text = fields[index].strip() if index < len(fields) else ""
    if not text:
        raise _CellError(f"missing value for {column}")
    if _ASCII_NUMBER.fullmatch(text) is None:
        hint = " (write plain ASCII digits)" if _is_float(text) else ""
        raise _CellError(f"{column} is not a number: {quote_value(text)}{hint}")
    number = float(text)
    if not math.isfinite(number):
        raise _CellError(f"{column} must be a finite number, got {quote_value(text)}")
    return number


def _parse_row(fields: list[str], cols: tuple[int, int]) -> tuple[float, float]:
    """Check one data row and return its (n, runtime)."""
    n = _parse_number(fields, cols[0], "n")
    if n != math.floor(n) or not 1 <= n <= MAX_SIZE:
        shown = quote_value(fields[cols[0]].strip(), quotes=False)
        if n != math.floor(n):
            problem = "must be a whole number of nodes"
        elif n < 1:
            problem = "must be at least 1"
        else:
            problem = f"must be at most {MAX_SIZE:,}"
        raise _CellError(f"n {problem}, got {shown}")
    runtime = _parse_number(fields, cols[1], "runtime")
    if runtime <= 0 or runtime > MAX_RUNTIME_S:
        shown = quote_value(fields[cols[1]].strip(), quotes=False)
        problem = "be positive" if runtime <= 0 else f"be at most {MAX_RUNTIME_S:g} seconds"
        raise _CellError(f"runtime must {problem}, got {shown}")
    return n, runtime


def read_observations_stream(
    stream: BinaryIO, source: str, max_rows: int = DEFAULT_MAX_ROWS
) -> RawObservations:
    """Read runs from an open binary stream (see the module docstring for the format).

    Parameters
    ----------
    stream : BinaryIO
        Opened for reading in binary mode; it is decoded here, line by line.
    source : str
        Name of the stream in messages, e.g. the path as the user typed it.
    max_rows : int
        Most data rows accepted; the row after them raises TooManyRowsError at once.

    Raises
    ------
    ObservationsError
        One line naming `source`, and the line and column where there is one.
    ValueError
        When max_rows is below 1.
    """
    if max_rows < 1:
        raise ValueError(f"max_rows must be at least 1, got {max_rows}")
    name = printable(source)
    records = _csv_records(_decoded_lines(stream, name), name)
    first = next(records, None)
    if first is None:
        raise ObservationsError(f"{name} is empty; {_EXPECTED}")
    cols = _column_positions(first[1], f"{name} line {first[0]}")
    extra = _optional_positions(first[1], f"{name} line {first[0]}")
    n_values, t_values = array("d"), array("d")
    numbers = {column: array("d") for column in extra if column != "node_type"}
    node_types: list[str | None] = []
    for lineno, fields in records:
        if len(n_values) >= max_rows:
            raise TooManyRowsError(f"{name} has more than {max_rows:,} rows", max_rows)
        try:
            n, runtime = _parse_row(fields, cols)
            cells = {column: _optional_cell(fields, at, column) for column, at in extra.items()}
        except _CellError as exc:
            raise ObservationsError(f"{name} line {lineno}: {exc}") from None
        n_values.append(n)
        t_values.append(runtime)
        for column, value in cells.items():
            if column == "node_type":
                node_types.append(None if value is None else str(value))
            else:
                numbers[column].append(math.nan if value is None else float(value))
    if not n_values:
        raise ObservationsError(f"{name} has a header but no rows; {_EXPECTED}")

    def numbers_of(key: str) -> npt.NDArray[np.float64] | None:
        return np.frombuffer(numbers[key], dtype=np.float64) if key in numbers else None

    return RawObservations(
        n=np.frombuffer(n_values, dtype=np.float64),
        runtime=np.frombuffer(t_values, dtype=np.float64),
        source=name,
        size=numbers_of("size"),
        tasks=numbers_of("tasks"),
        tasks_per_node=numbers_of("tasks_per_node"),
        node_type=tuple(node_types) if "node_type" in extra else None,
    )


def read_observations(path: str | Path, max_rows: int = DEFAULT_MAX_ROWS) -> RawObservations:
    """Read runs from the observation CSV at `path` (see `read_observations_stream`)."""
    source = str(path)
    try:
        stream = open(path, "rb")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ObservationsError(f"{printable(source)}: cannot open: {reason}") from exc
    with stream:
        return read_observations_stream(stream, source, max_rows)


def require_sizes(raw: RawObservations) -> npt.NDArray[np.float64]:
    """The runs' problem sizes, for commands that need one on every run (``--size``).

    Raises
    ------
    ObservationsError
        When the file has no ``size`` column or a run has none.
    """
    if raw.size is None:
        raise ObservationsError(
            f"{raw.source}: --size needs a column 'size' (each run's problem size)"
        )
    blank = np.flatnonzero(np.isnan(raw.size))
    if blank.size:
        raise ObservationsError(
            f"{raw.source}: --size needs a size on every run; data row {int(blank[0]) + 1} has none"
        )
    return raw.size


def load_observations(raw: RawObservations) -> predictor.Observations:
    """Prepare runs for fitting with :func:`predictor.prepare` (averaging, outliers).

    Raises
    ------
    ObservationsError
        When the predictor refuses the data set as a whole (e.g. one distinct size).
    """
    try:
        return predictor.prepare(raw.n, raw.runtime)
    except ValueError as exc:
        raise ObservationsError(f"{raw.source}: {printable(str(exc))}") from exc
