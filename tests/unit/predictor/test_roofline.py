"""The roofline model (the large-scale thesis, 4.6.3), the intensity two machines' ratio implies,
and the prior curve it converts onto a node type without runs (predictor/roofline.py).

The thesis gives the formula and one example without machine numbers: a kernel of 0.8
flop/byte "hits the roof exactly at the ridge point", one of 8 flop/byte is compute-bound.
The machine below is ours, chosen so that its ridge is at 0.8 flop/byte: 16 GFLOP/s peak and
20 GB/s of memory bandwidth.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

import predictor
from predictor.diagnostics import ReliabilityProblem
from predictor.models import (
    attainable,
    intensity_from_ratio,
    master_worker_optimum,
    master_worker_phase,
    performance_ratio,
    ridge_point,
    saturation_knee,
)
from predictor.roofline import PRIOR_PROBLEM, prior_sizes, roofline_prior

PEAK, BANDWIDTH = 16.0, 20.0  # the worked example's machine: ridge at 0.8 flop/byte


def test_the_theses_example_kernels_on_a_machine_whose_ridge_is_at_0_8() -> None:
    assert float(ridge_point(PEAK, BANDWIDTH)) == pytest.approx(0.8)
    kernel_a, kernel_b, memory_bound = 0.8, 8.0, 0.2
    # A hits the roof exactly at the ridge: bandwidth × intensity is the peak.
    assert float(attainable(PEAK, BANDWIDTH, kernel_a)) == pytest.approx(PEAK)
    assert BANDWIDTH * kernel_a == pytest.approx(PEAK)
    # B is compute-bound: more intensity buys nothing past the peak.
    assert float(attainable(PEAK, BANDWIDTH, kernel_b)) == PEAK
    # Below the ridge the slanted roof: 20 GB/s × 0.2 flop/byte = 4 GFLOP/s.
    assert float(attainable(PEAK, BANDWIDTH, memory_bound)) == pytest.approx(4.0)


def test_attainable_broadcasts_and_is_the_minimum_of_the_two_roofs() -> None:
    intensity = np.geomspace(0.01, 100.0, 41)
    peaks = np.array([[10.0], [100.0]])
    got = attainable(peaks, 25.0, intensity)
    assert got.shape == (2, 41)
    assert_allclose(got, np.minimum(peaks, 25.0 * intensity))
    assert float(attainable(PEAK, BANDWIDTH, math.inf)) == PEAK  # inf reads as compute-bound


@pytest.mark.parametrize(
    ("args", "word"),
    [
        ((0.0, 1.0, 1.0), "peak_gflops"),
        ((1.0, -2.0, 1.0), "bandwidth_gbs"),
        ((1.0, 1.0, 0.0), "intensity"),
    ],
)
def test_attainable_refuses_what_no_machine_or_kernel_has(
    args: tuple[float, ...], word: str
) -> None:
    with pytest.raises(ValueError, match=word):
        attainable(*args)


def test_the_ratio_is_the_peaks_when_compute_bound_and_the_bandwidths_when_memory_bound() -> None:
    # x: ridge 2 (100 GFLOP/s, 50 GB/s); y: ridge 4 (400 GFLOP/s, 100 GB/s).
    assert performance_ratio(100, 50, 400, 100, 10.0) == pytest.approx(4.0)  # peaks
    assert performance_ratio(100, 50, 400, 100, 1.0) == pytest.approx(2.0)  # bandwidths
    # Between the ridges x is compute-bound, y memory-bound: 100·3 / 100.
    assert performance_ratio(100, 50, 400, 100, 3.0) == pytest.approx(3.0)


@pytest.mark.parametrize("intensity", [2.2, 2.5, 3.0, 3.7])
@pytest.mark.parametrize("mirrored", [False, True])
def test_an_intensity_between_the_ridges_is_read_back_from_the_ratio(
    intensity: float, mirrored: bool
) -> None:
    a, b = (100.0, 50.0), (400.0, 100.0)  # ridges 2 and 4
    if mirrored:
        a, b = b, a
    ratio = performance_ratio(*a, *b, intensity)
    found = intensity_from_ratio(*a, *b, ratio)
    assert found is not None
    assert found.bound == "exact"
    assert found.value == pytest.approx(intensity)


def test_a_ratio_at_or_past_either_end_is_a_bound_at_the_nearer_ridge() -> None:
    a, b = (100.0, 50.0), (400.0, 100.0)  # ridges 2 and 4; bandwidth ratio 2, peak ratio 4
    memory = intensity_from_ratio(*a, *b, 1.7)  # past the bandwidth ratio: clipped to it
    assert memory is not None
    assert memory.value == pytest.approx(2.0)
    assert memory.bound == "at_most"
    compute = intensity_from_ratio(*a, *b, 4.0)
    assert compute is not None
    assert compute.value == pytest.approx(4.0)
    assert compute.bound == "at_least"


def test_two_machines_with_one_ridge_say_nothing_of_the_intensity() -> None:
    assert intensity_from_ratio(100.0, 50.0, 300.0, 150.0, 3.0) is None


def test_the_master_worker_optimum_on_a_worked_example() -> None:
    """Costa et al.'s N_opt = Tc / (max(vi, vo)·λ) on figures of our own (the slides give
    none): 2 s tasks, 50 MB in, 10 MB out, a 10 Gbit/s link (1.25 GB/s, λ = 0.8 ns/B). Each
    task holds the master 50e6 × 0.8e-9 = 0.04 s, so it keeps 2 / 0.04 = 50 workers busy."""
    n_opt = master_worker_optimum(2.0, 50e6, 10e6, 1.0 / 1.25e9)
    assert n_opt == pytest.approx(50.0)
    # Start-up: every worker's first input, the (N_w + 1)/2 average wait of the paper's model.
    assert master_worker_phase(0.01, 50e6, 1.0 / 1.25e9, workers=50) == pytest.approx(
        0.01 + 0.04 * 25.5
    )
    assert master_worker_optimum(2.0, 0.0, 10e6, 1.0 / 1.25e9) == pytest.approx(250.0)
    with pytest.raises(ValueError, match="one of the volumes"):
        master_worker_optimum(2.0, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        master_worker_optimum(math.nan, 1.0, 1.0, 1.0)


def test_the_knee_of_a_saturating_speedup_is_where_its_two_lines_meet() -> None:
    n = np.arange(1.0, 65.0)
    assert saturation_knee(n, np.minimum(n, 13.0)) == pytest.approx(13.0)
    # Workers 90% efficient until the master saturates at a speedup of 18: 18 / 0.9 = 20.
    assert saturation_knee(n, np.minimum(0.9 * n, 18.0)) == pytest.approx(20.0)
    # From a smallest size of 4 (speedup relative to one node as always).
    assert saturation_knee(n[3:], np.minimum(n[3:], 13.0)) == pytest.approx(13.0)
    with pytest.raises(ValueError, match="increase"):
        saturation_knee([4.0, 2.0], [1.0, 1.0])


def _curve(t1: float, n: tuple[float, ...] = (1, 2, 4, 8, 16, 32)) -> predictor.Curve:
    nv = np.asarray(n, dtype=float)
    return predictor.Curve.from_fit(predictor.fit(nv, t1 * (0.04 + 0.96 / nv)))


def _problem() -> ReliabilityProblem:
    return ReliabilityProblem(PRIOR_PROBLEM, "run it there", None, {"time_ratio": 0.5})


def test_on_a_type_of_the_same_cores_the_prior_is_the_curve_times_the_ratio() -> None:
    source = _curve(1000.0)
    prior = roofline_prior(source, 0.5, 1.0, _problem())
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    assert_allclose(prior.runtime(n), 0.5 * source.runtime(n), rtol=1e-3)
    assert prior.observed_n == source.observed_n
    problems = [p.problem for p in prior.diagnostics.reliability]
    assert PRIOR_PROBLEM in problems
    assert not prior.reliable  # so no time limit is shortened on it


def test_with_twice_the_cores_a_node_of_the_target_holds_two_of_the_source() -> None:
    """T_y(n) = T_x(2n)·k: the processor counts of the source's runs on half the nodes."""
    source = _curve(1000.0)
    prior = roofline_prior(source, 0.8, 2.0, _problem())
    assert prior.observed_n == (1, 2, 4, 8, 16)  # 1..32 source nodes, halved, 0.5 -> 1
    n = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    assert_allclose(prior.runtime(n), 0.8 * source.runtime(2.0 * n), rtol=0.02)


def test_the_prior_sizes_collapse_to_two_at_least() -> None:
    assert prior_sizes((1, 2, 4), 8.0) == (1, 2)  # all of them fit on one node of the target
    assert prior_sizes((2, 4, 8), 0.5) == (4, 8, 16)
    with pytest.raises(ValueError, match="processors_ratio"):
        prior_sizes((1, 2), 0.0)


def test_a_prior_must_be_marked_as_one() -> None:
    with pytest.raises(ValueError, match="roofline_prior"):
        roofline_prior(_curve(10.0), 0.5, 1.0, ReliabilityProblem("borrowed", "x"))
    with pytest.raises(ValueError, match="time_ratio"):
        roofline_prior(_curve(10.0), math.inf, 1.0, _problem())
