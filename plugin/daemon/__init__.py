"""``adaptalloc daemon``: sizes the moldable jobs the job_submit hook holds, failing open.

The pipeline, one module each:

* state.py    heartbeat, spool, journal, lock (what job_submit.lua and the daemon share)
* sweep.py    the queue sorted out: held jobs to decide, to finish, to release (watchdog)
* decider.py  one job to one outcome: app key, curve, load, policy; every failure fails open
* cluster.py  idle nodes, pending demand and partition limits, cached
* apply.py    outcomes to Slurm in few commands (writer.py), read back on failure
* record.py   the decision stream (once per job) and the ``decision`` log event
* marks.py    what the daemon writes in admin_comment; reasons.py the fail-open codes
* signals.py  SIGTERM (twice to force), SIGHUP, relayed to the loop by a thread (handlers
              take no lock); learning.py the learner thread
* loop.py     the loop that ties them together
"""

from plugin.daemon.loop import Daemon
from plugin.daemon.reasons import REASONS

__all__ = ["REASONS", "Daemon"]
