"""Every assumption a simulation still makes, one line each, with what it favours.

The simulator's figures are a measurement under assumptions; each line here is printed with
them (``adaptalloc simulate``'s text and JSON, the benchmark) and in the docs
(docs/science/what-if-assumptions.md, which tests/unit/simulation checks lists every key).
`assumptions(setup)` fills in the run's own numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies.simulation.experiment import Setup
from policies.simulation.learning import DEBOUNCE_S, INTERVAL_S, SPARSE_WINDOW, WINDOW
from policies.simulation.world import describe


@dataclass(frozen=True)
class Assumption:
    """One assumption: a short key, what is assumed, and whom it favours."""

    key: str
    assumed: str
    favours: str

    def line(self) -> str:
        return f"{self.assumed} Favours: {self.favours}"


def assumptions(setup: Setup) -> tuple[Assumption, ...]:
    """The assumptions of a simulation run with `setup` (module doc)."""
    world = describe(setup.world, setup.factor, setup.parallelism)
    learner = (
        f"each {INTERVAL_S:g} s round refits the keys whose runs changed {DEBOUNCE_S:g} s ago "
        f"or more, on their newest {WINDOW} runs"
        if setup.refits == "daemon"
        else f"sparse: only once the runs grew by half, on the latest {SPARSE_WINDOW}"
    )
    return (
        Assumption(
            "curve_family",
            "Run times at other sizes follow a Downey curve (A, σ ~ U[0, 2]) through the "
            "trace's run time at the requested size, times lognormal run noise "
            f"(σ {setup.noise:g}); real codes also plateau, slow down past a size or jump.",
            "adaptive and the oracles: the learner fits the very model family the truth is "
            "drawn from.",
        ),
        Assumption(
            "world",
            f"World model {setup.world}: {world}.",
            "cirne favours greedy (every range holds useful extra nodes); overask favours "
            "adaptive (sizing down pays); downey lies between. Compare all three.",
        ),
        Assumption(
            "hidden_applications",
            f"Hidden applications: 1 to {setup.codes_per_key} behind each learner key, each "
            f"shared with an earlier key with probability {setup.shared_codes:g}; all jobs of "
            "one hidden application share one curve (synthetic: no trace records which code "
            "ran).",
            "adaptive: one curve per hidden application is easier to learn than codes whose "
            "curve moves with every input.",
        ),
        Assumption(
            "moldable",
            f"Every completed job is submitted as the range [{setup.moldable.low:g}·r, "
            f"{setup.moldable.high:g}·r] of its request r.",
            "greedy and adaptive alike over rigid: real users submit few moldable jobs.",
        ),
        Assumption(
            "user_limits",
            "The user's limit is the trace's requested time as written, one for the whole "
            "range; the policies read it as written for the range's minimum "
            "(time_limit_reference = min).",
            "rigid: a job run below its request (greedy on a busy machine, adaptive by the "
            "ratio to the minimum) may outrun a limit written for r.",
        ),
        Assumption(
            "modelled_limits",
            "Where a trace has no requested time, the limit is drawn from Tsafrir, Etsion and "
            "Feitelson's model (JSSPP 2005: modal round values, estimate ≥ run time at r, "
            "random assignment; the popularity ranks of the head values matched uniformly, a "
            "simplification).",
            "the policies that shorten limits (adaptive, rigid_limits): such limits are "
            "generous, so shortening them gains backfilling at little risk of a kill.",
        ),
        Assumption(
            "resubmission",
            "A killed job's user submits it again at once (no think time), same range, the "
            "limit doubled up to the partition's longest limit; killed there, the user gives "
            "up.",
            "the policies that kill more (adaptive's shortened limits): a real user notices "
            "a kill later, so a kill costs more than counted here.",
        ),
        Assumption(
            "recorded_jobs",
            "Failed and cancelled trace jobs run as recorded (their size, their run time) "
            "under every policy; status unknown (-1) is taken as completed.",
            "no policy; the recorded jobs pull every ratio towards 1.",
        ),
        Assumption(
            "learner",
            f"Learned curves: ADEPT fits of each key's earlier completed runs, at the "
            f"learner's cadence ({learner}); the learner's model choice is not run; killed "
            "runs are not observations.",
            "greedy, slightly: the daemon's model choice could fit some keys better.",
        ),
        Assumption(
            "oracles",
            "oracle (true curve + own run time) knows each job's curve and its run time; "
            "oracle (curve shape only) knows the hidden application's curve and its typical "
            "run time, not the job's.",
            "the oracles, by design: upper bounds no site reaches, the first one far above "
            "any learner.",
        ),
        Assumption(
            "scheduler",
            f"One partition{_max_nodes(setup)}, nodes counted not placed, FCFS with EASY "
            "backfilling; loads reached by scaling the trace's inter-arrival times.",
            "greedy, slightly: no placement cost for the large allocations it takes.",
        ),
    )


def _max_nodes(setup: Setup) -> str:
    """The partition's MaxNodes, when one is set below the machine."""
    if setup.job_nodes >= setup.machine:
        return ""
    return (
        f" whose jobs take at most {setup.job_nodes:,} of its {setup.machine:,} nodes "
        "(MaxNodes: ranges and requests above it cut to it under every policy)"
    )
