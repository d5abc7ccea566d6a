"""``adaptalloc fit`` and ``adaptalloc predict``: the speedup model of one observation file.

    adaptalloc fit OBS.csv [--method adept|lm] [--format text|json]
    adaptalloc predict OBS.csv --at N[,N...] [--size S] [--method adept|lm] [--format text|json]

With ``--size S`` the file's ``size`` column says each run's problem size: the runs at S
give S's own curve, else S's curve is borrowed from the other sizes (plugin/learning/borrow.py,
predictor/sizes.py), and the JSON's ``source`` says which.

The pipeline is visible in the imports: read (formats/observations_csv, through common) ->
compute (predictor) -> render (render.py).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import click
import numpy as np
import structlog

import predictor
from plugin.cli.common import (
    MAX_TARGETS,
    elapsed_ms,
    emit_json,
    observation_options,
    observations_argument,
    predict_at,
    predictor_call,
    read,
    sizes_callback,
    source_name,
    stdout_console,
)
from plugin.cli.render import (
    finite,
    fit_document,
    predictions_document,
    render_fit,
    render_predictions,
)
from plugin.errors import InputError, TooManyRowsError, printable
from plugin.formats.observations_csv import (
    RawObservations,
    read_observations,
    read_observations_stream,
    require_sizes,
)
from predictor.downey import FloatArray

__all__ = ["fit", "predict"]

log = structlog.get_logger("adaptalloc")


@click.command()
@observations_argument
@observation_options
def fit(obs_csv: str, method: str, output_format: str, max_rows: int) -> None:
    """Fit the Downey speedup model to the runs in OBS.csv.

    Prints the average parallelism A, the variance σ, the largest useful size, the
    processor working set and how well the curve matches the observations, ADEPT's
    anomalies and reliability judgment, and (with ADEPT) every model's cross-validated error.
    """
    started = time.perf_counter()
    obs = read(obs_csv, max_rows)
    result = predictor_call(lambda: predictor.fit_observations(obs, method=method))
    choice = predictor_call(lambda: predictor.choose_model(obs)) if method == "adept" else None
    if output_format == "json":
        emit_json(fit_document(result, choice))
    else:
        render_fit(result, stdout_console(), source_name(obs_csv), choice)
        sys.stdout.flush()
    log.info(
        "fit",
        path=printable(obs_csv),
        method=method,
        sizes=len(obs),
        runs=int(obs.runs.sum()),
        dropped=len(obs.dropped),
        A=finite(result.A),
        sigma=finite(result.sigma),
        identified=result.identified,
        status=result.status,
        fit_error=finite(result.fit_error),
        elapsed_ms=elapsed_ms(started),
    )


def _size_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    text = value.strip()
    try:
        size = float(text)
    except ValueError:
        raise click.BadParameter(f"{printable(text)[:40]!r} is not a number") from None
    if not (math.isfinite(size) and size > 0):
        raise click.BadParameter(f"must be a finite number > 0, got {printable(text)[:40]}")
    return size


def _sized_runs(obs_csv: str, max_rows: int) -> tuple[RawObservations, FloatArray]:
    """The file's runs and their problem sizes (an error when a run has none)."""
    try:
        raw = (
            read_observations_stream(sys.stdin.buffer, source_name(obs_csv), max_rows)
            if obs_csv == "-"
            else read_observations(obs_csv, max_rows)
        )
    except TooManyRowsError as exc:
        raise InputError(f"{exc}; pass --max-rows to raise the limit") from exc
    return raw, require_sizes(raw)


def _predict_sized(
    raw: RawObservations, sizes: FloatArray, size: float, targets: tuple[int, ...], method: str
) -> tuple[predictor.Predictions, dict[str, Any]]:
    """Predictions for problem size `size`: its own runs' curve when it has runs at two or
    more node counts, else the curve borrowed from the other sizes; and the source."""
    # Imported here: plugin.learning loads the store (redis-py), which fit never needs.
    from plugin.learning.borrow import borrow_from_runs, own_runs  # noqa: PLC0415

    own = own_runs(sizes, raw.n, size)
    if own is not None:
        obs = predictor_call(lambda: predictor.prepare(raw.n[own], raw.runtime[own]))
        source = {"kind": "own", "size": size, "runs": int(own.sum())}
        return predict_at(obs, targets, method), source
    borrowed = predictor_call(lambda: borrow_from_runs(size, sizes, raw.n, raw.runtime))
    curve = borrowed.curve
    n = np.asarray(targets, dtype=np.int64)
    preds = predictor.Predictions(
        n=n,
        runtime=curve.runtime(n),
        speedup=curve.speedup(n),
        efficiency=curve.efficiency(n),
        A=np.full(n.shape, curve.A),
        sigma=np.full(n.shape, curve.sigma),
    )
    return preds, {**borrowed.to_dict(), "note": borrowed.note}


@click.command()
@observations_argument
@click.option(
    "--at",
    "targets",
    required=True,
    type=str,
    callback=sizes_callback,
    metavar="N[,N...]",
    help=f"Sizes to predict, comma-separated whole numbers ≥ 1 (at most {MAX_TARGETS:,}).",
)
@click.option(
    "--size",
    "problem_size",
    default=None,
    callback=_size_callback,
    metavar="S",
    help="Predict for problem size S (the file's 'size' column): its own runs' curve, or one "
    "borrowed from the other sizes when S has none.",
)
@observation_options
def predict(
    obs_csv: str,
    targets: tuple[int, ...],
    problem_size: float | None,
    method: str,
    output_format: str,
    max_rows: int,
) -> None:
    """Predict runtime, speedup and efficiency at the sizes given by --at.

    Sizes are reported in the order given, repeats included. With ADEPT each size gets
    its own model instance, weighted towards the observations nearest to it. With --size,
    for one problem size of a study of several (see --size).
    """
    started = time.perf_counter()
    source: dict[str, Any] | None = None
    if problem_size is None:
        obs = read(obs_csv, max_rows)
        preds = predict_at(obs, targets, method)
        largest, runs = int(obs.n[-1]), int(obs.runs.sum())
    else:
        raw, sizes = _sized_runs(obs_csv, max_rows)
        preds, source = _predict_sized(raw, sizes, problem_size, targets, method)
        largest, runs = int(raw.n.max()), len(raw)
    if output_format == "json":
        doc = predictions_document(preds)
        if source is not None:
            doc["source"] = source
            if source["kind"] == "borrowed":  # no calibrated interval for a borrowed curve
                for row in doc["predictions"]:
                    row["interval"] = {"level": None, "lower": None, "upper": None}
        emit_json(doc)
    else:
        console = stdout_console()
        if source is not None:
            console.print(
                source.get("note") or f"Problem size {problem_size:g}: its own runs' curve.",
                markup=False,
                highlight=False,
            )
        own = source is None or source["kind"] == "own"
        render_predictions(preds, console, method if own else "borrowed", largest, own)
        sys.stdout.flush()
    log.info(
        "predict",
        path=printable(obs_csv),
        method=method,
        runs=runs,
        targets=len(targets),
        source=None if source is None else source["kind"],
        elapsed_ms=elapsed_ms(started),
    )
