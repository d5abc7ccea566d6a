"""User time limits for traces that record none: Tsafrir, Etsion and Feitelson's model.

Some traces (NASA iPSC/860, Lublin's model) give no requested time. A limit made from the job's
own run time (a multiple of it, rounded) would hand every policy a near-oracle of each run's
length, which no site has. The limits come instead from the published model of user runtime
estimates (D. Tsafrir, Y. Etsion and D. G. Feitelson, "Modeling user runtime estimates",
JSSPP 2005, LNCS 3834, pp. 1-35; its authors' generator, est_model.cc): users pick from a
handful of round values, and a log's estimates are a histogram of such values assigned to
its jobs at random, subject only to estimate ≥ run time (a completed job ran within its
limit).

The histogram, for n jobs and a maximal estimate E (the model's default: the longest run;
here rounded up to whole hours, at least one hour, as the model requires):

* K distinct values, interpolated linearly in the model's table of K against n (BINS);
* the head: E, the 15 values common to the four logs the model was fitted on (5, 10, 15, 20,
  30 min; 1, 2, 3, 4, 5, 6, 8, 10, 12, 18 h) below E, completed to TOP = 20 with round
  multiples below E (ROUND_STEPS, largest step first); together HEAD_SHARE = 89% of the jobs.
  E is the most popular; popularity ranks x = 2..20 hold a·e^(b·x) + c percent (HEAD_SIZE),
  E the rest of the 89%. The ranks 2..20 are matched to the values uniformly at random (the
  model's matching follows rank tables of its four logs: a simplification, said so);
* the tail: the other K − 20 values at E·(a−1)·x/(a−x) for x = k/(K−20), a = 1 + p·K^q
  (TAIL_TIME), in whole minutes, duplicates dropped; shares a·x^b percent for ranks x = 21..
  (TAIL_SIZE), scaled to the other 11% and matched at random.

Counts are ⌊share · n⌋, the remainder going to E. The assignment is the model's: jobs by run
time, longest first, each draws uniformly among the estimates not yet taken that are ≥ its
run time. When the histogram cannot cover the longest runs (more runs near E than E's
share), those runs' estimates are raised to E (`ModelledLimits.raised` counts them).
The assignment is one pass in run-time order, each draw depending on the ones before (a
Python loop over jobs, ~10 ms for 10,000; once per trace and seed).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from policies.simulation.workload import TraceJob
from predictor.downey import FloatArray

MINUTE = 60.0
HOUR = 3600.0
#: The 15 estimates among the 20 most popular in all four logs of the model (seconds).
JOINT = tuple(MINUTE * m for m in (5, 15, 10, 20, 30)) + tuple(
    HOUR * h for h in (1, 2, 3, 4, 5, 6, 8, 10, 12, 18)
)
#: Round steps completing the head to TOP values, largest first (seconds).
ROUND_STEPS = tuple(HOUR * h for h in (200, 100, 50, 10, 5, 2, 1)) + tuple(
    MINUTE * m for m in (20, 10, 5)
)
TOP = 20
#: The share of jobs whose estimate is one of the TOP values.
HEAD_SHARE = 0.89
#: size(x) = a·e^(b·x) + c percent for popularity ranks x = 2..TOP.
HEAD_SIZE = (14.0491, -0.177531, 0.462513)
#: size(x) = a·x^b percent for popularity ranks x > TOP (scaled to the tail's share).
TAIL_SIZE = (795.6, -2.267)
#: The tail's time shape parameter a = 1 + p·K^q.
TAIL_TIME = (12.1039, -0.6026)
#: (jobs, distinct estimates): the model's linear table of K against n.
BINS = ((0, 0), (20, 10), (200, 20), (1000, 35), (10000, 90), (70000, 340), (250000, 565))


@dataclass(frozen=True)
class ModelledLimits:
    """The jobs with modelled limits, and what the model did: distinct values used, the
    maximal estimate E (s), how many jobs got one, and how many had to be raised to E."""

    jobs: tuple[TraceJob, ...]
    values: int
    max_estimate: float
    modelled: int
    raised: int


def bin_count(jobs: int) -> int:
    """K: the number of distinct estimates of `jobs` jobs (BINS, linear; the last beyond)."""
    xs, ys = zip(*BINS, strict=True)
    return max(1, round(float(np.interp(jobs, xs, ys))))


def head_values(max_estimate: float) -> list[float]:
    """E, then the JOINT values below E, completed to TOP with ROUND_STEPS multiples below E."""
    values = [max_estimate] + [v for v in JOINT if v < max_estimate]
    for step in ROUND_STEPS:
        value = math.floor(max_estimate / step) * step
        while value > 0 and len(values) < TOP:
            if value not in values:
                values.append(value)
            value -= step
    return values[:TOP]


def histogram(jobs: int, max_estimate: float, rng: np.random.Generator) -> tuple[FloatArray, ...]:
    """(values in seconds, how many jobs get each) of the module doc; E is values[0]."""
    head = head_values(max_estimate)
    a, b, c = HEAD_SIZE
    ranks = np.arange(2, len(head) + 1, dtype=float)
    others = a * np.exp(b * ranks) + c
    head_share = np.concatenate([[100.0 * HEAD_SHARE - others.sum()], rng.permutation(others)])
    tail_count = max(0, bin_count(jobs) - len(head))
    tail: list[float] = []
    if tail_count:
        p, q = TAIL_TIME
        shape = 1.0 + p * (len(head) + tail_count) ** q
        x = np.arange(1, tail_count + 1) / tail_count
        minutes = np.maximum(1.0, np.round(max_estimate * (shape - 1.0) * x / (shape - x) / 60))
        tail = [v for v in dict.fromkeys((MINUTE * minutes).tolist()) if v not in head]
    if tail:
        ta, tb = TAIL_SIZE
        sizes = ta * np.arange(TOP + 1, TOP + 1 + len(tail), dtype=float) ** tb
        tail_share = rng.permutation(sizes / sizes.sum() * 100.0 * (1.0 - HEAD_SHARE))
        share = np.concatenate([head_share, tail_share])
    else:
        share = head_share * 100.0 / head_share.sum()
    values = np.array(head + tail)
    counts = np.floor(share * jobs / 100.0).astype(np.int64)
    counts[0] += jobs - int(counts.sum())
    return values, counts.astype(float)


def assign(
    runtimes: FloatArray, values: FloatArray, counts: FloatArray, rng: np.random.Generator
) -> tuple[FloatArray, int]:
    """(each job's estimate, how many were raised to E): the model's assignment (module doc)."""
    estimates = np.sort(np.repeat(values, counts.astype(np.int64)))[::-1].copy()
    order = np.argsort(-runtimes, kind="stable")
    r = runtimes[order]
    top = float(values[0])
    raised = 0
    while True:  # each round only raises values, so the sorted estimates only grow
        short = estimates < r
        if not short.any():
            break
        raised += int(short.sum())
        estimates[short] = top
        estimates = np.sort(estimates)[::-1].copy()
    # hi[j]: the last position (in the descending estimates) still ≥ r[j]
    hi = np.searchsorted(-estimates, -r, side="right") - 1
    draw = rng.random(len(r))
    pool = estimates.tolist()
    out = np.empty(len(r))
    for j in range(len(r)):
        k = j + int(draw[j] * (hi[j] - j + 1))
        out[j] = pool[k]
        pool[k] = pool[j]
    result = np.empty(len(r))
    result[order] = out
    return result, raised


def max_estimate(runtimes: Sequence[float]) -> float:
    """E: the longest run rounded up to whole hours, at least one hour (module doc)."""
    return HOUR * max(1, math.ceil(max(runtimes) / HOUR - 1e-9))


def model_limits(jobs: Sequence[TraceJob], rng: np.random.Generator) -> ModelledLimits:
    """`jobs` with every limit the trace did not give (limit_given False) drawn from the
    model (module doc); the others as they are."""
    missing = [i for i, j in enumerate(jobs) if not j.limit_given]
    if not missing:
        return ModelledLimits(tuple(jobs), 0, 0.0, 0, 0)
    runtimes = np.array([jobs[i].runtime for i in missing])
    top = max_estimate(runtimes.tolist())
    values, counts = histogram(len(missing), top, rng)
    estimates, raised = assign(runtimes, values, counts, rng)
    out = list(jobs)
    for i, limit in zip(missing, estimates.tolist(), strict=True):
        out[i] = dataclasses.replace(jobs[i], limit=limit)
    return ModelledLimits(tuple(out), int(np.count_nonzero(counts)), top, len(missing), raised)
