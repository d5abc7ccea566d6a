"""The decision record: what the daemon decided for one held job, as it crosses into Redis.

One frozen, versioned value, written by the daemon (plugin/daemon/record.py, as a JSON
document in the ``adaptalloc:v2:{global}:decisions`` stream) and read back by ``adaptalloc
decisions``, ``adaptalloc app`` and the reports. `to_dict` gives the stored document
(``"version": DECISION_VERSION`` and one key per field); `from_dict` reads it back and
refuses a version it does not know, or a field of the wrong type, with
`DecisionRecordError`.

Documents written before the record carried a version (the daemon's layout up to
adaptalloc 0.1) have the same keys without ``version`` and are read as version 1, so an
upgrade loses no stored decision.

Fields: the job (``job_id``, ``submit_time``, ``user``, ``account``, ``partition``, the
requested range ``min_nodes``-``max_nodes`` and ``time_limit_min``), what was done
(``action``: resize, keep or release; ``status``; ``nodes``-``nodes_upto`` and
``new_time_limit_min`` when the job was sized, all None for a release), why (``rule``,
``reason``, ``time_limit_reason``, ``fail_open``: the reason code of a release), what it
rested on (``curve_version``, ``curve_model``, ``idle_nodes``, ``pending_nodes``,
``total_nodes``, ``policy``, ``budget``) and when (``decided_at``, ``released_at``: Unix
seconds; ``latency_s``: held to released; ``recovered``: finished from the journal).

Placement, scaling and partition choice add: ``tasks`` (the job's fixed task
count) and ``tasks_per_node`` (on the busiest node, as placed), ``scaling`` ("weak" when the
tag said so), ``new_partition`` (the partition the job was moved to among those it listed,
None when it kept its own) and ``placement`` (the detail: the placement table, or every
listed partition's wait, runtime and completion). ``curve_app`` is the key whose curve
decided when it was not the job's own ``app`` (the site's curve, for a user without a
usable curve of their own: plugin/appkey.py). ``curve_doc`` is the document
(`predictor.Curve.to_dict`, without the diagnostics) of the curve whose prediction sized the
job, when one did (the
rules that read it: efficiency, pws, cap, load_adaptive, exploration), so that the learner
scores the finished run against the prediction that decided it, even after the curve was
refitted (plugin/learning/scoring.py). These fields are optional with defaults,
so documents written before them read unchanged and older readers, which ignore keys they do
not know, read the new ones: the version stays 1.

``mode`` (optional too, default "enforce"): "enforce" for a job the daemon held and sized
(or released), "advise" for one it only recorded; that job ran as Slurm decided and the
record says what the daemon would have done (``status`` "advised", or "advised_late" when
the job had started before the daemon saw it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from plugin.errors import AdaptallocError
from policies.toml_keys import is_finite_number, is_whole

__all__ = ["DECISION_VERSION", "DecisionRecord", "DecisionRecordError", "StoredDecision"]

#: The version `to_dict` writes and the only one `from_dict` reads (besides unversioned ones).
DECISION_VERSION = 1


class DecisionRecordError(AdaptallocError, ValueError):
    """A stored decision document this version of adaptalloc cannot read."""


_is_int = is_whole
_is_number = is_finite_number


#: What each field may hold in a stored document (None is allowed for every optional field).
_CHECKS: dict[type, Callable[[Any], bool]] = {
    int: _is_int,
    float: _is_number,
    str: lambda value: isinstance(value, str),
    bool: lambda value: isinstance(value, bool),
    dict: lambda value: isinstance(value, dict),
}


@dataclass(frozen=True)
class DecisionRecord:
    """One decision for one job (see the module docstring for the fields)."""

    job_id: int
    app: str | None = None
    user: str = ""
    account: str = ""
    partition: str = ""
    min_nodes: int | None = None
    max_nodes: int | None = None
    time_limit_min: int | None = None
    action: str = ""
    nodes: int | None = None
    nodes_upto: int | None = None
    new_time_limit_min: int | None = None
    rule: str | None = None
    reason: str = ""
    time_limit_reason: str = ""
    fail_open: str | None = None
    status: str = ""
    curve_version: int | None = None
    curve_model: str | None = None
    idle_nodes: int | None = None
    pending_nodes: int | None = None
    total_nodes: int | None = None
    policy: str = ""
    budget: dict[str, Any] | None = None
    submit_time: int | None = None
    decided_at: float | None = None
    latency_s: float | None = None
    recovered: bool = False
    released_at: float | None = None
    tasks: int | None = None
    tasks_per_node: int | None = None
    scaling: str | None = None
    new_partition: str | None = None
    placement: dict[str, Any] | None = None
    curve_app: str | None = None
    curve_doc: dict[str, Any] | None = None
    mode: str = "enforce"
    version: int = DECISION_VERSION

    @property
    def size_text(self) -> str | None:
        """The size the job was released with: "16", "4-24" for a range Slurm sizes at
        start, None when it was left as submitted."""
        if self.nodes is None:
            return None
        if self.nodes_upto is None or self.nodes_upto <= self.nodes:
            return str(self.nodes)
        return f"{self.nodes}-{self.nodes_upto}"

    def to_dict(self) -> dict[str, Any]:
        """The stored document: ``version`` and every field, JSON-able."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> DecisionRecord:
        """Inverse of to_dict (a document without ``version`` is version 1); keys it does not
        know are ignored. Raises DecisionRecordError for another version or a wrong type."""
        version = doc.get("version", DECISION_VERSION)
        if version != DECISION_VERSION or isinstance(version, bool):
            raise DecisionRecordError(
                f"decision record version {version!r} is not one this adaptalloc reads "
                f"(it reads {DECISION_VERSION})"
            )
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in doc:
                continue
            value = doc[f.name]
            kind = _FIELD_TYPES[f.name]
            if value is None and f.name in _OPTIONAL:
                values[f.name] = None
            elif _CHECKS[kind](value):
                values[f.name] = float(value) if kind is float else value
            else:
                raise DecisionRecordError(
                    f"decision record field {f.name!r} holds {type(value).__name__}, "
                    f"not {kind.__name__}"
                )
        if "job_id" not in values or values["job_id"] is None:
            raise DecisionRecordError("decision record has no job_id")
        return cls(**values)


def _field_type(annotation: str) -> type:
    for kind in (bool, int, float, str, dict):
        if annotation.startswith(kind.__name__):
            return kind
    raise TypeError(annotation)  # pragma: no cover - only a new field type gets here


_FIELD_TYPES = {f.name: _field_type(str(f.type)) for f in fields(DecisionRecord)}
_OPTIONAL = {f.name for f in fields(DecisionRecord) if "None" in str(f.type)}


@dataclass(frozen=True)
class StoredDecision:
    """A decision as the store returns it: the stream entry's id and the record."""

    entry_id: str
    record: DecisionRecord

    def to_dict(self) -> dict[str, Any]:
        """The record's document with the entry id first (``adaptalloc decisions``'s JSON)."""
        return {"id": self.entry_id, **self.record.to_dict()}
