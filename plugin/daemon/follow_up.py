"""Follow-up sweeps after a spool wake-up, until each spool line's job has been found held.

job_submit.lua appends its line to the spool before slurmctld has created the job, so the
sweep a wake-up starts can come too early for it; under load slurmctld takes longer than one
follow-up to create it (its update stalls of 1-2 s, tests/benchmarks/test_release_floor.py),
and such a job then waited for a later job's wake-up or the periodic sweep. `FollowUps`
counts the spool's lines (one per held job) against the jobs held with the marker that the
queue reads find for the first time, and asks for another sweep ``FOLLOW_UP_S`` after the
last while a line's job is missing, at most ``[daemon] follow_ups`` times after the last
wake-up (a line whose job never comes, its submission failed after the hook, costs at most
that many reads; the periodic sweep stays the safety net).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FOLLOW_UP_S", "FollowUps"]

#: A follow-up sweep this long after the last sweep. Chosen, not fitted: well above the
#: milliseconds slurmctld takes to create a job, well below sweep_interval_s; with the
#: default 10 follow-ups the chain lasts about a second.
FOLLOW_UP_S = 0.1


class FollowUps:
    """The follow-up chain's state (module docstring)."""

    def __init__(self, limit: int) -> None:
        #: Follow-ups allowed after a wake-up (``[daemon] follow_ups``).
        self.limit = limit
        #: Spool lines whose held job no read has found yet.
        self.announced = 0
        #: The last wake-up (wall clock): a follow-up's jobs were announced by it.
        self.woke: float | None = None
        self.left = 0
        #: Ids held with the marker at the last read (to tell the new ones).
        self.known: set[int] = set()

    def wake(self, at: float) -> None:
        """A spool wake-up at `at`: the chain may run `limit` follow-ups from now."""
        self.woke = at
        self.left = self.limit

    def follow_up(self) -> float | None:
        """Before a sweep that no wake-up started: the wake-up it follows (one follow-up
        used), or None when it is not a follow-up (periodic)."""
        if self.announced <= 0:
            return None
        self.left -= 1
        return self.woke

    def read(self, lines: int, held: Iterable[int]) -> None:
        """A queue read: `lines` spool lines counted just before it, `held` the ids it found
        held with the marker."""
        now = set(held)
        self.announced = max(self.announced + lines - len(now - self.known), 0)
        self.known = now

    def wanted(self) -> bool:
        """After the sweep: whether to follow up (else the chain ends here)."""
        if self.announced > 0 and self.left > 0:
            return True
        self.announced = 0
        return False
