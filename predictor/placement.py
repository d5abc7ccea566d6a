"""Placement: runtime as a function of node count and tasks per node, for a fixed task count.

Ntagiou's speedup tree (the large-scale thesis, ch. 4.7 and 5.1, Pseudocode 4.1): with c
clones (nodes) and p MPI processes per clone, a node of the tree is predicted from its right
father (same clones, half the processes per clone) by the transition measured on one clone,

    S(c, 2p) = S(c, p) · f(2p) / f(p),

f(x) the speedup of x processes in one clone. Unrolled from the outer measurements
S(c, 1) = g(c) (c clones, one process each) this is the separable model

    S(c, p) = g(c) · f(p) / f(1),      so      log T(c, p) = log T₀ − log g(c) − log f(p):

the log runtime is a node-count effect plus a tasks-per-node effect. Given runs at any
(c, p) (not only the thesis' two outer rows), `fit_placement` estimates both effects by least
squares on log runtime, one coefficient per distinct node count and per distinct tasks per
node (a two-way additive model). A placement is predictable when its row lies in the row
space of the runs' design matrix: its node count and its tasks per node were each measured,
linked through runs that share one or the other (the tree's edges). Others are NaN: the model
does not guess a factor it never saw. A measured placement is predicted by the model too
(the geometric mean of its runs enters the fit), so noise is smoothed, not echoed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from predictor.downey import FloatArray

#: Relative tolerance of the row-space test (a placement is predictable when its indicator
#: row is reproduced by the projection to within this).
_RANK_TOL = 1e-9


@dataclass(frozen=True)
class PlacementModel:
    """The fitted separable model (module docstring).

    nodes, tasks_per_node: the distinct values measured, ascending. node_effect, tpn_effect:
    their log-runtime coefficients (minimum-norm solution: only sums of one of each are
    meaningful). basis: orthonormal basis of the design's row space (rows), for the
    predictability test. rms_log_residual: RMS of log(measured / fitted) over the runs.
    runs: how many runs; placements: how many distinct (nodes, tasks per node) among them.
    """

    nodes: tuple[int, ...]
    tasks_per_node: tuple[int, ...]
    node_effect: tuple[float, ...]
    tpn_effect: tuple[float, ...]
    basis: tuple[tuple[float, ...], ...]
    rms_log_residual: float
    runs: int
    placements: int

    def _rows(self, nodes: FloatArray, tpn: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Indicator rows for the placements and a mask of those whose factors were seen."""
        cn = np.asarray(self.nodes, dtype=float)
        cp = np.asarray(self.tasks_per_node, dtype=float)
        a = nodes[:, None] == cn[None, :]
        b = tpn[:, None] == cp[None, :]
        seen = a.any(axis=1) & b.any(axis=1)
        rows = np.concatenate([a, b], axis=1).astype(float)
        return rows, seen

    def runtime(self, nodes: ArrayLike, tasks_per_node: ArrayLike) -> FloatArray:
        """Predicted runtime T(c, p) = exp(node_effect[c] + tpn_effect[p]); NaN where the
        placement is not predictable from the runs (module docstring)."""
        c = np.atleast_1d(np.asarray(nodes, dtype=float))
        p = np.atleast_1d(np.asarray(tasks_per_node, dtype=float))
        c, p = np.broadcast_arrays(c, p)
        rows, seen = self._rows(c, p)
        coef = np.concatenate([self.node_effect, self.tpn_effect])
        basis = np.asarray(self.basis, dtype=float).reshape(-1, coef.size)
        projected = (rows @ basis.T) @ basis
        in_space = np.all(np.abs(projected - rows) <= _RANK_TOL * 10.0, axis=1)
        out: FloatArray = np.where(seen & in_space, np.exp(rows @ coef), np.nan)
        return out


def fit_placement(
    nodes: ArrayLike, tasks_per_node: ArrayLike, runtime: ArrayLike
) -> PlacementModel:
    """Fit log T(c, p) = a_c + b_p by least squares (module docstring).

    Parameters
    ----------
    nodes, tasks_per_node, runtime : shape (k,) each; whole numbers ≥ 1 and runtimes > 0
        (seconds). Repeated placements are averaged in log space by the fit itself.

    Raises ValueError naming the argument when shapes differ or values are out of range.
    """
    c = np.asarray(nodes, dtype=float).ravel()
    p = np.asarray(tasks_per_node, dtype=float).ravel()
    t = np.asarray(runtime, dtype=float).ravel()
    if not c.size == p.size == t.size:
        raise ValueError("nodes, tasks_per_node and runtime must have the same length")
    if c.size == 0:
        raise ValueError("runtime: at least one run is needed")
    for name, v in (("nodes", c), ("tasks_per_node", p)):
        if not np.all(np.isfinite(v)) or np.any(v < 1) or np.any(v != np.round(v)):
            raise ValueError(f"{name} must be whole numbers ≥ 1")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError("runtime must be finite and positive")
    cn, ci = np.unique(c, return_inverse=True)
    cp, pi = np.unique(p, return_inverse=True)
    design = np.zeros((t.size, cn.size + cp.size))
    design[np.arange(t.size), ci] = 1.0
    design[np.arange(t.size), cn.size + pi] = 1.0
    y = np.log(t)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    _, s, vt = np.linalg.svd(design, full_matrices=False)
    rank = int(np.sum(s > s[0] * _RANK_TOL))
    residual = y - design @ coef
    return PlacementModel(
        nodes=tuple(int(x) for x in cn),
        tasks_per_node=tuple(int(x) for x in cp),
        node_effect=tuple(float(x) for x in coef[: cn.size]),
        tpn_effect=tuple(float(x) for x in coef[cn.size :]),
        basis=tuple(tuple(float(x) for x in row) for row in vt[:rank]),
        rms_log_residual=float(np.sqrt(np.mean(residual**2))),
        runs=int(t.size),
        placements=int(np.unique(np.stack([c, p]), axis=1).shape[1]),
    )


def tasks_per_node(tasks: int, nodes: ArrayLike) -> FloatArray:
    """The most tasks any node holds when `tasks` are spread over `nodes`: ⌈tasks / nodes⌉
    (Slurm's block distribution puts that many on the first nodes; the busiest node sets the
    pace of a bulk-synchronous code)."""
    n = np.asarray(nodes, dtype=float)
    out: FloatArray = np.ceil(tasks / n)
    return out
