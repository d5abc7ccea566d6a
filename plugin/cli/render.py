"""Render fits and predictions: JSON documents for tools, tables and sentences for people.

The JSON documents follow DESIGN.md, "Contracts other tools rely on". Their numbers are
finite or null: the predictor guarantees finite values for fits with status "ok", and
anything non-finite that slips through becomes null, since NaN and Infinity are not JSON.

The text output is meant for an administrator deciding how many nodes an application
should get: a short table of the parameters, the same facts as plain sentences, and a
table comparing the fitted curve with the observations.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

import predictor
from plugin.errors import printable
from plugin.report.numbers import format_number, format_percent, format_runtime
from predictor.models import Choice

__all__ = [
    "BreakableName",
    "diagnostics",
    "finite",
    "fit_document",
    "fit_sentences",
    "predictions_document",
    "render_fit",
    "render_predictions",
    "to_json",
]

METHOD_NAMES = {"adept": "ADEPT", "lm": "Levenberg-Marquardt"}
_DROPPED_SHOWN = 5


class BreakableName:
    """A name (``adaptive_fixed_limits``) for a table header: on one line where the column
    is wide enough, else broken after its underscores (and at spaces), never cut to
    "adaptiv…". Its minimum width, what rich shrinks a column to, is its longest piece."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pieces = name.replace("_", "_ ").split()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(max(map(len, self.pieces), default=0), len(self.name))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if len(self.name) <= options.max_width:
            yield Text(self.name)  # Text: a "[" in the name is not markup
            return
        lines: list[str] = []
        for piece in self.pieces:
            glue = "" if lines and lines[-1].endswith("_") else " "
            if lines and len(lines[-1]) + len(glue) + len(piece) <= options.max_width:
                lines[-1] += glue + piece
            else:
                lines.append(piece)
        yield Text("\n".join(lines))


# --- JSON -----------------------------------------------------------------------------


def finite(value: float | np.floating[Any]) -> float | None:
    """`value` as a float when it is finite, else None (JSON has no NaN or Infinity)."""
    number = float(value)
    return number if math.isfinite(number) else None


def _sizes(fit: predictor.Fit) -> tuple[int | None, int | None]:
    """(max_useful_n, pws_n); None for both when A or σ is not finite (nothing to derive).

    max_useful_n alone is None when the fit is not identified (no knee in the data).
    """
    if not (math.isfinite(fit.A) and math.isfinite(fit.sigma)):
        return None, None
    return fit.max_useful_n, int(fit.pws_n)


def diagnostics(fit: predictor.Fit) -> dict[str, list[dict[str, Any]]]:
    """The fit document's "anomalies", "patterns" and "reliability" lists (ADEPT VIII-IX).

    anomalies: {"n", "runtime", "kind": point|decline|ambiguous_final, "deviation", "weight"};
    patterns: {"kind": stepwise|optimized_sizes|accelerating|rising, "phases", "feasible"};
    reliability:
    {"problem", "action", "suggest_n", ...}. Non-finite numbers become null.
    """
    return {
        key: [{k: finite(v) if isinstance(v, float) else v for k, v in row.items()} for row in rows]
        for key, rows in fit.diagnostics.to_dict().items()
    }


def fit_document(fit: predictor.Fit, choice: Choice | None = None) -> dict[str, Any]:
    """The ``adaptalloc fit --format json`` document (contract keys first, then extras).

    With a model choice: "selected_model" and "models" ([{"model", "cv_error", "cases"}],
    ADEPT first), and "selected_fit" (the chosen model's parameters) when it is not ADEPT.
    """
    obs = fit.observations
    doc: dict[str, Any] = {
        "model": fit.model,
        "method": fit.method,
        "A": finite(fit.A),
        "sigma": finite(fit.sigma),
        "mode": fit.mode,
        "t1": finite(fit.t1),
        "t1_known": bool(fit.t1_known),
        "fit_error": finite(fit.fit_error),
    }
    doc["max_useful_n"], doc["pws_n"] = _sizes(fit)
    doc.update(diagnostics(fit))
    doc.update(
        {
            "status": fit.status,
            "message": fit.message,
            "identified": bool(fit.identified),
            "n_observations": len(obs),
            "runs": int(obs.runs.sum()),
            "dropped": [{"n": int(n), "runtime": finite(t)} for n, t in obs.dropped],
            "delta": None if fit.envelope is None else finite(fit.envelope.delta),
        }
    )
    if choice is not None:
        doc["selected_model"] = choice.model
        doc["models"] = [
            {
                "model": s.model,
                "cv_error": None if s.score is None else finite(s.score),
                "cases": s.cases,
            }
            for s in choice.scores
        ]
        if choice.fit is not None:
            doc["selected_fit"] = {
                "model": choice.fit.model,
                "params": {k: finite(v) for k, v in choice.fit.params.items()},
                "max_useful_n": choice.fit.max_useful_n,
                "pws_n": choice.fit.pws_n,
            }
    return doc


