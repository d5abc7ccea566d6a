"""Every model and the per-application selection on the real curves, one run.

Same curves and protocols as test_predictor_accuracy.py. Rows: ADEPT alone, each alternative
model alone, and the selection (ADEPT unless cross-validation on the training sizes finds a
clearly better model). A second table lists where the selection left ADEPT and what it gained
or lost there.
"""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console
from rich.table import Table

from .peers import MODEL_PEERS, adept, chosen_model, selected
from .test_predictor_accuracy import PROTOCOLS, short, split_errors

METHODS = {"ADEPT": adept, **MODEL_PEERS, "selected": selected}


def run() -> tuple[dict[str, dict[str, list[float]]], list[tuple[str, str, str, float, float]]]:
    """Per method and protocol the per-curve medians; and the splits where the selection
    chose another model (curve, protocol, model, ADEPT %, selected %)."""
    pooled: dict[tuple[str, str], dict[str, list[float]]] = {}
    departures: list[tuple[str, str, str, float, float]] = []
    for curve, protocol, n, t, errors in split_errors(METHODS):
        row = pooled.setdefault((curve, protocol), {m: [] for m in METHODS})
        for name, values in errors.items():
            row[name] += values
        model = chosen_model(n, t)
        if model != "adept":
            adept_pct = 100 * float(np.median(errors["ADEPT"]))
            departures.append(
                (
                    curve,
                    short(protocol),
                    model,
                    adept_pct,
                    100 * float(np.median(errors["selected"])),
                )
            )
    medians: dict[str, dict[str, list[float]]] = {m: {p: [] for p in PROTOCOLS} for m in METHODS}
    for (_, protocol), row in pooled.items():
        for name, values in row.items():
            medians[name][protocol].append(100 * float(np.median(values)))
    return medians, departures


@pytest.mark.benchmark
@pytest.mark.slow
def test_models_and_selection_on_real_curves(capsys: pytest.CaptureFixture[str]) -> None:
    medians, departures = run()
    summary = Table(title="Median over curves of the median |runtime error| % (lower is better)")
    summary.add_column("method")
    for protocol in PROTOCOLS:
        summary.add_column(short(protocol), justify="right")
    for name in METHODS:
        summary.add_row(name, *(f"{np.median(medians[name][p]):.1f}" for p in PROTOCOLS))
    where = Table(title="Where the selection left ADEPT (per split)")
    for column in ("curve", "protocol", "chosen", "ADEPT %", "selected %"):
        where.add_column(column, justify="left" if column in ("curve", "chosen") else "right")
    for curve, protocol, model, a, s in departures:
        where.add_row(curve, protocol, model, f"{a:.1f}", f"{s:.1f}")
    with capsys.disabled():
        Console(width=120).print(summary)
        Console(width=120).print(where)

    # The selection keeps ADEPT's overall accuracy. Where it departs it is not always better:
    # since ADEPT lets Sevcik's model speak for runtimes that rise after a minimum
    # (predictor/shape.py), the one departure left on these curves (bfs1d_livejournal,
    # leave-one-out, to Sevcik) is 8.5% against ADEPT's 5.7%; cross-validation on few sizes
    # is noisy (see SelectionSettings). The table prints every departure.
    for protocol in PROTOCOLS:
        assert (
            np.median(medians["selected"][protocol]) <= np.median(medians["ADEPT"][protocol]) + 0.5
        )
    assert departures, "the selection never chose another model on these curves"
