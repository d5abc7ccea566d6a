"""What the simulation takes to be true and no policy sees: hidden applications, their speedup
curves, the run noise.

Hidden applications. The learner groups jobs by a key the daemon can read (applications.py:
the executable, else user + requested-size class). What really runs is drawn apart from that
key, so that a key may mix several codes and inputs and one code may show up under several
keys, the main real-world risk of learning per application:

    m_k ~ U{1, ..., codes_per_key}      hidden applications behind learner key k
    each of them: with probability `shared` one of the hidden applications drawn for the
                  keys before k (uniformly), else a new one
    each job of key k runs one of its key's m_k, uniformly

A hidden application is one code with one kind of input: one true curve. codes_per_key = 1
and shared = 0 make the learner's grouping exact (each key one hidden application, the
simulator before this module). The defaults (CODES_PER_KEY = 3, SHARED = 0.2) are a synthetic
assumption, not fitted to any log: no public trace records which code a job ran.

World models: how a hidden application's average parallelism A relates to its request, r_h
(the median request of its jobs). This decides who wins: when every range holds useful extra
nodes, taking as many as are free (greedy) is close to optimal; when users over-ask, sizing
down pays.

    cirne     A = min(M, r_h·F), F ~ U[1, 4]      users never ask beyond their code's
              parallelism (Cirne and Berman, "A model for moldable supercomputer jobs",
              IPDPS 2001, read as: the request is a lower bound of A)
    downey    A = M^U, U ~ U[0, 1]                A log-uniform on [1, M] whatever the
              request (Downey, "A parallel workload model and its implications for
              processor allocation", HPDC 1997)
    overask   A = max(1, r_h·F), F ~ U[0.25, 1]   users ask for up to four times more
              nodes than their code uses (synthetic)

with M the largest parallelism (the machine's size unless given) and σ ~ U[0, 2] in every
world (Downey 1997). F's range is the world's default unless the caller gives one (cirne and
overask only). Each job's run noise is ε_i ~ LogNormal(0, noise), drawn once so that every
policy meets the same.

All draws come from one Generator(seed): hidden applications, then curves (u_A, u_σ per
hidden application in order of creation), then noise (per job in trace order).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from policies.simulation.applications import Applications
from policies.simulation.workload import SIGMA_MAX, DowneyDraws, TraceJob, group_median
from predictor.downey import FloatArray, IntArray

#: Default hidden applications behind one learner key (at most), and the chance that one of
#: them is shared with an earlier key (module doc: synthetic).
CODES_PER_KEY = 3
SHARED = 0.2
#: Default σ_ε of the multiplicative run noise.
RUN_NOISE = 0.05


@dataclass(frozen=True)
class World:
    """One world model: its name, F's default range (None: A does not depend on the
    request) and how it is said in the output."""

    name: str
    factor: tuple[float, float] | None
    says: str


WORLDS: Mapping[str, World] = MappingProxyType(
    {
        "cirne": World(
            "cirne",
            (1.0, 4.0),
            "A = median request × U[{lo:g}, {hi:g}]: users never ask beyond their code's "
            "parallelism (Cirne and Berman 2001)",
        ),
        "downey": World(
            "downey",
            None,
            "A log-uniform on [1, {cap:g}] whatever the request (Downey 1997)",
        ),
        "overask": World(
            "overask",
            (0.25, 1.0),
            "A = median request × U[{lo:g}, {hi:g}]: users ask for more nodes than their code "
            "uses (synthetic)",
        ),
    }
)
#: The world models, in the order they are reported.
WORLD_NAMES = tuple(WORLDS)


def describe(world: str, factor: tuple[float, float] | None, cap: float) -> str:
    """The world model in one phrase, with its numbers."""
    w = WORLDS[world]
    lo, hi = factor if factor is not None else w.factor or (0.0, 0.0)
    return w.says.format(lo=lo, hi=hi, cap=cap)


@dataclass(frozen=True, eq=False)
class Truth:
    """The hidden applications and their curves: `hidden[i]` job i's hidden application,
    A and σ per hidden application, ε per job."""

    hidden: IntArray
    A: FloatArray
    sigma: FloatArray
    noise: FloatArray

    def __len__(self) -> int:
        return len(self.A)

    def per_job(self) -> DowneyDraws:
        """Each job's hidden application's (A, σ), as JobCurves takes them."""
        return DowneyDraws(A=self.A[self.hidden], sigma=self.sigma[self.hidden])

    def keys_per_application(self, keys: Applications) -> float:
        """The mean number of learner keys a hidden application's jobs are found under."""
        pairs = np.unique(np.stack([self.hidden, keys.index]), axis=1)
        return float(pairs.shape[1] / len(np.unique(self.hidden)))

    def applications_per_key(self, keys: Applications) -> float:
        """The mean number of hidden applications behind one learner key."""
        pairs = np.unique(np.stack([self.hidden, keys.index]), axis=1)
        return float(pairs.shape[1] / len(keys))