def predictions_document(preds: predictor.Predictions) -> dict[str, Any]:
    """The ``adaptalloc predict --format json`` document, targets in the order given.

    Each prediction carries `interval`: the runtime's prediction interval at `level`
    (predictor/intervals.py; its coverage is measured in tests/benchmarks/
    test_synthetic_accuracy.py).
    """
    rows = zip(preds.n, preds.runtime, preds.speedup, preds.efficiency, strict=True)
    lower = preds.lower if preds.lower is not None else preds.runtime
    upper = preds.upper if preds.upper is not None else preds.runtime
    return {
        "predictions": [
            {
                "n": int(n),
                "runtime": finite(t),
                "speedup": finite(s),
                "efficiency": finite(e),
                "interval": {"level": preds.level, "lower": finite(lo), "upper": finite(hi)},
            }
            for (n, t, s, e), lo, hi in zip(rows, lower, upper, strict=True)
        ]
    }


def to_json(doc: dict[str, Any]) -> str:
    """Serialise a document as strict JSON (raises ValueError on NaN rather than emit it)."""
    return json.dumps(doc, allow_nan=False, ensure_ascii=False)


# --- fit as text ----------------------------------------------------------------------


def _mode_words(fit: predictor.Fit) -> str:
    return "low-variance" if fit.mode == "low" else "high-variance"


def _nodes(count: int | None) -> str:
    if count is None:
        return "an unknown number of nodes"
    return f"{count:,} node" if count == 1 else f"{count:,} nodes"


def fit_sentences(fit: predictor.Fit) -> list[str]:
    """The fit's facts as plain sentences, most important first."""
    obs = fit.observations
    sentences: list[str] = []
    if fit.status != "ok":
        reason = printable(fit.message) or "no reason given"
        sentences.append(
            f"The fit did not converge ({reason}); the parameters are the last ones tried "
            "and should not be relied on."
        )
    sentences.append(
        f"Average parallelism A = {format_number(fit.A)}, variance σ = "
        f"{format_number(fit.sigma)} ({_mode_words(fit)} mode)."
    )
    max_useful_n, pws_n = _sizes(fit)
    if max_useful_n is not None and max_useful_n <= 1:
        scaling = "Runs do not get faster on more than one node"
    elif max_useful_n is None and fit.identified is False:
        scaling = "The runs have not stopped getting faster, so the largest useful size is unknown"
    else:
        scaling = f"Runs scale usefully up to {_nodes(max_useful_n)}"
    sentences.append(f"{scaling}; the processor working set is {_nodes(pws_n)}.")
    sentences.append(
        f"Largest fitting error {format_percent(fit.fit_error)} at the observed sizes."
    )
    if fit.t1_known:
        sentences.append(f"T(1) was observed: {format_runtime(fit.t1)}.")
    else:
        sentences.append(f"T(1) was not observed; it is estimated at {format_runtime(fit.t1)}.")
    # When the reliability judgment reports it, its sentence says this and names the next run.
    reported = any(r.problem == "first_piece_only" for r in fit.diagnostics.reliability)
    if not fit.identified and not reported:
        sentences.append(
            "The observations only show the first (Amdahl) part of the curve: A and σ are "
            "not determined separately; predictions past "
            f"{_nodes(int(obs.n[-1]))} are an extrapolation."
        )
    if obs.dropped:
        sentences.append(_dropped_sentence(obs.dropped))
    sentences += diagnostic_sentences(fit.diagnostics)
    return sentences


def _sizes_text(sizes: Sequence[int]) -> str:
    return ", ".join(f"{k:,}" for k in sizes)


