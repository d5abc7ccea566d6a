"""Cold start from sibling problem sizes: the curve the decision path uses for a problem size
that has none of its own (the model is predictor/sizes.py).

An app key whose size class is a number (``cg@3000``, from the tag ``size=3000``) and that has
no usable curve borrows one when two or more *sibling sizes* (``cg@1000``, ``cg@4000``: same
name, numeric size class) have runs in the store. Their stored curves give the Downey
parameters per size (nothing is refitted on the decision path that the learner already
fitted); their runs give the N-T/P-T fit and the leave-one-size-out scores. The result is a
`CurveRecord` with method ``borrowed`` and a note naming the sizes and the model, which the
daemon and ``adaptalloc decide`` add to the decision's reason. Borrowed curves carry a
reliability problem, so that no time limit is ever shortened on one.

Computing one costs a few linear fits and one ADEPT fit (tens of ms); the result is kept
per app and sibling state (which sizes, their observation and curve versions) in a small
in-process cache, so a burst of jobs of one new size pays once.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import structlog
from numpy.typing import ArrayLike

import predictor
from plugin.appkey import AppKey, numeric_size, size_text
from plugin.errors import printable
from plugin.store.curves import CurveRecord, CurveStore, Observation
from predictor.downey import FloatArray
from predictor.sizes import DowneyParameters, SizeFits, borrow_curve, fit_sizes

__all__ = [
    "BORROWED",
    "Borrowed",
    "borrow_from_runs",
    "borrowed_for",
    "curve_with_borrowing",
    "own_runs",
]

log = structlog.get_logger("adaptalloc.learner")

#: The method a borrowed CurveRecord carries.
BORROWED = "borrowed"
#: Borrowed curves kept in the in-process cache.
_CACHE_SIZE = 256
_cache: OrderedDict[tuple[Any, ...], Borrowed | None] = OrderedDict()


@dataclass(frozen=True)
class Borrowed:
    """A problem size's curve borrowed from its siblings, and where from."""

    size: float
    curve: predictor.Curve
    from_sizes: tuple[float, ...]
    method: str
    loso_error: Mapping[str, float | None]
    from_apps: tuple[str, ...] = ()

    @property
    def note(self) -> str:
        """One line for a decision's reason."""
        score = self.loso_error.get(self.method)
        scored = "" if score is None else f", leave-one-size-out error {100 * score:.1f}%"
        sizes = ", ".join(size_text(s) for s in self.from_sizes)
        return (
            f"curve of problem size {size_text(self.size)} borrowed from sizes {sizes} "
            f"({self.method}{scored})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": BORROWED,
            "size": self.size,
            "from_sizes": list(self.from_sizes),
            "from_apps": list(self.from_apps),
            "method": self.method,
            "loso_error": dict(self.loso_error),
        }


def borrow_from_runs(
    size: float,
    sizes: ArrayLike,
    nodes: ArrayLike,
    runtimes: ArrayLike,
    known: Mapping[float, DowneyParameters] | None = None,
    from_apps: tuple[str, ...] = (),
) -> Borrowed:
    """The curve of problem size `size` from runs at other sizes (ValueError when the runs
    cannot give one: fewer than two sizes, one node count, ...)."""
    fits: SizeFits = fit_sizes(sizes, nodes, runtimes, target=size, known=known)
    curve = borrow_curve(fits, size, np.unique(np.asarray(nodes, dtype=float)))
    return Borrowed(size, curve, fits.sizes, fits.method, dict(fits.loso_error), from_apps)


def own_runs(sizes: FloatArray, nodes: FloatArray, size: float) -> npt.NDArray[np.bool_] | None:
    """Which runs are at problem size `size`, when they are enough for a curve of its own
    (two or more node counts); None when the size must borrow from the others."""
    own = np.isclose(sizes, size, rtol=1e-9, atol=0.0)
    return own if np.unique(nodes[own]).size >= 2 else None


def _sibling_runs(
    siblings: Mapping[AppKey, list[Observation]],
) -> tuple[list[float], list[float], list[float]]:
    sizes: list[float] = []
    nodes: list[float] = []
    runtimes: list[float] = []
    for key, runs in siblings.items():
        value = numeric_size(key.size)
        for run in runs:
            sizes.append(float(value if value is not None else run.size or 0.0))
            nodes.append(float(run.nodes))
            runtimes.append(run.runtime_s)
    return sizes, nodes, runtimes


def borrowed_for(store: CurveStore, app: AppKey) -> Borrowed | None:
    """The app's borrowed curve, or None (no numeric size, fewer than two sibling sizes, or
    the siblings' runs give none)."""
    size = numeric_size(app.size)
    if size is None:
        return None
    siblings = store.sibling_sizes(app)
    if len(siblings) < 2:
        return None
    records = {key: store.curve_record(key) for key in siblings}
    state = tuple(
        sorted(
            (str(k), len(v), r.version if r is not None else -1)
            for k, v in siblings.items()
            for r in [records[k]]
        )
    )
    cache_key = (str(app), store.where, state)
    if cache_key in _cache:
        _cache.move_to_end(cache_key)
        return _cache[cache_key]
    known: dict[float, DowneyParameters] = {}
    for key, record in records.items():
        value = numeric_size(key.size)
        if value is not None and record is not None and record.curve is not None:
            known[value] = record.curve
    sizes, nodes, runtimes = _sibling_runs(siblings)
    try:
        result: Borrowed | None = borrow_from_runs(
            size, sizes, nodes, runtimes, known, tuple(sorted(str(k) for k in siblings))
        )
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:  # no curve: fail open
        log.info("borrow_refused", app=str(app), reason=printable(str(exc))[:200])
        result = None
    _cache[cache_key] = result
    if len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return result


def curve_with_borrowing(store: CurveStore, app: AppKey) -> CurveRecord | None:
    """The app's stored curve record; when it has no usable curve and its size is a number,
    a borrowed one (method ``borrowed``, `note` saying from where) if its siblings give one.
    The decision path's read (daemon, ``adaptalloc decide --app``)."""
    record = store.curve_record(app)
    if record is not None and record.curve is not None:
        return record
    borrowed = borrowed_for(store, app)
    if borrowed is None:
        return record
    base = record or CurveRecord(
        curve=None,
        version=0,
        obs_version=0,
        fitted_at=None,
        n_observations=0,
        method="",
        reliable=False,
    )
    return dataclasses.replace(
        base, curve=borrowed.curve, method=BORROWED, reliable=False, note=borrowed.note
    )
