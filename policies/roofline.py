"""The roofline prior: a curve for a node type an application never ran on, where learning
cannot help yet.

The learner fits a curve per node type (partition) from the runs there. On a type without
runs the decision has no curve of its own: the curve of all the runs stands in when they
ran on nodes of the same core count, and is refused otherwise (fallback.py). Where the site
has given each type's peak compute and memory bandwidth per node (the adaptalloc TOML's
``[node_types.NAME]``), the roofline model converts a curve the application has on a known
type x into one on the new type y (predictor/roofline.py):

    T_y(n) = T_x(n · c_y/c_x) · s_x/s_y,      s = min(P_peak, B·I) / c   (per core)

which needs the application's operational intensity I (flop/byte):

* from the job's tag (``intensity=``), the user's own statement; else
* estimated from the application's runs on two configured types a and b (`estimate_intensity`):
  their curves' runtimes at the smallest processor count both types ran (where communication
  weighs least, since the roofline bounds compute only) give the per-core speed ratio
  s_b/s_a, and the intensity is the one at which the roofline gives that ratio
  (predictor.models.intensity_from_ratio). A ratio at or past the bandwidth ratio (the peak
  ratio) says only that the application is memory-bound (compute-bound) on both; the
  estimate is then the nearer ridge point, and the note says "at most" ("at least").

Of the known types, the prior converts from the one closest to the target
(|log k| + |log m| smallest, k = s_x/s_y and m = c_y/c_x: the least conversion), ties to the
one with more runs, then by name. A type's cores per node come from Slurm; where either is
unknown the conversion is per node (m = 1).

The prior is a guess, and is marked as one: its reliability problem ``roofline_prior``
keeps every time limit as the user wrote it (time_limit.py), the decision's reason says the
curve is a prior and from where, and it is used only until the type's own runs give it a
curve.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from policies.rules import number
from predictor import Curve
from predictor.diagnostics import ReliabilityProblem
from predictor.models.roofline import attainable, intensity_from_ratio
from predictor.roofline import PRIOR_PROBLEM, roofline_prior

__all__ = [
    "Intensity",
    "Known",
    "NodeType",
    "Plan",
    "choose_intensity",
    "estimate_intensity",
    "plan_prior",
    "prior_curve",
    "time_ratio",
]


@dataclass(frozen=True)
class NodeType:
    """One node type (a partition) as the roofline sees it: peak compute and memory
    bandwidth per node, and its cores per node when Slurm says (None: unknown)."""

    name: str
    peak_gflops: float
    bandwidth_gbs: float
    cores: int | None = None

    def __post_init__(self) -> None:
        for what, value in (
            ("peak_gflops", self.peak_gflops),
            ("bandwidth_gbs", self.bandwidth_gbs),
        ):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"node type {self.name}: {what} must be finite and > 0")
        if self.cores is not None and self.cores < 1:
            raise ValueError(f"node type {self.name}: cores must be ≥ 1")

    def performance(self, intensity: float) -> float:
        """min(P_peak, B·I) per node, GFLOP/s."""
        return float(attainable(self.peak_gflops, self.bandwidth_gbs, intensity))

    @property
    def ridge(self) -> float:
        return self.peak_gflops / self.bandwidth_gbs


@dataclass(frozen=True)
class Known:
    """An application's curve on a type it ran on, and how many runs the curve has."""

    node_type: NodeType
    curve: Curve
    runs: int


@dataclass(frozen=True)
class Intensity:
    """The application's operational intensity: value (flop/byte), from the job's tag or
    its runs (on the two types in `between`) or, any other `source`, what that text says
    (the simulator's pools), and whether it is a bound
    (predictor.models.IntensityEstimate)."""

    value: float
    source: str
    bound: str = "exact"
    between: tuple[str, ...] = ()

    def words(self) -> str:
        sign = {"exact": "", "at_most": "≤ ", "at_least": "≥ "}[self.bound]
        text = f"intensity {sign}{number(self.value)} flop/byte"
        if self.source == "tag":
            return f"{text}, the job's tag"
        if self.source != "runs":  # given by whoever built it (the simulator: its pools)
            return f"{text}, {self.source}"
        kind = {
            "exact": "",
            "at_most": "memory-bound on both, ",
            "at_least": "compute-bound on both, ",
        }
        return f"{text}, {kind[self.bound]}estimated from its runs on {' and '.join(self.between)}"

    def to_dict(self) -> dict[str, object]:
        return {
            "value": self.value,
            "source": self.source,
            "bound": self.bound,
            "between": list(self.between),
        }


def _cores(a: NodeType, b: NodeType) -> tuple[int, int]:
    """(c_a, c_b), or (1, 1) when either is unknown: the comparison is then per node."""
    if a.cores is None or b.cores is None:
        return 1, 1
    return a.cores, b.cores