def diagnostic_sentences(found: predictor.Diagnostics) -> list[str]:
    """ADEPT's anomalies, patterns and reliability problems in plain words."""
    out: list[str] = []
    for a in found.anomalies:
        if a.kind == "point":
            effect = "it is left out" if a.weight == 0 else f"it counts with {a.weight:.0%} weight"
            out.append(
                f"The run at {a.n:,} nodes deviates from its neighbours' trend "
                f"(magnitude {a.deviation:.1f}): {effect}."
            )
    decline = [a.n for a in found.anomalies if a.kind == "decline"]
    if decline:
        out.append(
            f"Runs get slower past the speedup peak ({_sizes_text(decline)} nodes); the model has "
            "no declining part, so they are left out of the fit: do not run this large."
        )
    for a in found.anomalies:
        if a.kind == "ambiguous_final":
            out.append(
                f"The last run ({a.n:,} nodes) is slower than the ones before: the start of a "
                "decline or a one-off; it is left out of the fit when enough runs remain."
            )
    for p in found.patterns:
        if p.kind == "stepwise":
            spans = "; ".join(f"{ph[0]:,}-{ph[-1]:,}" for ph in p.phases)
            out.append(
                f"The speedup jumps between phases (a superlinear step, e.g. data fitting a "
                f"cache): each phase has its own curve ({spans} nodes)."
            )
        elif p.kind == "optimized_sizes":
            rule = (p.feasible or "special sizes").replace("_", " ")
            out.append(
                f"The application runs markedly better on {rule}: only those runs are used, "
                f"and those are the sizes to run it on."
            )
        elif p.kind == "accelerating" and p.phases:
            last = p.phases[0]
            out.append(
                f"The runs scale better at their largest sizes ({_sizes_text(list(last))} "
                "nodes) than before, which the Downey model cannot express: past the largest "
                "size the last step's Amdahl law gives the runtime, and the prediction "
                "interval also reaches the Downey curve's plateau."
            )
        elif p.kind == "rising" and p.phases:
            out.append(
                f"The runtime rises again after {p.phases[0][0]:,} nodes, which the Downey "
                "model cannot express: a model with a communication term that grows with n "
                "(Sevcik's T = a/n + b + c·n) gives the runtime there."
            )
    out += [printable(r.action) for r in found.reliability]
    return out


def _dropped_sentence(dropped: Sequence[tuple[int, float]]) -> str:
    """Name the runs the predictor dropped as obvious outliers."""
    shown = ", ".join(f"n = {n}: {format_runtime(t)}" for n, t in dropped[:_DROPPED_SHOWN])
    more = f" and {len(dropped) - _DROPPED_SHOWN} more" if len(dropped) > _DROPPED_SHOWN else ""
    runs = "run" if len(dropped) == 1 else "runs"
    return (
        f"Ignored {len(dropped)} {runs} as obvious outliers among repeated sizes ({shown}{more})."
    )


