"""What a decision says: the size, the time limit, the rule that won and why.

Every reason is one plain sentence with its numbers in it, written for the user whose job was
resized and for the administrator tuning the policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The rules' names (policies/rules.py), as decisions, records and reports carry them.
EFFICIENCY = "efficiency"
PWS = "pws"
CAP = "cap"
LOAD_ADAPTIVE = "load_adaptive"
EXPLORATION = "exploration"
FALLBACK = "fallback"
#: Rule names, in the order `decide` lists its candidates.
RULES = (EFFICIENCY, PWS, CAP, LOAD_ADAPTIVE, EXPLORATION, FALLBACK)
#: Rule name of a decision that leaves a job alone because its range is outside the partition.
PARTITION_LIMIT = "partition_limit"


@dataclass(frozen=True)
class Candidate:
    """One rule's proposal: a size (None when the rule does not apply) and why."""

    rule: str
    nodes: int | None
    reason: str

    @property
    def size(self) -> int:
        """The proposed size, for rules that always propose one; ValueError if there is none."""
        if self.nodes is None:
            raise ValueError(f"the {self.rule} rule proposed no size")
        return self.nodes

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "nodes": self.nodes, "reason": self.reason}


@dataclass(frozen=True)
class Decision:
    """The outcome for one job.

    nodes: the node count to set, or None to leave the job exactly as submitted (the daemon
    then releases it unmodified; time_limit_min is None too). time_limit_min: the time limit to
    set in minutes, or None to leave the job's limit as it is. rule: the rule that decided the
    size (one of RULES, or PARTITION_LIMIT). reason: why, one sentence. candidates: every
    rule's proposal, for ``--explain``. time_limit_reason: how the time limit was derived.
    max_nodes: None when the job is pinned at `nodes` (NumNodes=nodes-nodes); otherwise the
    job is released with the range NumNodes=nodes-max_nodes (release = "range"), so that Slurm
    picks the size at start time, and time_limit_min fits `nodes`, the range's smallest size.
    """

    nodes: int | None
    time_limit_min: int | None
    rule: str
    reason: str
    candidates: tuple[Candidate, ...] = ()
    time_limit_reason: str = ""
    max_nodes: int | None = None

    @property
    def as_submitted(self) -> bool:
        return self.nodes is None

    @property
    def explored(self) -> bool:
        """Whether exploration set the size (the budget's explored counters)."""
        return self.nodes is not None and self.rule == EXPLORATION

    @property
    def counted(self) -> bool:
        """Whether the exploration budget counts this decision's predicted node-hours
        (policies.ExplorationBudget; every decision counts as a decided job): a size set,
        other than a fallback that keeps the job's range (its top cut)."""
        return self.nodes is not None and not (self.rule == FALLBACK and self.max_nodes is not None)

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        """The CLI contract {"nodes", "time_limit_min", "rule", "reason", "max_nodes"} (max_nodes
        null when pinned); with `explain`, also "time_limit_reason" and "candidates"."""
        doc: dict[str, Any] = {
            "nodes": self.nodes,
            "time_limit_min": self.time_limit_min,
            "rule": self.rule,
            "reason": self.reason,
            "max_nodes": self.max_nodes,
        }
        if explain:
            doc["time_limit_reason"] = self.time_limit_reason
            doc["candidates"] = [c.to_dict() for c in self.candidates]
        return doc
