"""Why the daemon released a job as submitted (fail-open): short codes for admin_comment,
the decision record, the log and the ``adaptalloc_fail_open_total{reason}`` counter.

A job that leaves the daemon unsized because the *policy* said so (no curve and the fallback
``as_submitted``, a range beyond the partition) is not a fail-open: it is a decision, recorded
as ``kept`` with its rule.
"""

from __future__ import annotations

__all__ = ["REASONS"]

STORE_UNAVAILABLE = "store_unavailable"
BAD_TAG = "bad_tag"
OPTED_OUT = "opted_out"
NOT_MOLDABLE = "not_moldable"
POLICY_ERROR = "policy_error"
OUT_OF_RANGE = "out_of_range"
SLURM_ERROR = "slurm_error"
WATCHDOG = "watchdog"
SHUTDOWN = "shutdown"
INTERNAL_ERROR = "internal_error"
BY_ADMIN = "released_by_admin"
LIMITS_ENFORCED = "limits_enforced"

#: Every code, with what it means (for the docs and `adaptalloc daemon --help`).
REASONS = {
    STORE_UNAVAILABLE: "Redis did not answer in time (or the store refused the read)",
    BAD_TAG: "the job's adaptalloc:v1 tag cannot be honoured (unknown key, bad value, two tags)",
    OPTED_OUT: "the job's tag says resize=no",
    NOT_MOLDABLE: "the job's node range is no longer a range (min = max, or unknown)",
    POLICY_ERROR: "the policy raised an error (or the policy file could not be used)",
    OUT_OF_RANGE: "the decision fell outside the user's range (never applied)",
    SLURM_ERROR: "a Slurm command failed for this job",
    WATCHDOG: "the job was held longer than [daemon] max_hold_s",
    SHUTDOWN: "the daemon stopped before it could decide the job",
    INTERNAL_ERROR: "an unexpected error in the daemon's decision code",
    BY_ADMIN: "adaptalloc daemon --release-held",
    LIMITS_ENFORCED: "Slurm enforces association/QOS limits, which a resize would lift",
}
