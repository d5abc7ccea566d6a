"""The score record: one finished job against the prediction that decided it (live accuracy).

A `Score` is one finished job that the daemon sized with a curve (plugin/learning/scoring.py
makes it): where and how long it ran, what the deciding curve predicted there with its 90%
interval, and, for the "what sizing would have bought" figures, the size the daemon decided
(advised, in advise mode) and the prediction there. A frozen value with its stored JSON,
like the decision record (decisions.py); plugin/store/score_stream.py keeps scores in Redis.

A score's JSON: ``{"j": job id, "s": submit time, "e": end time, "n": nodes it ran on,
"t": elapsed s, "p": predicted s, "l", "h": the 90% interval's ends, "m": mode, "r": rule}``
and, when known, ``"c": 1`` (censored: stopped at its limit or preempted, so the runtime
is a lower bound), ``"v"`` curve version, ``"u"`` the job's own app key when another's
curve decided (the site's), ``"y"`` the partition it ran in, ``"a"`` the decided size and,
when it differs from ``n``, ``"ap"``, ``"al"``, ``"ah"``: the prediction at it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["ADVISE", "ENFORCE", "MODES", "Score"]

#: Decision modes: ``enforce`` resized the job; ``advise`` recorded what it would have done.
ENFORCE = "enforce"
ADVISE = "advise"
MODES = (ENFORCE, ADVISE)


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} is not a number")
    number = float(value)
    if not (math.isfinite(number) and number > 0.0):
        raise ValueError(f"{name} must be finite and > 0, got {number!r}")
    return number


def _whole(value: Any, name: str, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number ≥ {least}, got {value!r}")
    return value


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} is not text")
    return value[:128]


@dataclass(frozen=True)
class Score:
    """One finished job against the prediction of the curve that decided it.

    app: the key whose curve decided; runtime_s: the job's elapsed time (a lower bound when
    `censored`); predicted_s, lower_s, upper_s: that curve's runtime and 90% interval at
    `nodes`, the size it ran on; advised_*: the same at the decided size `advised_nodes`
    (the smallest of a released range), equal to the prediction at `nodes` when they agree.
    """

    app: str
    job_id: int
    submit_time: int
    end_time: float
    nodes: int
    runtime_s: float
    predicted_s: float
    lower_s: float
    upper_s: float
    mode: str = ENFORCE
    rule: str = ""
    censored: bool = False
    curve_version: int | None = None
    job_app: str | None = None
    partition: str | None = None
    advised_nodes: int | None = None
    advised_s: float | None = None
    advised_lower_s: float | None = None
    advised_upper_s: float | None = None

    def __post_init__(self) -> None:
        _whole(self.nodes, "nodes")
        _whole(self.job_id, "job_id", 0)
        _whole(self.submit_time, "submit_time", 0)
        for name in ("runtime_s", "predicted_s", "lower_s", "upper_s"):
            _positive(getattr(self, name), name)
        if not math.isfinite(self.end_time):
            raise ValueError("end_time must be finite")
        if not self.lower_s <= self.predicted_s <= self.upper_s:
            raise ValueError("the interval must hold the prediction")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.advised_nodes is not None:
            _whole(self.advised_nodes, "advised_nodes")

    @property
    def ratio(self) -> float:
        """actual / predicted (a lower bound when censored)."""
        return self.runtime_s / self.predicted_s

    @property
    def error(self) -> float | None:
        """The absolute percentage error |predicted - actual| / actual as a fraction; None
        for a censored run (its actual runtime is unknown)."""
        return None if self.censored else abs(self.predicted_s - self.runtime_s) / self.runtime_s

    @property
    def where(self) -> str:
        """The actual runtime against the 90% interval: ``inside``, ``above``, ``below``,
        or ``unknown`` for a censored run that stopped before the interval's upper end (it
        would have run longer, by how much nobody knows)."""
        if self.runtime_s > self.upper_s:
            return "above"
        if self.censored:
            return "unknown"
        return "below" if self.runtime_s < self.lower_s else "inside"

    def advised(self) -> tuple[int, float, float, float] | None:
        """(size, predicted s, lower, upper) at the decided size, None when not recorded."""
        if self.advised_nodes is None:
            return None
        if self.advised_s is None or self.advised_lower_s is None or self.advised_upper_s is None:
            return self.advised_nodes, self.predicted_s, self.lower_s, self.upper_s
        return self.advised_nodes, self.advised_s, self.advised_lower_s, self.advised_upper_s

    def to_json(self) -> str:
        """The stored form (module docstring); the app lives in the stream entry's field."""
        doc: dict[str, Any] = {
            "j": self.job_id,
            "s": self.submit_time,
            "e": self.end_time,
            "n": self.nodes,
            "t": self.runtime_s,
            "p": self.predicted_s,
            "l": self.lower_s,
            "h": self.upper_s,
            "m": self.mode,
            "r": self.rule,
        }
        optional: tuple[tuple[str, Any], ...] = (
            ("c", 1 if self.censored else None),
            ("v", self.curve_version),
            ("u", self.job_app),
            ("y", self.partition),
            ("a", self.advised_nodes),
            ("ap", self.advised_s),
            ("al", self.advised_lower_s),
            ("ah", self.advised_upper_s),
        )
        doc.update({k: v for k, v in optional if v is not None})
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, app: str, text: str) -> Score:
        """Inverse of to_json; ValueError for a document it cannot read."""
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            advised = [doc.get(k) for k in ("ap", "al", "ah")]
            version = doc.get("v")
            return cls(
                app=app,
                job_id=_whole(doc["j"], "j", 0),
                submit_time=_whole(doc["s"], "s", 0),
                end_time=float(doc["e"]),
                nodes=_whole(doc["n"], "n"),
                runtime_s=_positive(doc["t"], "t"),
                predicted_s=_positive(doc["p"], "p"),
                lower_s=_positive(doc["l"], "l"),
                upper_s=_positive(doc["h"], "h"),
                mode=_text(doc.get("m", ENFORCE), "m"),
                rule=_text(doc.get("r", ""), "r"),
                censored=bool(doc.get("c")),
                curve_version=None if version is None else _whole(version, "v", 0),
                job_app=None if doc.get("u") is None else _text(doc["u"], "u"),
                partition=None if doc.get("y") is None else _text(doc["y"], "y"),
                advised_nodes=None if doc.get("a") is None else _whole(doc["a"], "a"),
                advised_s=None if advised[0] is None else _positive(advised[0], "ap"),
                advised_lower_s=None if advised[1] is None else _positive(advised[1], "al"),
                advised_upper_s=None if advised[2] is None else _positive(advised[2], "ah"),
            )
        except (KeyError, TypeError, OverflowError, RecursionError) as exc:
            raise ValueError(f"malformed score: {exc!r}") from exc
