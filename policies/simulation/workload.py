"""The jobs of a trace and the speedup curve each one gets.

A trace job (`TraceJob`) is what a workload log records: when it was submitted, how many
nodes it asked for, how long it ran there, its time limit and whether it completed. The
simulator makes a completed job moldable (moldable.py), so it needs the job's runtime at
*other* sizes too. That comes from a speedup curve, one per job:

* the hidden application's true Downey curve (world.py draws them, apart from the key the
  learner groups jobs by), or Downey's workload model for one curve per job (`draw_downey`:
  A log-uniform on [1, max_parallelism], σ uniform on [0, 2], Downey 1997, the thesis'
  chapter 3.2; one seeded row (u_A, u_σ) per job in trace order);
* or a stored curve (the learner's, read from the store by the plugin) for jobs whose
  application has one; the rest keep the drawn curve.

A job the trace records as failed or cancelled (`completed` False) has no curve to follow:
it runs as recorded, its size and its run time, in every policy (`JobCurves.runtime` returns
the trace's run time at any size; the engine never resizes it).

Either way the trace fixes the job's work: its runtime at its requested size r is the trace's
run time T_r, and at n nodes

    T(n) = T_r · τ(n) / τ(r)

with τ the curve's relative runtime (`predictor.downey.relative_runtime`, or a stored curve's
runtime, whose scale cancels).

The adaptive policy reads a `predictor.Curve` of the same job, as the daemon reads the store.
For a workload-model job it is the exact model, built the way `Curve.from_fit` would build an
identified fit, observed at the moldable range's ends and the requested size (where the job's
past runs would have been); T(1) counts as known only when 1 is among them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from predictor import Curve
from predictor.downey import (
    FloatArray,
    IntArray,
    max_useful_size,
    processor_working_set,
    relative_runtime,
    relative_runtime_s,
    sigma_to_s,
)

#: SWF statuses of a job simulated as completed work: 1 (completed) and -1 (not recorded:
#: taken as completed, and counted where the trace is described).
COMPLETED_STATUSES = frozenset({1, -1})
#: Downey's workload model: σ is uniform on [0, SIGMA_MAX].
SIGMA_MAX = 2.0
#: The `method` of the curves the workload model gives the adaptive policy.
MODEL_METHOD = "downey-workload"


@dataclass(frozen=True)
class TraceJob:
    """One job of a workload trace (times in seconds).

    job_id: the trace's job number. submit: submit time. runtime: run time at the requested
    size, > 0. nodes: the requested size, ≥ 1. limit: the time limit, > 0: the trace's
    requested time as its user wrote it; when the trace has none, limit_given is False and
    `limit` is inf until the simulator draws it from a published model of user estimates
    (estimates.py), before any policy sees it (an inf limit reaching the engine is an
    error). executable: the trace's application number (SWF field 14), None when missing; it
    names the job's app in the store. user: the
    trace's user number (field 12) or None. processors: the trace's size in processors (SWF
    field 8, else 5) and partition: its partition number (field 16), None when missing; only
    node types use them (pools.py). status: the trace's (SWF field 11: 1 completed, 0 failed,
    5 cancelled, 2-4 partial runs, -1 unknown); `completed` for 1 and -1, any other is
    replayed as recorded.
    """

    job_id: int
    submit: float
    runtime: float
    nodes: int
    limit: float
    executable: int | None = None
    user: int | None = None
    limit_given: bool = True
    processors: int | None = None
    partition: int | None = None
    status: int = 1

    @property
    def completed(self) -> bool:
        """The trace says it completed, or does not say (SWF status 1 or -1)."""
        return self.status in COMPLETED_STATUSES

    def __post_init__(self) -> None:
        if not (math.isfinite(self.submit) and self.submit >= 0.0):
            raise ValueError(f"job {self.job_id}: submit must be finite and ≥ 0, got {self.submit}")
        if not (math.isfinite(self.runtime) and self.runtime > 0.0):
            raise ValueError(f"job {self.job_id}: runtime must be finite and > 0")
        if not (math.isfinite(self.limit) and self.limit > 0.0) and not (
            self.limit == math.inf and not self.limit_given
        ):
            raise ValueError(f"job {self.job_id}: limit must be finite and > 0")
        if isinstance(self.nodes, bool) or not isinstance(self.nodes, int) or self.nodes < 1:
            raise ValueError(f"job {self.job_id}: nodes must be a whole number ≥ 1")


@dataclass(frozen=True, eq=False)
class DowneyDraws:
    """Each job's (A, σ) from Downey's workload model; arrays of the jobs' length."""

    A: FloatArray
    sigma: FloatArray


