"""A small learned simulation gives what it gave before the fit and the learner were made
faster: every policy's schedule (start, end, nodes, limit, killed, rule of every job), figures,
rule counts, fallbacks and refit counts, recorded before the first speed-up
(`python -m tests.unit.simulation.test_learning_golden` records them again; do not, unless a
change of results is intended and said so in its commit).

The run: the first JOBS jobs of the NASA iPSC/860 trace (128 nodes) at load 0.7, seed 1, the
command's defaults (learned curves, the daemon's refit cadence), the six POLICIES; the same
with the learner's rule before the refit cadence (g = 0, every change: "every", whose
records are the "daemon" ones recorded before that cadence, unchanged); and the sparse
cadence for the learned policies. Re-recorded once with the refit cadence
(policies/refit_cadence.py), its default g changing the daemon's schedules, and once when the
simulator stopped handing the policies information no site has (limits as written or from
the model of user estimates, hidden applications apart from the learner's keys, kills
resubmitted, the curve-only oracle), and once when the learner fitted runs with their users'
limits (predictor/heterogeneous.py) and exploration drew sizes from job ids, and once with
that and sizes raised until the pessimistic runtime fits the user's limit
(time_limit.fits_limit) together, and once when a job no size of whose range fits its
limit was left as submitted, the size check of a curve of heterogeneous runs read its runs'
limit use (predictor/covariate.py, "Limit use") and the figures counted the jobs of
applications that had run MATURE_RUNS times, once when explored sizes were raised to fit
their users' limits too, once when a size was explored only where it could start on the
idle nodes (rules.py, exploration_waits), and once when a shape was rejected only where its
misfit also exceeded the noise (predictor/covariate.py, "Relevance"), and once when a
curve whose runs show no knee was capped at the largest size they ran (rules.py, cap), and
once when runs killed at their limits counted in the limit-use bound and the shape of a
curve judged by its noise became the least-squares one (predictor/heterogeneous.py, "Which
fit gives the shape"), and once when the figures split the mean response by key age
(policies/simulation/metrics.py; no schedule changed), and once when an application whose
runs all ran at one size was explored at a second (policies/second_size.py), and once
when a job whose curve the policy refused kept its range with the top cut at the curve's
knee or its runs' median size (policies/rules.py, refused_top), and once when the run at a
second size went no further down than half the runs' size, and once when a job no size of
whose range fits its limit was pinned on a heavily loaded partition where its pessimistic
runtime stops falling, and once when that pin became a range up to 1.5 times it
(policies/decide.py, _flat_range): the commits say so.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from plugin.formats.swf import read_swf
from policies.simulation import POLICIES, Experiment, Setup, at_load

from ..predictor.golden import mismatches, plain
from .helpers import NASA

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "golden" / "simulation_nasa.json.gz"
JOBS = 400
LEARNED = ("rigid_limits", "adaptive_fixed_limits", "adaptive")
RUNS = (
    [("daemon", p) for p in POLICIES]
    + [("every", p) for p in POLICIES]
    + [("sparse", p) for p in LEARNED]
)


def _experiments() -> dict[str, Experiment]:
    trace = read_swf(NASA).head(JOBS)
    jobs = at_load(trace.jobs, trace.machine, 0.7)
    setups = {
        "daemon": Setup(machine=trace.machine, seed=1),
        "every": Setup(machine=trace.machine, seed=1, refit_growth=0.0),
        "sparse": Setup(machine=trace.machine, refits="sparse", seed=1),
    }
    return {cadence: Experiment(jobs, setup) for cadence, setup in setups.items()}


def _outputs(experiment: Experiment, policy: str) -> dict[str, Any]:
    result = experiment.run(policy)
    s = result.schedule
    out: dict[str, Any] = plain(
        {
            "start": s.start,
            "end": s.end,
            "nodes": s.nodes,
            "limit": s.limit,
            "killed": s.killed,
            "rule": s.rule,
            "metrics": result.metrics.to_dict(),
            "rules": dict(result.rules),
            "fallbacks": dict(result.fallbacks),
            "refits": result.refits,
        }
    )
    return out


def record() -> None:
    experiments = _experiments()
    doc = {f"{c}/{p}": _outputs(experiments[c], p) for c, p in RUNS}
    GOLDEN.write_bytes(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), mtime=0))


@pytest.fixture(scope="module")
def experiments() -> dict[str, Experiment]:
    return _experiments()


@pytest.mark.parametrize(("cadence", "policy"), RUNS)
def test_learned_simulation_matches_the_golden_run(
    experiments: dict[str, Experiment], cadence: str, policy: str
) -> None:
    golden = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    got = _outputs(experiments[cadence], policy)
    assert got["refits"] > 0 or policy in ("rigid", "greedy", "oracle", "oracle_curve")
    assert mismatches(golden[f"{cadence}/{policy}"], got, 1e-9) == []


if __name__ == "__main__":
    record()