def estimate_intensity(known: Sequence[Known]) -> Intensity | str:
    """The intensity the application's curves on two known types imply (module docstring),
    or why there is none. The two types with the most runs are compared (ties by name)."""
    if len(known) < 2:
        return (
            "it ran on fewer than two configured node types, so its runs do not tell its intensity"
        )
    a, b = sorted(known, key=lambda k: (-k.runs, k.node_type.name))[:2]
    ta, tb = a.node_type, b.node_type
    ca, cb = _cores(ta, tb)
    # Processor counts: n nodes of a hold n·c_a, of b n·c_b.
    start = max(a.curve.smallest_observed * ca, b.curve.smallest_observed * cb)
    end = min(a.curve.largest_observed * ca, b.curve.largest_observed * cb)
    if start > end:
        return f"its runs on {ta.name} and {tb.name} share no processor count to compare"
    speed = float(a.curve.runtime(start / ca) / b.curve.runtime(start / cb))  # s_b / s_a
    ratio = speed * cb / ca  # per node: P_b / P_a
    if not (math.isfinite(ratio) and ratio > 0):
        return f"its curves on {ta.name} and {tb.name} give no finite runtime ratio"
    try:
        found = intensity_from_ratio(
            ta.peak_gflops, ta.bandwidth_gbs, tb.peak_gflops, tb.bandwidth_gbs, ratio
        )
    except ValueError:  # numbers past float range (an absurd configuration)
        return f"{ta.name} and {tb.name} give no finite intensity"
    if found is None:
        return (
            f"{ta.name} and {tb.name} have the same ridge point, so its runs there do not "
            "tell its intensity"
        )
    return Intensity(found.value, "runs", found.bound, (ta.name, tb.name))


def time_ratio(source: NodeType, target: NodeType, intensity: float) -> tuple[float, float]:
    """(k, m): k = s_x/s_y the target's compute time per source's at equal processors (per
    core, s = min(P_peak, B·I)/c; per node when either's cores are unknown), m = c_y/c_x
    (1 then)."""
    cx, cy = _cores(source, target)
    speed_x = source.performance(intensity) / cx
    speed_y = target.performance(intensity) / cy
    return speed_x / speed_y, cy / cx


def choose_intensity(tagged: float | None, known: Sequence[Known]) -> Intensity | str:
    """The job's tagged intensity when it gives one, else the runs' estimate
    (`estimate_intensity`), else why there is none."""
    if tagged is not None:
        return Intensity(tagged, "tag")
    found = estimate_intensity(known)
    if isinstance(found, str):
        return f"its intensity is unknown: {found} (the tag's intensity= gives it)"
    return found


@dataclass(frozen=True)
class Plan:
    """How the prior on `target` is made: from `source`'s curve, runtimes × time_ratio
    (k = s_x/s_y) at processors_ratio (m = c_y/c_x) times the nodes; per_core: both types'
    cores are known (else the speeds are per node and m = 1)."""

    target: NodeType
    source: Known
    time_ratio: float
    processors_ratio: float
    intensity: Intensity
    per_core: bool = False

    def note(self) -> str:
        """One clause for the decision's reason."""
        x, y = self.source.node_type.name, self.target.name
        faster = 1.0 / self.time_ratio
        per = "per core" if self.per_core else "per node"
        return (
            f"the curve on {y} is a roofline prior from the app's curve on {x} "
            f"({self.intensity.words()}: {y} computes {number(faster)}× as fast {per}; the "
            f"roofline bounds compute time only), until runs on {y} give it a curve of its own"
        )

    def problem(self) -> ReliabilityProblem:
        return ReliabilityProblem(
            problem=PRIOR_PROBLEM,
            action=f"run the app on {self.target.name} to learn its own curve there",
            suggest_n=None,
            detail={
                "time_ratio": self.time_ratio,
                "processors_ratio": self.processors_ratio,
                "intensity": self.intensity.value,
            },
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "node_type": self.target.name,
            "from": self.source.node_type.name,
            "from_runs": self.source.runs,
            "time_ratio": self.time_ratio,
            "processors_ratio": self.processors_ratio,
            "intensity": self.intensity.to_dict(),
        }


def plan_prior(target: NodeType, known: Sequence[Known], intensity: Intensity) -> Plan | str:
    """The conversion to `target` from the closest known type (module docstring), or why
    there is none."""
    others = [k for k in known if k.node_type.name != target.name]
    if not others:
        return "the app has no curve on another configured node type to convert"

    def plan(k: Known) -> Plan:
        k_ratio, m_ratio = time_ratio(k.node_type, target, intensity.value)
        per_core = k.node_type.cores is not None and target.cores is not None
        return Plan(target, k, k_ratio, m_ratio, intensity, per_core)

    return min(
        (plan(k) for k in others),
        key=lambda p: (
            abs(math.log(p.time_ratio)) + abs(math.log(p.processors_ratio)),
            -p.source.runs,
            p.source.node_type.name,
        ),
    )


def prior_curve(plan: Plan) -> Curve:
    """The prior curve on plan.target (predictor.roofline.roofline_prior, a Downey fit of a
    few points: milliseconds); ValueError when it cannot be fitted."""
    return roofline_prior(plan.source.curve, plan.time_ratio, plan.processors_ratio, plan.problem())
