"""``adaptalloc fit`` and ``adaptalloc predict``: the speedup model of one observation file.

    adaptalloc fit OBS.csv [--method adept|lm] [--format text|json]
    adaptalloc predict OBS.csv --at N[,N...] [--method adept|lm] [--format text|json]

The pipeline is visible in the imports: read (formats/observations_csv, through common) ->
compute (predictor) -> render (render.py).
"""

from __future__ import annotations

import sys
import time

import click
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
from plugin.errors import printable

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
@observation_options
def predict(
    obs_csv: str, targets: tuple[int, ...], method: str, output_format: str, max_rows: int
) -> None:
    """Predict runtime, speedup and efficiency at the sizes given by --at.

    Sizes are reported in the order given, repeats included. With ADEPT each size gets
    its own model instance, weighted towards the observations nearest to it.
    """
    started = time.perf_counter()
    obs = read(obs_csv, max_rows)
    preds = predict_at(obs, targets, method)
    if output_format == "json":
        emit_json(predictions_document(preds))
    else:
        render_predictions(preds, stdout_console(), method, int(obs.n[-1]))
        sys.stdout.flush()
    log.info(
        "predict",
        path=printable(obs_csv),
        method=method,
        sizes=len(obs),
        runs=int(obs.runs.sum()),
        targets=len(targets),
        elapsed_ms=elapsed_ms(started),
    )
