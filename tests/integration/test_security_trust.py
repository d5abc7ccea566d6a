"""Whose runs size whose jobs (plugin/appkey.py, plugin/learning/sharing.py), on the real
testbed, as two unprivileged users.

The attack: mallory (the testbed's second user) runs a few fixed-size jobs under an app
name, their runtimes flat (sleep 2 on 1, 2 and 4 nodes): a curve that says the app never
speeds up. When the app key was the bare job name, that curve pinned ann's ``-N1-8`` job of
the same name to 1 node on an idle cluster. Now:

* by default every key is its user's own: mallory's runs size mallory's jobs (the control:
  her moldable job gets 1 node from her curve) and nobody else's; ann's job of the same name,
  tag and all, has no curve of ann's and none of the site's, and is left as submitted;
* where an admin shares the app (``[appkey] shared``), mallory's runs go to the site key,
  but a shared curve that rests on one user's runs alone carries ``user_influence`` and
  sizes no job: ann's job is again left as submitted, the reason naming the problem.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.config import AppKeyConfig, Config, LearnerConfig
from plugin.learning.learner import Learner
from plugin.slurm import CliSlurmReader
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

from .daemon_harness import DaemonProcess
from .testbed import SlurmCLI, SubmitJob, scratch_url

pytestmark = pytest.mark.integration
Factory = Callable[..., DaemonProcess]


def mallorys_runs(slurm: SlurmCLI, submit_job: SubmitJob, name: str) -> None:
    """Her flat runs on 1, 2 and 4 nodes, finished and in accounting."""
    jobs = [
        submit_job(f"--job-name={name}", f"--nodes={n}", wrap="sleep 2", as_user=slurm.other_user)
        for n in (1, 2, 4)
    ]
    for job in jobs:
        slurm.wait_sacct_job(job, {"COMPLETED"}, where=lambda r: r["allocation_nodes"] > 0)


def learn(appkey: AppKeyConfig) -> CurveStore:
    """One learner poll and refit, as the daemon's learner would run them."""
    config = Config(
        appkey=appkey, learner=LearnerConfig(initial_lookback_s=1800.0, refit_debounce_s=0.0)
    )
    learner = Learner(CurveStore(connect(scratch_url())), CliSlurmReader(), config)
    learner.poll_once()
    learner.refit_dirty()
    return learner.store


def decide_both(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon: DaemonProcess, name: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The decisions for mallory's and ann's moldable jobs of the same name (not started)."""
    args = (f"--job-name={name}", "--nodes=1-8", "--time=30", "--begin=now+3600")
    hers = submit_job(*args, wrap="true", as_user=slurm.other_user)
    tag = f"--comment=adaptalloc:v1 app={name}"  # ann even names the app herself
    anns = submit_job(*args, tag, wrap="true", as_user=slurm.test_user)
    return daemon.wait_decision(hers), daemon.wait_decision(anns)


def test_one_users_runs_size_only_that_users_jobs(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    name = f"it-{uuid.uuid4().hex[:10]}"
    mallorys_runs(slurm, submit_job, name)
    store = learn(AppKeyConfig())
    record = store.curve_record(AppKey(name, owner=slurm.other_user))
    assert record is not None
    assert record.curve is not None  # her runs made her a curve...
    assert store.curve_record(AppKey(name)) is None  # ...and none of the site's
    assert store.curve_record(AppKey(name, owner=slurm.test_user)) is None
    daemon = daemon_factory().start()
    hers, anns = decide_both(slurm, submit_job, daemon, name)
    assert (hers["action"], hers["nodes"]) == ("resize", 1)  # the control: her curve works
    assert hers["app"] == f"{slurm.other_user}/{name}"
    assert (anns["action"], anns["rule"]) == ("keep", "fallback")
    assert anns["app"] == f"{slurm.test_user}/{name}"
    assert f"no curve is stored for app {slurm.test_user}/{name}" in anns["reason"]


def test_a_shared_curve_of_one_users_runs_alone_sizes_no_job(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_factory: Factory
) -> None:
    name = f"it-{uuid.uuid4().hex[:10]}"
    mallorys_runs(slurm, submit_job, name)
    store = learn(AppKeyConfig(shared=("it-*",)))
    record = store.curve_record(AppKey(name))
    assert record is not None
    assert record.curve is not None
    problems = {p.problem for p in record.curve.diagnostics.reliability}
    assert "user_influence" in problems
    assert {o.user for o in store.observations(AppKey(name))} == {slurm.other_user}
    daemon = daemon_factory(config='[appkey]\nshared = ["it-*"]\n').start()
    hers, anns = decide_both(slurm, submit_job, daemon, name)
    for decision in (hers, anns):
        assert (decision["action"], decision["rule"]) == ("keep", "fallback")
        assert "user_influence" in decision["reason"]
        assert decision["app"] == name
