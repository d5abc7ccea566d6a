"""Bounded work on user input: every array is bounded by design, not by OOM.

The hostile inputs run in a child process under resource.setrlimit(RLIMIT_AS): before the
bounds, 250 distinct sizes asked ~21 GB and a pair of sizes near 1e9 asked 7.45 GiB, so the
child failed with MemoryError; now it finishes well inside the limit.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import predictor
from predictor.downey import relative_runtime
from predictor.observations import MAX_NODES, MAX_SIZES, prepare, thin
from predictor.reliability import SCAN, sizes_below

REPO = Path(__file__).resolve().parents[3]
# Address space for the child: numpy + scipy import in ~0.5 GiB of it here; the bounded fits
# need ~100 MB more. The unbounded ones asked 7-21 GiB.
LIMIT_BYTES = 3 * 2**30


def run_limited(code: str) -> subprocess.CompletedProcess[str]:
    prelude = textwrap.dedent(
        f"""
        import resource, sys
        sys.path.insert(0, {str(REPO)!r})
        resource.setrlimit(resource.RLIMIT_AS, ({LIMIT_BYTES}, {LIMIT_BYTES}))
        import numpy as np
        import predictor
        from predictor.downey import relative_runtime
        """
    )
    return subprocess.run(  # noqa: S603 - this interpreter, our own code
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )


def test_250_distinct_sizes_fit_and_predict_within_bounded_memory() -> None:
    """Failed before the cap (MemoryError under the limit: ADEPT asked ~21 GB)."""
    done = run_limited(
        """
        n = np.arange(1.0, 251.0)
        t = 100 * relative_runtime(n, 120.0, 0.8)
        f = predictor.fit(n, t)
        p = predictor.predict(n, t, [300, 400])
        print(len(f.observations), len(f.observations.thinned), f.message)
        print(repr(float(abs(p[0] / (100 * relative_runtime(300.0, 120.0, 0.8)) - 1))))
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = done.stdout.splitlines()
    used, left_out, note = first.split(" ", 2)
    assert int(used) <= MAX_SIZES
    assert int(used) + int(left_out) == 250
    assert note.startswith(f"fitted on {used} of 250 distinct sizes")
    # Thinning keeps what the fit needs: exact data still predict the truth closely.
    assert float(second) < 0.02


def test_sizes_near_a_billion_are_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="n must be at most 16,777,216 nodes"):
        prepare([999_999_937, 999_999_999], [0.5, 0.3])


def test_disagreement_scan_is_bounded_whatever_the_smallest_size() -> None:
    """np.arange(1, n_min) asked 7.45 GiB at n_min near 1e9; failed before under the limit."""
    done = run_limited(
        """
        from predictor.reliability import Instance, ReliabilitySettings, disagreement_size
        a, b = Instance(3e8, 0.5, 1.0), Instance(9e8, 0.5, 1.0)
        print(disagreement_size(a, b, 999_999_937.0, 999_999_999.0, ReliabilitySettings()))
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("(")


@pytest.mark.parametrize("n_min", [1.0, 2.0, 7.0, 150.0, 201.0])
def test_sizes_below_few_are_all_scanned(n_min: float) -> None:
    assert np.array_equal(sizes_below(n_min), np.arange(1.0, n_min))


@pytest.mark.parametrize("n_min", [202.0, 5000.0, 999_999_937.0])
def test_sizes_below_many_are_a_bounded_log_spread(n_min: float) -> None:
    below = sizes_below(n_min)
    assert below.size <= SCAN
    assert below[0] == 1
    assert below[-1] == n_min - 1
    assert np.all(np.diff(below) > 0)


def test_thin_keeps_both_ends_and_spreads_in_log_n() -> None:
    n = np.arange(1.0, 1001.0)
    obs = thin(prepare(n, 100 * relative_runtime(n, 300.0, 1.0)))
    assert len(obs) <= MAX_SIZES
    assert obs.n[0] == 1
    assert obs.n[-1] == 1000
    gaps = np.diff(np.log(obs.n))
    # Even in log n up to the rounding to whole sizes at the bottom (1, 2, 3, ...).
    assert gaps[-10:].max() / gaps[-10:].min() < 1.5
    assert len(obs) + len(obs.thinned) == 1000
    assert set(obs.thinned).isdisjoint(obs.n.tolist())


def test_observations_within_the_cap_are_not_thinned() -> None:
    n = np.arange(1.0, MAX_SIZES + 1.0)
    obs = prepare(n, 100 * relative_runtime(n, 300.0, 1.0))
    assert thin(obs) is obs
    assert predictor.fit(n, obs.runtime).message == ""


def test_largest_allowed_size_is_accepted() -> None:
    f = predictor.fit([MAX_NODES // 2, MAX_NODES], [2.0, 1.05])
    assert f.status == "ok"
