"""Applications of a trace and their one true speedup curve each.

A site's daemon learns per application, so the simulator groups the trace's jobs the way the
daemon would name them:

* by the SWF executable number (field 14) where the trace has one: ``exe-<n>``;
* else by user and requested-size class, ``user-<u>-size-<2^k>`` with 2^k ≤ r < 2^(k+1):
  one user's jobs of about the same size are taken to be one code (``size-<2^k>`` when the
  trace has no user either). `Applications.grouping` says which was used for how many jobs.

Each application gets one true Downey curve (A, σ); every run of it follows that curve:

    A   = min(max_parallelism, r_app · F),   F ~ U[f_lo, f_hi]  (default U[1, 4])
    σ   ~ U[0, 2]                                                (Downey 1997, ch. 3.2)

with r_app the median requested size of the application's jobs. Tying A to the request is
Cirne and Berman's reading of moldability ("A model for moldable supercomputer jobs", IPDPS
2001): users ask for sizes at which their code still speeds up, so the request is a lower
bound of its parallelism, up to a few times below it. U[1, 4] is a synthetic assumption of
that kind (the `--parallelism-factor` option changes it), not fitted to a log.

A job's run time on n nodes is its trace run time T_r at its request r, moved along the
application's curve and multiplied by the run's noise ε_i (lognormal, σ_ε = noise, default
5%; drawn once per job so that every policy meets the same noise):

    T_i(n) = T_r · τ(n)/τ(r) · ε_i

All draws come from one seeded generator: applications in order of first appearance, then jobs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from policies.simulation.workload import SIGMA_MAX, DowneyDraws, TraceJob
from predictor.downey import FloatArray, IntArray

#: Default range of F in A = r_app · F.
PARALLELISM_FACTOR = (1.0, 4.0)
#: Default σ_ε of the multiplicative run noise.
RUN_NOISE = 0.05
EXECUTABLE = "executable"
USER_SIZE = "user + size class"


@dataclass(frozen=True, eq=False)
class Applications:
    """The trace's applications: `index[i]` is job i's application, `names[a]` its key."""

    index: IntArray
    names: tuple[str, ...]
    #: How many jobs were grouped by executable and by user + size class.
    grouping: dict[str, int]

    def __len__(self) -> int:
        return len(self.names)


def size_class(nodes: int) -> int:
    """2^⌊log2 nodes⌋: the size class of a request."""
    return 1 << (int(nodes).bit_length() - 1)


def app_key(job: TraceJob) -> str:
    """The application's key (module doc)."""
    if job.executable is not None:
        return f"exe-{job.executable}"
    cls = size_class(job.nodes)
    return f"size-{cls}" if job.user is None else f"user-{job.user}-size-{cls}"


def group(jobs: Sequence[TraceJob]) -> Applications:
    """Each job's application, numbered in order of first appearance."""
    numbers: dict[str, int] = {}
    index = np.empty(len(jobs), dtype=np.int64)
    by_exe = 0
    for i, job in enumerate(jobs):
        index[i] = numbers.setdefault(app_key(job), len(numbers))
        by_exe += job.executable is not None
    return Applications(index, tuple(numbers), {EXECUTABLE: by_exe, USER_SIZE: len(jobs) - by_exe})


def time_class(limit_s: float) -> int:
    """⌊log2(limit in minutes)⌋ (0 below two minutes): the requested-time class of a job."""
    return max(0, math.floor(math.log2(max(limit_s, 60.0) / 60.0)))


def by_time_class(jobs: Sequence[TraceJob], apps: Applications) -> Applications:
    """The learner's keys when it keys by (application, requested-time class): each
    application's jobs split by `time_class` of their limit, a proxy for the problem size
    known at submit time (the trace's requested time; on a trace without one, the modelled
    user estimate, workload.user_estimate, which is made from the run time: optimistic)."""
    numbers: dict[str, int] = {}
    index = np.empty(len(jobs), dtype=np.int64)
    for i, job in enumerate(jobs):
        key = f"{apps.names[apps.index[i]]}-t{time_class(job.limit)}"
        index[i] = numbers.setdefault(key, len(numbers))
    return Applications(index, tuple(numbers), dict(apps.grouping))


@dataclass(frozen=True, eq=False)
class TrueCurves:
    """Per application A and σ; per job the run noise ε_i (module doc)."""

    A: FloatArray
    sigma: FloatArray
    noise: FloatArray

    def per_job(self, apps: Applications) -> DowneyDraws:
        """Each job's application's (A, σ), as JobCurves takes them."""
        return DowneyDraws(A=self.A[apps.index], sigma=self.sigma[apps.index])


def draw_true_curves(
    jobs: Sequence[TraceJob],
    apps: Applications,
    seed: int,
    max_parallelism: float,
    factor: tuple[float, float] = PARALLELISM_FACTOR,
    noise: float = RUN_NOISE,
) -> TrueCurves:
    """A = min(max_parallelism, r_app·F), F ~ U[factor], σ ~ U[0, 2], ε ~ LogNormal(0, noise)."""
    lo, hi = factor
    if not (math.isfinite(lo) and math.isfinite(hi) and 0.0 < lo <= hi):
        raise ValueError(f"parallelism factor must be 0 < LOW ≤ HIGH, got {lo:g},{hi:g}")
    if not (math.isfinite(noise) and 0.0 <= noise <= 1.0):
        raise ValueError(f"run noise must be in [0, 1], got {noise:g}")
    if not (math.isfinite(max_parallelism) and max_parallelism >= 1.0):
        raise ValueError(f"max_parallelism must be finite and ≥ 1, got {max_parallelism}")
    count = len(apps)
    requested = np.array([float(j.nodes) for j in jobs])
    order = np.argsort(apps.index, kind="stable")
    bounds = np.searchsorted(apps.index[order], np.arange(count + 1))
    median = np.array(
        [np.median(requested[order[bounds[a] : bounds[a + 1]]]) for a in range(count)]
    )
    rng = np.random.default_rng(seed)
    u = rng.random((count, 2))
    A = np.clip(median * (lo + (hi - lo) * u[:, 0]), 1.0, max_parallelism)
    eps = np.exp(noise * rng.standard_normal(len(jobs)))
    return TrueCurves(A=A, sigma=SIGMA_MAX * u[:, 1], noise=eps)