def _parameter_table(fit: predictor.Fit) -> Table:
    """Two columns: parameter, value."""
    table = Table(box=box.SIMPLE, show_header=True, title=None)
    table.add_column("parameter")
    table.add_column("value", justify="right")
    max_useful_n, pws_n = _sizes(fit)
    rows = [
        ("method", METHOD_NAMES.get(fit.method, fit.method)),
        ("A (average parallelism)", format_number(fit.A)),
        ("σ (variance)", format_number(fit.sigma)),
        ("mode", fit.mode),
        ("T(1)", format_runtime(fit.t1) + ("" if fit.t1_known else " (estimated)")),
        ("max useful n", _count(max_useful_n)),
        ("processor working set", _count(pws_n)),
        ("fit error (max)", format_percent(fit.fit_error)),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _count(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _observation_table(fit: predictor.Fit) -> Table:
    """Per observed size: runs averaged, measured and fitted runtime, relative error, and what
    ADEPT's analysis said of it."""
    obs = fit.observations
    fitted = fit.runtime(obs.n)
    notes = _observation_notes(fit)
    table = Table(box=box.SIMPLE, show_header=True)
    for name in ("n", "runs", "measured", "fitted", "error", "note"):
        table.add_column(name, justify="left" if name == "note" else "right")
    for n, runs, measured, model in zip(obs.n, obs.runs, obs.runtime, fitted, strict=True):
        error = (float(model) - float(measured)) / float(measured)
        table.add_row(
            f"{int(n):,}",
            f"{int(runs):,}",
            format_runtime(float(measured)),
            format_runtime(float(model)),
            format_percent(error, signed=True),
            notes.get(int(n), ""),
        )
    return table


def _observation_notes(fit: predictor.Fit) -> dict[int, str]:
    """Size -> a short note: anomaly weight, decline, phase, or not one of the feasible sizes."""
    notes: dict[int, str] = {}
    for p in fit.diagnostics.patterns:
        if p.kind == "stepwise":
            for k, phase in enumerate(p.phases, start=1):
                notes.update(dict.fromkeys(phase, f"phase {k}"))
        elif p.kind == "optimized_sizes":
            used = set(fit.segments[0].sizes) if fit.segments else set()
            notes.update(
                {
                    int(n): "not used (not a feasible size)"
                    for n in fit.observations.n
                    if int(n) not in used
                }
            )
    labels = {"decline": "past the peak, not used", "ambiguous_final": "decline or one-off"}
    for a in fit.diagnostics.anomalies:
        notes[a.n] = (
            f"anomaly, weight {a.weight:.0%}" if a.kind == "point" else labels.get(a.kind, a.kind)
        )
    return notes


def _say(console: Console, text: str) -> None:
    """Print a sentence as plain text: no markup, no highlighting, wrapped by the terminal."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def render_fit(
    fit: predictor.Fit, console: Console, source: str, choice: Choice | None = None
) -> None:
    """Print a fit for people: heading, parameter table, sentences, observation table, and
    the cross-validated score of every model when there is a choice."""
    obs = fit.observations
    _say(
        console,
        f"Downey model fitted with {METHOD_NAMES.get(fit.method, fit.method)} to "
        f"{len(obs)} sizes ({int(obs.runs.sum()):,} runs) from {printable(source)}.",
    )
    console.print(_parameter_table(fit))
    for sentence in fit_sentences(fit):
        _say(console, sentence)
    console.print(_observation_table(fit))
    if choice is not None:
        _render_choice(choice, console)


def _render_choice(choice: Choice, console: Console) -> None:
    """The models' cross-validated errors and which one the scheduler will use."""
    if not choice.scores:
        _say(console, "Too few sizes to compare models by cross-validation: ADEPT is used.")
        return
    table = Table(box=box.SIMPLE, show_header=True, title=None)
    for name in ("model", "cross-validated error", "cases"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for s in choice.scores:
        mark = " (used)" if s.model == choice.model else ""
        error = "n/a" if s.score is None else format_percent(s.score)
        table.add_row(f"{s.model}{mark}", error, f"{s.cases}")
    console.print(table)
    if choice.model == "adept":
        _say(console, "ADEPT's Downey curve is used: no other model is clearly better here.")
    else:
        _say(
            console,
            f"The {choice.model} model predicts clearly better than ADEPT on these runs "
            "(half the cross-validated error or less): the scheduler uses it.",
        )


# --- predictions as text --------------------------------------------------------------


def render_predictions(
    preds: predictor.Predictions,
    console: Console,
    method: str,
    largest_observed: int,
    interval: bool = True,
) -> None:
    """Print predictions for people: one table row per target, in the order given, with the
    runtime's prediction interval (the JSON document's "interval") unless `interval` is False
    (a borrowed curve has none calibrated)."""
    if method == "adept":
        _say(console, "Predicted with ADEPT: one Downey model instance per target size.")
    else:
        _say(
            console,
            f"Predicted with one Downey model instance ({METHOD_NAMES.get(method, method)}).",
        )
    shown = interval and preds.lower is not None and preds.upper is not None
    level = f"{preds.level:.0%} interval"
    table = Table(box=box.SIMPLE, show_header=True)
    for name in ("n", "runtime", *((level,) if shown else ()), "speedup", "efficiency"):
        table.add_column(name, justify="right")
    lower = preds.lower if preds.lower is not None else preds.runtime
    upper = preds.upper if preds.upper is not None else preds.runtime
    rows = zip(preds.n, preds.runtime, lower, upper, preds.speedup, preds.efficiency, strict=True)
    for n, t, lo, hi, s, e in rows:
        span = (f"{format_runtime(float(lo))} - {format_runtime(float(hi))}",) if shown else ()
        table.add_row(
            f"{int(n):,}",
            format_runtime(float(t)),
            *span,
            format_number(float(s)),
            format_percent(float(e), 3),
        )
    console.print(table)
    spoken = sorted({r for r in preds.speaker or () if r})
    if spoken:
        _say(
            console,
            "Where marked by the fit ("
            + ", ".join(spoken)
            + "), the runs show a shape the Downey model cannot express and another model "
            "gives the runtime; the interval also reaches the Downey curve's.",
        )
    if int(np.max(preds.n)) > largest_observed:
        _say(
            console,
            f"Sizes above {largest_observed:,} nodes, the largest observed, are extrapolations.",
        )
    if shown and method == "adept":
        _say(
            console,
            f"The {level} is calibrated on the held-out runs of real applications: it "
            "covered about 9 in 10 of them, between and beyond the sizes the fit saw.",
        )
