"""The what-if simulator: replay a workload trace under the allocation policies, compare them.

Pure decision code, like the rest of policies/: no I/O, no logging. The plugin reads the trace
(plugin/formats/swf.py) and prints the comparison (plugin/cli/simulate.py).

    from policies.simulation import Experiment, Setup, POLICIES
    experiment = Experiment(jobs, Setup(machine=128, seed=1))
    results = {name: experiment.run(name) for name in POLICIES}

The modules, in the order a job meets them:

workload.py     trace jobs, run times on any size, the curves the oracles read
estimates.py    user limits for traces without any: Tsafrir, Etsion and Feitelson's model
applications.py the learner's keys: jobs grouped the way the daemon files runs
world.py        the truth no policy sees: hidden applications, world models, run noise
learning.py     the curves the daemon would have: fitted from the simulation's completed runs
moldable.py     the rule that makes a rigid job moldable, [⌈low·r⌉, ⌊high·r⌋]
sizing.py       the allocation each policy asks for: rigid, greedy
adaptive.py     the adaptive policy: `policies.decide` at submit, as the daemon runs it
engine.py       the event-driven scheduler: FCFS + EASY backfilling, kills at the time limit,
                killed jobs submitted again, failed and cancelled jobs run as recorded
backfill.py     EASY's reservation and the backfill rule (Lifka 1995; Mu'alem & Feitelson 2001)
metrics.py      response, wait, bounded slowdown, utilization, node-hours, waste
experiment.py   one trace under every policy with the same limits, truth and noise
sweep.py        offered loads × seeds, means and paired ratios with 95% intervals
assumptions.py  every assumption left, with whom it favours (printed with the figures)
pools.py        node types: pools of nodes, the partitions they run, jobs placed on them
pooled.py       several pools in one event loop, multi-partition routing
typed.py        one trace over node pools: true curves per type, learned per (app, pool)
"""

from policies.simulation.backfill import Reservation
from policies.simulation.engine import Schedule, simulate
from policies.simulation.experiment import (
    ALL_POLICIES,
    CURVES,
    POLICIES,
    REFITS,
    VARIANTS,
    Experiment,
    PolicyResult,
    Setup,
    compare,
)
from policies.simulation.metrics import SLOWDOWN_BOUND_S, Metrics, summarize, usage_over_time
from policies.simulation.moldable import MoldableRule
from policies.simulation.sizing import Allocation, ClusterView, Sizer
from policies.simulation.sweep import LoadResult, Summary, at_load, offered_load, sweep
from policies.simulation.workload import JobCurves, TraceJob, draw_downey

__all__ = [
    "ALL_POLICIES",
    "CURVES",
    "POLICIES",
    "REFITS",
    "SLOWDOWN_BOUND_S",
    "VARIANTS",
    "Allocation",
    "ClusterView",
    "Experiment",
    "JobCurves",
    "LoadResult",
    "Metrics",
    "MoldableRule",
    "PolicyResult",
    "Reservation",
    "Schedule",
    "Setup",
    "Sizer",
    "Summary",
    "TraceJob",
    "at_load",
    "compare",
    "draw_downey",
    "offered_load",
    "simulate",
    "summarize",
    "sweep",
    "usage_over_time",
]
