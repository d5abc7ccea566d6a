"""What ADEPT's sections VIII-IX say about a set of observations, as plain values.

Anomaly: an observation that deviates from the model (a point, a declining tail, or an
ambiguous final point). Pattern: a scalability pattern the model does not express by itself
(stepwise phases, specially optimized sizes; and the shapes shape.py acts on: "accelerating",
the last step scaling better than the one before, and "rising", the runtime rising after its
minimum, where another model of the zoo speaks). ReliabilityProblem: ADEPT's Table 3, with the
action and, where there is one, the size whose next run would teach the most.

These are the records the fit output, the curve store and the policies share; the analysis
that produces them lives in anomalies.py, patterns.py and reliability.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

ANOMALY_KINDS = ("point", "decline", "ambiguous_final")
PATTERN_KINDS = ("stepwise", "optimized_sizes", "accelerating", "rising")
PROBLEMS = ("first_piece_only", "high_fit_error", "runner_up", "mixed_sizes", "shape_misfit")


@dataclass(frozen=True)
class Anomaly:
    """An observation (size n, runtime) that deviates from the model.

    kind: "point" (down-weighted by `weight`, the factor W'/W), "decline" (past the speedup
    peak, excluded) or "ambiguous_final" (a last point that may be either; excluded).
    deviation: the magnitude D = ΔR/ε for points, else 0.
    """

    n: int
    runtime: float
    kind: str
    deviation: float = 0.0
    weight: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Pattern:
    """A scalability pattern. phases: sizes per phase (stepwise; for "accelerating" and
    "rising" one phase, the sizes that show the shape); feasible: a rule naming the sizes an
    optimized code runs well on ("powers_of_two" or "squares"), else None."""

    kind: str
    phases: tuple[tuple[int, ...], ...] = ()
    feasible: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["phases"] = [list(p) for p in self.phases]
        return out


@dataclass(frozen=True)
class ReliabilityProblem:
    """One row of ADEPT's Table 3: the problem, the action and the size to run next (or None)."""

    problem: str
    action: str
    suggest_n: int | None = None
    detail: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "problem": self.problem,
            "action": self.action,
            "suggest_n": self.suggest_n,
            **self.detail,
        }


@dataclass(frozen=True)
class Diagnostics:
    anomalies: tuple[Anomaly, ...] = ()
    patterns: tuple[Pattern, ...] = ()
    reliability: tuple[ReliabilityProblem, ...] = ()

    @property
    def reliable(self) -> bool:
        """No reliability problem was found."""
        return not self.reliability

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "anomalies": [a.to_dict() for a in self.anomalies],
            "patterns": [p.to_dict() for p in self.patterns],
            "reliability": [r.to_dict() for r in self.reliability],
        }
