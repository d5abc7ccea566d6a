"""Golden fits: what `fit_observations(method="adept")` + `Curve.from_fit` return on fixed data.

Recorded once (`python -m tests.unit.predictor.golden`) before the fit was made faster, so that
every speed-up is checked against the results of the code before it (test_golden.py): a test
cannot run the old code path once it is gone, its outputs can.

Data sets, all seeded:
* "sim": what the simulator's learner fits: 2-8 distinct sizes drawn from 1-128 nodes, 1-12
  runs per size, each run an exact Downey runtime (A log-uniform on [2, 500], σ uniform on
  [0, 1] or [1, 4], half each) times lognormal noise of 0, 2 or 5% (SYNTHETIC ASSUMPTION);
* "real": the real curves of tests/data/scaling/ as they are.
Recorded per data set: every field of the Fit (its envelope included) and of the Curve, and the
curve's runtime, speedup, efficiency, efficiency_vs_smallest and 90% runtime interval at SIZES;
or the ValueError's message where the predictor refuses the data.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

import predictor
from predictor.downey import relative_runtime

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "golden" / "adept_fits.json.gz"
SCALING = Path(__file__).resolve().parents[2] / "data" / "scaling"
SIZES = np.array([1, 2, 3, 5, 8, 13, 24, 32, 48, 64, 100, 128, 200, 256, 512, 1024], dtype=float)
SIM_CASES = 240
SEED = 20261123


def sim_case(rng: np.random.Generator) -> tuple[list[int], list[float]]:
    """One "sim" data set (module doc): the runs, sizes and run times, in arrival order."""
    A = float(np.exp(rng.uniform(np.log(2.0), np.log(500.0))))
    sigma = float(rng.uniform(0.0, 1.0) if rng.random() < 0.5 else rng.uniform(1.0, 4.0))
    noise = float(rng.choice([0.0, 0.02, 0.05]))
    k = int(rng.integers(2, 9))
    sizes = np.sort(rng.choice(np.arange(1, 129), size=k, replace=False))
    runs = rng.integers(1, 13, size=k)
    n = np.repeat(sizes, runs)
    t = 3600.0 * relative_runtime(n.astype(float), A, sigma) * np.exp(rng.normal(0, noise, n.size))
    order = rng.permutation(n.size)
    return [int(x) for x in n[order]], [float(x) for x in t[order]]


def real_cases() -> dict[str, tuple[list[int], list[float]]]:
    out = {}
    for path in sorted(SCALING.glob("*.csv")):
        with path.open() as fh:
            rows = list(csv.DictReader(fh))
        out[path.stem] = ([int(r["n"]) for r in rows], [float(r["runtime"]) for r in rows])
    return out


def cases() -> dict[str, tuple[list[int], list[float]]]:
    rng = np.random.default_rng(SEED)
    out = {f"sim{i:03d}": sim_case(rng) for i in range(SIM_CASES)}
    out.update({f"real:{k}": v for k, v in real_cases().items()})
    return out


def plain(value: Any) -> Any:  # noqa: PLR0911 - one return per kind of value
    """A JSON-able copy: dataclasses field by field, arrays as lists, non-finite floats named."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        return [plain(x) for x in value.tolist()]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(x) for x in value]
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


#: Curve fields added after the recording, left out while they hold their default (None): the
#: plain ADEPT fit never sets them (the covariate: predictor/heterogeneous.py).
LATER_FIELDS = ("covariate",)


def recorded_fields(curve: dict[str, Any]) -> dict[str, Any]:
    """The curve's fields as recorded: LATER_FIELDS left out where they are None."""
    return {k: v for k, v in curve.items() if not (k in LATER_FIELDS and v is None)}


def outputs(n: list[int], t: list[float]) -> dict[str, Any]:
    """Everything recorded of one data set (module doc)."""
    try:
        fit = predictor.fit_observations(predictor.prepare(n, t), method="adept")
    except ValueError as exc:
        return {"error": str(exc)}
    curve = predictor.Curve.from_fit(fit)
    lower, upper = curve.runtime_interval(SIZES)
    return {
        "fit": plain(fit),
        "curve": recorded_fields(plain(curve)),
        "runtime": plain(curve.runtime(SIZES)),
        "speedup": plain(curve.speedup(SIZES)),
        "efficiency": plain(curve.efficiency(SIZES)),
        "efficiency_vs_smallest": plain(curve.efficiency_vs_smallest(SIZES)),
        "lower": plain(lower),
        "upper": plain(upper),
        "fit_runtime": plain(fit.runtime(SIZES)),
    }


def mismatches(  # noqa: PLR0911 - one return per kind of value
    want: Any, got: Any, rtol: float, path: str = ""
) -> list[str]:
    """Where `got` differs from `want`: floats beyond rtol (relative), anything else at all."""
    if isinstance(want, dict) and isinstance(got, dict):
        if want.keys() != got.keys():
            return [f"{path}: keys {sorted(want)} != {sorted(got)}"]
        return [m for k in want for m in mismatches(want[k], got[k], rtol, f"{path}.{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: length {len(want)} != {len(got)}"]
        return [
            m
            for i, (a, b) in enumerate(zip(want, got, strict=True))
            for m in mismatches(a, b, rtol, f"{path}[{i}]")
        ]
    if isinstance(want, float) and isinstance(got, int | float) and not isinstance(got, bool):
        if abs(got - want) <= rtol * max(abs(want), abs(got)) or got == want:
            return []
        return [f"{path}: {want!r} != {got!r}"]
    if want != got or type(want) is not type(got):
        return [f"{path}: {want!r} != {got!r}"]
    return []


def record() -> None:
    doc = {"seed": SEED, "sizes": SIZES.tolist(), "cases": {}}
    for name, (n, t) in cases().items():
        doc["cases"][name] = outputs(n, t)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_bytes(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), mtime=0))


def load() -> dict[str, Any]:
    out: dict[str, Any] = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    return out


if __name__ == "__main__":
    record()