def draw_downey(count: int, max_parallelism: float, seed: int) -> DowneyDraws:
    """A ~ log-uniform on [1, max_parallelism], σ ~ uniform on [0, 2], one row per job.

    Row i depends only on the seed and i: A_i = exp(u_i0 · ln max_parallelism),
    σ_i = 2 u_i1 with (u_i0, u_i1) the i-th row of `Generator(seed).random((count, 2))`.
    """
    if count < 0:
        raise ValueError(f"count must be ≥ 0, got {count}")
    if not (math.isfinite(max_parallelism) and max_parallelism >= 1.0):
        raise ValueError(f"max_parallelism must be finite and ≥ 1, got {max_parallelism}")
    u = np.random.default_rng(seed).random((count, 2))
    return DowneyDraws(
        A=np.exp(u[:, 0] * math.log(max_parallelism)),
        sigma=SIGMA_MAX * u[:, 1],
    )


def useful_sizes(A: FloatArray, sigma: FloatArray) -> tuple[list[int], list[int]]:
    """(max_useful_n, pws_n) per instance, as `Curve.from_fit` sets them: ⌈2A-1⌉ or ⌈A+Aσ-σ⌉,
    and the processor working set. One vectorised call for all jobs."""
    useful = np.ceil(max_useful_size(A, sigma) - 1e-9).astype(np.int64)
    pws = processor_working_set(A, sigma)
    return [int(m) for m in useful], [int(p) for p in pws]


def model_curve(
    A: float,
    sigma: float,
    t1: float,
    observed: Sequence[int],
    sizes: tuple[int, int] | None = None,
) -> Curve:
    """The exact Downey curve (A, σ, T(1)) as an identified fit observed at `observed`.

    `sizes` is (max_useful_n, pws_n) when already computed (`useful_sizes`).
    """
    if sizes is None:
        (useful,), (pws,) = useful_sizes(np.array([A]), np.array([sigma]))
    else:
        useful, pws = sizes
    seen = tuple(sorted(set(observed)))
    return Curve(
        A=A,
        sigma=sigma,
        t1=t1,
        t1_known=seen[0] == 1,
        identified=True,
        method=MODEL_METHOD,
        fit_error=0.0,
        max_useful_n=useful,
        pws_n=pws,
        observed_n=seen,
        runs=len(seen),
    )


