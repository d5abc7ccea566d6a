"""``adaptalloc doctor``: checks a real install end to end, one module per group of checks.

* install.py: slurm.conf's JobSubmitPlugins and accounting lines; the hook module
  adaptalloc_submit.lua is this version's (sha256) and the site's job_submit.lua loads and
  calls it; adaptalloc_submit.conf's state_dir is the daemon's.
* access.py: SlurmUser may append to the spool and read the heartbeat; the heartbeat is fresh
  and not from the future.
* probe.py: the account may set AdminComment, NumNodes, TimeLimit and release (a held probe
  job of its own, cancelled); the clock offset to slurmctld.
* services.py: accounting answers (sacct); Redis answers with its credentials; the metrics
  endpoint is the daemon's, the one beating in this state directory.

What install-files puts where is pieces.py, how it treats files already there installer.py,
and how a site's job_submit.lua is read site_script.py.

Each check is a `Check` (check.py): name, ok/warn/fail, what it saw, the exact fix.
`run_checks` (run.py) runs them all; the click command is plugin/cli/doctor.py.
"""

from plugin.doctor.check import FAIL, OK, WARN, Check, document, failed, overall
from plugin.doctor.run import run_checks
from plugin.doctor.settings import DoctorSettings, slurm_conf_path

__all__ = [
    "FAIL",
    "OK",
    "WARN",
    "Check",
    "DoctorSettings",
    "document",
    "failed",
    "overall",
    "run_checks",
    "slurm_conf_path",
]
