"""When an application's curve is worth refitting: the learner's refit cadence, one rule for
the daemon (plugin/learning/learner.py, `Learner.refit_dirty`) and the simulator
(policies/simulation/learning.py), so that both stay the same.

An application becomes *dirty* when its runs change; once dirty for the debounce
(``[learner] refit_debounce_s``), it is refitted when the refit is *due*:

    due  ⇔  g = 0                                   (every change: the rule before this cadence)
         ∨  no curve                                 (the last fit was refused or failed)
         ∨  added ≥ max(1, ⌈g·n⌉)                    (the runs grew by the fraction g)
         ∨  a run at a size the curve never saw      (not in the curve's `observed_n`)
         ∨  the curve is at least H old              (H = ``refit_max_age_h``; 0: never)

with n the runs the last fit saw, added the runs completed since, g = ``[learner]
refit_growth``. An application that is not due stays dirty and is looked at again at the next
round. Why: a refit on one more run of a hundred rarely moves the curve enough to change a
decision (tests/benchmarks/test_refit_cadence.py measures how rarely), yet each costs a fit
(and, in the daemon, the model choice and a store write).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["REFIT_GROWTH", "REFIT_MAX_AGE_S", "refit_due", "runs_needed"]

#: The default g ([learner] refit_growth): chosen on NASA, checked on Lublin and CEA-Curie
#: (tests/benchmarks/test_refit_cadence.py; docs/science/policy.md).
REFIT_GROWTH = 0.25
#: The default H in seconds ([learner] refit_max_age_h: 24); not chosen by data: it bounds
#: how stale a curve with new runs gets.
REFIT_MAX_AGE_S = 24 * 3600.0


def runs_needed(fitted_runs: int, growth: float) -> int:
    """max(1, ⌈g·n⌉): the runs to add to a fit of n runs before the refit is due."""
    return max(1, math.ceil(growth * fitted_runs - 1e-9))


def refit_due(
    *,
    growth: float,
    max_age_s: float | None,
    fitted_runs: int,
    added: int,
    observed: Iterable[int] | None,
    new_sizes: Iterable[int],
    age_s: float,
) -> bool:
    """The module doc's rule. `observed`: the curve's sizes (None: no curve); `new_sizes`:
    the sizes of the runs added since the fit; `age_s`: the curve's age."""
    if growth == 0.0 or observed is None or added >= runs_needed(fitted_runs, growth):
        return True
    if max_age_s is not None and age_s >= max_age_s:
        return True
    return not set(new_sizes) <= set(observed)
