"""The real strong-scaling curves the benchmarks score on, their sources, and the split protocols.

Three sets, all measured by others on real machines (provenance in each folder's README):

* development: tests/data/scaling/*.csv and tests/data/scaling/more/*.csv. Constants of the
  predictor may be chosen on them, leave-one-group-out when a benchmark scores them;
* unseen: tests/data/scaling/unseen/*.csv, on which no constant is ever chosen (its README).

Curves from one source repository (another problem size, kernel or parallel runtime of the same
study, measured on the same machine) are siblings: `group` maps each to its source, and a
leave-one-out over curves leaves out the whole group, so no constant is chosen on a sibling of
the curve it is scored on. Exact duplicates of a curve (scaling-more's athenak_polaris_gpu and
particle_mesh_openmp) were never copied here, so every curve counts once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from predictor.downey import FloatArray

DATA = Path(__file__).resolve().parents[1] / "data" / "scaling"
DEVELOPMENT = (DATA, DATA / "more")
UNSEEN = DATA / "unseen"

#: The source (repository) of every curve that shares it with another; the others are their
#: own group. From the READMEs' source columns.
SOURCE = {
    "bfs1d_livejournal": "Xhether/cs5220-project",
    "bfs1d_roadnet_ca": "Xhether/cs5220-project",
    "bfs2d_livejournal": "Xhether/cs5220-project",
    "cs267hw4_mpi_N1e6": "charisliao/cs267-hw4",
    "cs267hw4_mpi_N1e5": "charisliao/cs267-hw4",
    "gamer_fdm_wave_only": "KunkelAlexander/hybrid-scheme-for-fdm-plots",
    "gamer_fdm_hybrid": "KunkelAlexander/hybrid-scheme-for-fdm-plots",
    "hpc_assignment2_openmp": "erikalena/hpc_assignment2",
    "hpc_assignment2_mpi": "erikalena/hpc_assignment2",
    "npb_cg_C_rpi_cluster": "JohnnyPol/Pi_Cluster-ECE_NTUA_2024-2025",
    "npb_mg_C_rpi_cluster": "JohnnyPol/Pi_Cluster-ECE_NTUA_2024-2025",
    "npb_ep_D_rpi_cluster": "JohnnyPol/Pi_Cluster-ECE_NTUA_2024-2025",
    "npb_ft_C_rpi_cluster": "JohnnyPol/Pi_Cluster-ECE_NTUA_2024-2025",
    "vlasiator_mahti_medium": "lkotipal/vlasiator",
    "vlasiator_lumi_light": "lkotipal/vlasiator",
    "vlasiator_lumi_heavy": "lkotipal/vlasiator",
    "giraph_iga_adi_12288": "kboom/iga-adi-giraph",
    "giraph_iga_adi_24576": "kboom/iga-adi-giraph",
    "flock_numba_joblib": "fywu85-archive/cs267-project",
    "flock_numba_ray": "fywu85-archive/cs267-project",
}

VARIANTS = ("as measured", "T(1) not observed")
#: The holdout protocols of the outside measurement (3 sizes given, the first half given),
#: and every 3-size split that brackets the rest.
PROTOCOLS = ("interp", "interp, every 3rd", "extrap")
Split = tuple[NDArray[np.int64], NDArray[np.int64]]


@dataclass(frozen=True)
class RealCurve:
    name: str
    kind: str  # "development" or "unseen"
    n: NDArray[np.int64]
    runtime: FloatArray

    @property
    def group(self) -> str:
        return group(self.name)


def group(name: str) -> str:
    """The unit a leave-one-out over curves leaves out: the curve's source, or the curve."""
    return SOURCE.get(name, name)


def load(path: Path) -> tuple[NDArray[np.int64], FloatArray]:
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return data[:, 0].astype(np.int64), data[:, 1]


def real_curves(variant: str = "as measured") -> list[RealCurve]:
    """Every development and unseen curve (sorted by name within each set) in the variant;
    "T(1) not observed" drops n = 1 and keeps curves with 3 or more sizes left."""
    out = []
    sets = [("development", folder) for folder in DEVELOPMENT] + [("unseen", UNSEEN)]
    for kind, folder in sets:
        for path in sorted(folder.glob("*.csv")):
            n, t = load(path)
            if variant == "T(1) not observed":
                n, t = n[n > 1], t[n > 1]
            if np.unique(n).size >= 3:
                out.append(RealCurve(path.stem, kind, n, t))
    return out


def splits(sizes: NDArray[np.int64]) -> dict[str, list[Split]]:
    """Per protocol the (given, predicted) size splits of one curve's distinct sizes:
    interp, the smallest, middle and largest given; interp, every 3rd, the smallest, the
    largest and each interior size in turn; extrap, the smaller half given (at least 2)."""
    inner = [np.array([sizes[0], sizes[k], sizes[-1]]) for k in range(1, len(sizes) - 1)]
    middle = np.array([sizes[0], sizes[len(sizes) // 2], sizes[-1]])
    half = max(len(sizes) // 2, 2)
    out: dict[str, list[Split]] = {
        "interp": [(middle, np.setdiff1d(sizes, middle))],
        "interp, every 3rd": [(g, np.setdiff1d(sizes, g)) for g in inner],
        "extrap": [(sizes[:half], sizes[half:])],
    }
    return {p: [(g, x) for g, x in cases if x.size] for p, cases in out.items()}


def curves(
    variant: str, folders: tuple[Path, ...] = (DATA,)
) -> Iterator[tuple[str, NDArray[np.int64], FloatArray]]:
    """(name, n, runtime) of every curve of `folders` (not recursing) in the variant, with 4
    or more distinct sizes."""
    for folder in folders:
        for path in sorted(folder.glob("*.csv")):
            n, t = load(path)
            if variant == "T(1) not observed":
                n, t = n[n > 1], t[n > 1]
            if np.unique(n).size >= 4:
                yield path.stem, n, t