def check(world: str, codes_per_key: int, shared: float, noise: float) -> None:
    """ValueError naming what is wrong with the world's settings."""
    if world not in WORLDS:
        raise ValueError(f"world must be one of {', '.join(WORLDS)}, got {world!r}")
    if isinstance(codes_per_key, bool) or not isinstance(codes_per_key, int) or codes_per_key < 1:
        raise ValueError(f"codes per key must be a whole number ≥ 1, got {codes_per_key!r}")
    if not (math.isfinite(shared) and 0.0 <= shared <= 1.0):
        raise ValueError(f"the shared-code probability must be in [0, 1], got {shared!r}")
    if not (math.isfinite(noise) and 0.0 <= noise <= 1.0):
        raise ValueError(f"run noise must be in [0, 1], got {noise:g}")


def hidden_applications(
    keys: Applications, codes_per_key: int, shared: float, rng: np.random.Generator
) -> IntArray:
    """Each job's hidden application (module doc), numbered in order of creation; one
    vectorised draw per step."""
    m = rng.integers(1, codes_per_key + 1, size=len(keys))
    fresh = rng.random(int(m.sum())) >= shared
    pick = rng.random(len(fresh))
    # Slots are laid out key after key; before[k]: the applications created by the slots of
    # the keys before k. A shared slot picks one of those; with none (the first keys) it is
    # a new one.
    first_slot = np.cumsum(m) - m
    key_of_slot = np.repeat(np.arange(len(keys)), m)

    def created_before() -> IntArray:
        out: IntArray = np.concatenate([[0], np.cumsum(fresh)])[first_slot][key_of_slot]
        return out

    fresh |= created_before() == 0
    before = created_before()
    app_of_slot = np.where(
        fresh, np.cumsum(fresh) - 1, np.floor(pick * np.maximum(before, 1)).astype(np.int64)
    )
    choice = np.floor(rng.random(len(keys.index)) * m[keys.index]).astype(np.int64)
    hidden = app_of_slot[first_slot[keys.index] + choice]
    # Renumber in order of first use by a job (applications no job drew are dropped).
    _, first_use = np.unique(hidden, return_index=True)
    order = np.argsort(first_use, kind="stable")
    renumber = np.empty(int(hidden.max()) + 1, dtype=np.int64)
    renumber[np.unique(hidden)[order]] = np.arange(len(order))
    out: IntArray = renumber[hidden]
    return out


def draw_truth(
    jobs: Sequence[TraceJob],
    keys: Applications,
    seed: int,
    max_parallelism: float,
    world: str = "cirne",
    factor: tuple[float, float] | None = None,
    noise: float = RUN_NOISE,
    codes_per_key: int = CODES_PER_KEY,
    shared: float = SHARED,
) -> Truth:
    """The hidden applications, their (A, σ) by the world model, and each job's ε (module
    doc). `jobs[i].nodes` is job i's request (in processors for node types, typed.py)."""
    check(world, codes_per_key, shared, noise)
    if not (math.isfinite(max_parallelism) and max_parallelism >= 1.0):
        raise ValueError(f"max_parallelism must be finite and ≥ 1, got {max_parallelism}")
    lo, hi = factor if factor is not None else WORLDS[world].factor or (1.0, 1.0)
    if not (math.isfinite(lo) and math.isfinite(hi) and 0.0 < lo <= hi):
        raise ValueError(f"parallelism factor must be 0 < LOW ≤ HIGH, got {lo:g},{hi:g}")
    rng = np.random.default_rng(seed)
    hidden = hidden_applications(keys, codes_per_key, shared, rng)
    u = rng.random((int(hidden.max()) + 1, 2))
    if WORLDS[world].factor is None:
        A = np.exp(u[:, 0] * math.log(max_parallelism))
    else:
        requested = np.array([float(j.nodes) for j in jobs])
        median = group_median(requested, hidden)
        A = median * (lo + (hi - lo) * u[:, 0])
    A = np.clip(A, 1.0, max_parallelism)
    eps = np.exp(noise * rng.standard_normal(len(jobs)))
    return Truth(hidden=hidden, A=A, sigma=SIGMA_MAX * u[:, 1], noise=eps)