def group_median(values: FloatArray, groups: IntArray) -> FloatArray:
    """The median of `values` within each group 0..max(groups), one vectorised pass: sort by
    (group, value), then average the one or two middle values of each group's run."""
    count = int(groups.max()) + 1 if len(groups) else 0
    order = np.lexsort((values, groups))
    g, v = groups[order], values[order]
    first = np.searchsorted(g, np.arange(count), side="left")
    size = np.searchsorted(g, np.arange(count), side="right") - first
    if np.any(size == 0):
        raise ValueError("every group needs at least one value")
    out: FloatArray = 0.5 * (v[first + (size - 1) // 2] + v[first + size // 2])
    return out


class JobCurves:
    """Every job's true runtime at any size, and the curves the oracles read.

    `stored` maps a job's executable number to a stored curve; jobs without one (or without
    an executable) use the drawn curve. `groups`: each job's hidden application (world.py),
    whose jobs share the curve-only oracle's scale; None: each job its own.
    """

    def __init__(
        self,
        jobs: Sequence[TraceJob],
        draws: DowneyDraws,
        stored: Mapping[int, Curve] | None = None,
        noise: FloatArray | None = None,
        groups: IntArray | None = None,
    ) -> None:
        if len(draws.A) != len(jobs) or len(draws.sigma) != len(jobs):
            raise ValueError(f"draws for {len(draws.A)} jobs, but {len(jobs)} jobs")
        if noise is not None and len(noise) != len(jobs):
            raise ValueError(f"noise for {len(noise)} jobs, but {len(jobs)} jobs")
        if groups is not None and len(groups) != len(jobs):
            raise ValueError(f"groups for {len(groups)} jobs, but {len(jobs)} jobs")
        self.jobs = jobs
        #: ε_i, each run's multiplicative noise (1 without noise, and for a job replayed as
        #: recorded).
        eps = np.ones(len(jobs)) if noise is None else np.asarray(noise, dtype=float)
        self.noise = [float(e) if j.completed else 1.0 for j, e in zip(jobs, eps, strict=True)]
        self.completed = [j.completed for j in jobs]
        self.A = [float(a) for a in draws.A]
        self.sigma = [float(s) for s in draws.sigma]
        # Each job's shape coordinate once (relative_runtime converts σ at every call).
        self._s = [float(s) for s in sigma_to_s(draws.sigma)]
        self._useful, self._pws = useful_sizes(draws.A, draws.sigma)
        # T(1) = T_r/τ(r), for all jobs at once.
        tau = relative_runtime(np.array([float(j.nodes) for j in jobs]), draws.A, draws.sigma)
        t1 = np.array([j.runtime for j in jobs]) / tau
        self._t1 = [float(t) for t in t1]
        hidden = np.arange(len(jobs)) if groups is None else np.asarray(groups, dtype=np.int64)
        #: The curve-only oracle's T(1): the median T(1) of the job's hidden application.
        self._typical_t1 = [float(t) for t in group_median(t1, hidden)[hidden]] if len(jobs) else []
        stored = stored or {}
        self.stored: list[Curve | None] = [
            stored.get(j.executable) if j.executable is not None else None for j in jobs
        ]

    def from_store(self, job: int) -> bool:
        return self.stored[job] is not None

    def _relative(self, job: int, sizes: list[float]) -> FloatArray:
        """τ at `sizes`, in the stored curve's or the model's scale."""
        curve = self.stored[job]
        if curve is not None:
            return curve.runtime(np.asarray(sizes))
        return relative_runtime_s(np.asarray(sizes), self.A[job], self._s[job])

    def runtime(self, job: int, n: int) -> float:
        """T(n) = T_r · τ(n)/τ(r) · ε; the trace's run time (times ε) at the requested size r;
        a job replayed as recorded runs its trace run time whatever n."""
        j = self.jobs[job]
        if n == j.nodes or not self.completed[job]:
            return j.runtime * self.noise[job]
        tau = self._relative(job, [float(n), float(j.nodes)])
        return j.runtime * float(tau[0] / tau[1]) * self.noise[job]

    def at_request(self) -> FloatArray:
        """Every job's run time at its requested size, T_r · ε (the slowdown's reference)."""
        out: FloatArray = np.array([j.runtime for j in self.jobs]) * np.asarray(self.noise)
        return out

    def scale(self, job: int, n: int, to: int) -> float:
        """τ(to)/τ(n): how a time at n nodes scales to `to` nodes on this job's curve."""
        if n == to:
            return 1.0
        tau = self._relative(job, [float(to), float(n)])
        return float(tau[0] / tau[1])

    def scales(self, n: Sequence[int], to: Sequence[int]) -> FloatArray:
        """τ(to_i)/τ(n_i) for every job i at once (one vectorised call for the model's jobs)."""
        nv = np.asarray(n, dtype=float)
        tv = np.asarray(to, dtype=float)
        if len(nv) != len(self.jobs) or len(tv) != len(self.jobs):
            raise ValueError("scales needs one size and one target per job")
        A, sigma = np.asarray(self.A), np.asarray(self.sigma)
        out: FloatArray = relative_runtime(tv, A, sigma) / relative_runtime(nv, A, sigma)
        for job, curve in enumerate(self.stored):
            if curve is not None:
                out[job] = self.scale(job, int(nv[job]), int(tv[job]))
        out[nv == tv] = 1.0
        return out

    def policy_curve(self, job: int, observed: Sequence[int]) -> Curve:
        """The oracle's curve (true curve + own run time): the stored one, else the exact
        model with T(1) in seconds from this job's own run time, T(1) = T_r/τ(r), observed
        at `observed`."""
        curve = self.stored[job]
        if curve is not None:
            return curve
        return model_curve(
            self.A[job],
            self.sigma[job],
            self._t1[job],
            observed,
            (self._useful[job], self._pws[job]),
        )

    def shape_curve(self, job: int, observed: Sequence[int]) -> Curve:
        """The curve-only oracle's curve: the true shape (A, σ) of the job's hidden
        application with its typical scale (module doc), observed at `observed`; a stored
        curve as it is (it has no run time of this job in it)."""
        curve = self.stored[job]
        if curve is not None:
            return curve
        return model_curve(
            self.A[job],
            self.sigma[job],
            self._typical_t1[job],
            observed,
            (self._useful[job], self._pws[job]),
        )
