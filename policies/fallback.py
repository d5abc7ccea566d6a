"""When the curve fitted on all of an application's runs may stand in on a node type.

The learner fits a curve per node type (partition) when an application ran on several, and
one curve over all its runs. A decision on a type without a curve of its own falls back to
the curve over all runs. Those runs count *nodes of whatever type they ran on*: a run on n
nodes of c_x cores held p = n·c_x processors, and the fallback read on a type of c_y cores
takes the same n for n·c_y processors, off by the factor c_x/c_y whenever c_x ≠ c_y.

Converting instead of refusing would need, for Downey's curve in processors (A, σ), the
parallelism in the target's nodes A_y = A_x·c_x/c_y and the time scale

    T_y(1) / T_x(1) = τ(c_y; A, σ) / τ(c_x; A, σ) · s_x / s_y      (A = A_x·c_x)

with s the per-core speed of each type, which neither Slurm nor the runs give the daemon
(and Downey's formulas are not invariant under n → c·n, so even with s_x = s_y the
converted curve is a model, not a fit). So the fallback is refused across core counts: the
job is then decided as one of an application without a curve (the policy's fallback rule).
Where the site describes the node types (peak compute and memory bandwidth), the roofline
gives s, and the decider tries a roofline prior before this (roofline.py).

A core count that is unknown (a run without a node type, an imported CSV; a partition sinfo
does not show) is no evidence of a difference: only two *known* different counts refuse,
so a cluster whose runs all have one core count decides exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

CurveT = TypeVar("CurveT")

__all__ = ["curve_on_type", "fallback_refusal"]


def fallback_refusal(run_cores: Iterable[int | None], target_cores: int | None) -> str:
    """'' when the all-runs curve may be read in the target type's nodes, else why not.

    Parameters
    ----------
    run_cores : the cores per node of the type each of the curve's runs ran on (None: unknown)
    target_cores : the cores per node of the type the decision is for (None: unknown)
    """
    if target_cores is None:
        return ""
    other = sorted({c for c in run_cores if c is not None and c != target_cores})
    if not other:
        return ""
    shown = ", ".join(str(c) for c in other)
    return (
        f"the curve of all the app's runs counts nodes of {shown} cores, not this type's "
        f"{target_cores}: not used across node sizes"
    )


def curve_on_type(
    typed: CurveT | None,
    generic: CurveT | None,
    target_cores: int | None,
    run_cores: Callable[[], Iterable[int | None]],
) -> tuple[CurveT | None, str]:
    """The curve a decision on a node type reads, and why there is none when refused.

    The type's own curve (`typed`) when the learner fitted one, else the curve of all the
    runs (`generic`) unless `fallback_refusal` refuses it; `run_cores()` (the cores per node
    of each run's type) is called only when that question arises, since it may need a read.
    """
    if typed is not None:
        return typed, ""
    if generic is None or target_cores is None:
        return generic, ""
    refusal = fallback_refusal(run_cores(), target_cores)
    return (None, refusal) if refusal else (generic, "")
