"""The store's pieces that need no Redis: records, validation of jobs, Lua headers, URLs."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest

from plugin.appkey import AppKey, AppKeyRule
from plugin.cli.store import parse_when
from plugin.config import RedisConfig
from plugin.learning.importers import csv_job_ids, sacct_import_id
from plugin.learning.learner import Ingestor, JobRejectedError, UnsettledJobError
from plugin.slurm import JobRecord
from plugin.slurm.parse import parse_sacct_json, parse_squeue_json
from plugin.store.connection import StoreUnavailable, connect, mask_url, resolve_url
from plugin.store.curves import CurveStore, Observation

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm"
LUA = Path(__file__).resolve().parents[3] / "plugin" / "store" / "lua"
NOW = 1_795_320_000.0


def ingestor(max_nodes: int | None = 8, max_age_s: float | None = 86400.0 * 365) -> Ingestor:
    # observation() never touches the store.
    return Ingestor(cast(CurveStore, None), AppKeyRule(), max_nodes, max_age_s, lambda: NOW)


def job(**changes: object) -> JobRecord:
    base = JobRecord(
        job_id=7,
        name="lulesh",
        user="alice",
        account="phys",
        partition="batch",
        state="COMPLETED",
        source="sacct",
        nodes_alloc=4,
        elapsed_s=120,
        end_time=int(NOW) - 60,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


# --- observations ----------------------------------------------------------------------------


def test_observation_json_round_trip_is_compact() -> None:
    obs = Observation("123", AppKey("lulesh", "large"), 4, 12.5, 1_700_000_000.0, "sacct")
    text = obs.to_json()
    assert text == '{"n":4,"t":12.5,"e":1700000000.0,"s":"sacct"}'
    assert len(text) < 64  # Redis keeps small hashes of short values compact
    assert Observation.from_json(obs.app, "123", text) == obs


def test_observation_optional_fields_round_trip_under_short_keys() -> None:
    obs = Observation(
        "9",
        AppKey("cg"),
        4,
        3.5,
        1_700_000_000.0,
        "csv",
        size=1.5e6,
        tasks=64,
        tasks_per_node=16,
        node_type="gpu-a100",
    )
    text = obs.to_json()
    assert text == (
        '{"n":4,"t":3.5,"e":1700000000.0,"s":"csv","z":1500000.0,"k":64,"p":16,"y":"gpu-a100"}'
    )
    assert Observation.from_json(obs.app, "9", text) == obs
    full = obs.to_dict()
    assert (full["size"], full["tasks"], full["tasks_per_node"], full["node_type"]) == (
        1.5e6,
        64,
        16,
        "gpu-a100",
    )
    bare = Observation("9", AppKey("cg"), 4, 3.5, 0.0).to_dict()
    assert [bare[k] for k in ("size", "tasks", "tasks_per_node", "node_type")] == [None] * 4
    assert bare["preempted"] is False


def test_a_preempted_run_is_flagged_under_a_short_key_and_older_runs_were_not() -> None:
    preempted = Observation("9", AppKey("cg"), 16, 50.0, 0.0, preempted=True)
    text = preempted.to_json()
    assert text == '{"n":16,"t":50.0,"e":0.0,"s":"sacct","x":true}'
    assert Observation.from_json(preempted.app, "9", text) == preempted
    older = Observation.from_json(preempted.app, "9", '{"n":16,"t":50.0,"e":0.0,"s":"sacct"}')
    assert older.preempted is False  # read as killed at its limit, as before the flag
    with pytest.raises(ValueError, match="preempted"):
        Observation("9", AppKey("cg"), 16, 50.0, 0.0, preempted=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        '{"n":4,"t":3.5,"e":0,"z":"12"}',
        '{"n":4,"t":3.5,"e":0,"z":-1}',
        '{"n":4,"t":3.5,"e":0,"k":2.5}',
        '{"n":4,"t":3.5,"e":0,"k":true}',
        '{"n":4,"t":3.5,"e":0,"p":0}',
        '{"n":4,"t":3.5,"e":0,"y":7}',
        '{"n":4,"t":3.5,"e":0,"y":"A B"}',
        '{"n":4,"t":3.5,"e":0,"x":1}',
    ],
)
def test_a_stored_observation_with_a_bad_optional_field_is_corrupt(text: str) -> None:
    with pytest.raises(ValueError, match=r"stored|size|tasks|node type"):
        Observation.from_json(AppKey("cg"), "1", text)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"job_id": "a:b"}, "job id"),
        ({"job_id": ""}, "job id"),
        ({"job_id": "x" * 65}, "job id"),
        ({"nodes": 0}, "nodes"),
        ({"runtime_s": 0.0}, "runtime_s"),
        ({"runtime_s": math.nan}, "runtime_s"),
        ({"end_time": math.inf}, "end_time"),
        ({"size": 0.0}, "size"),
        ({"size": -3.0}, "size"),
        ({"size": math.inf}, "size"),
        ({"size": math.nan}, "size"),
        ({"size": True}, "size"),
        ({"tasks": 0}, "tasks"),
        ({"tasks": 2.5}, "tasks"),
        ({"tasks": True}, "tasks"),
        ({"tasks_per_node": 0}, "tasks_per_node"),
        ({"tasks_per_node": "4"}, "tasks_per_node"),
        ({"node_type": ""}, "node type"),
        ({"node_type": "Batch"}, "node type"),
        ({"node_type": "a:b"}, "node type"),
        ({"node_type": "x" * 65}, "node type"),
        ({"node_type": "gpu\x1b[2J"}, "node type"),
    ],
)
def test_observation_refuses_bad_values(changes: dict[str, object], match: str) -> None:
    fields: dict[str, object] = {
        "job_id": "1",
        "app": AppKey("a"),
        "nodes": 1,
        "runtime_s": 1.0,
        "end_time": 0.0,
    }
    fields.update(changes)
    with pytest.raises(ValueError, match=match):
        Observation(**fields)  # type: ignore[arg-type]


# --- validation of jobs ------------------------------------------------------------------------


def test_a_completed_job_becomes_an_observation() -> None:
    obs = ingestor().observation(job(name="LULESH", comment="adaptalloc:v1 size=large"))
    expected = Observation(
        "7", AppKey("lulesh", "large", "alice"), 4, 120.0, NOW - 60, "sacct", node_type="batch"
    )
    assert obs == expected


def test_a_shared_apps_run_goes_to_the_site_key_with_its_user() -> None:
    rule = AppKeyRule(shared=("lulesh",))
    shared = Ingestor(cast(CurveStore, None), rule, max_nodes=64, max_age_s=None, clock=lambda: NOW)
    obs = shared.observation(job())
    assert (obs.app, obs.user) == (AppKey("lulesh"), "alice")
    assert Observation.from_json(obs.app, obs.job_id, obs.to_json()) == obs
    assert '"u":"alice"' in obs.to_json()
    assert ingestor().observation(job()).user is None  # a user's own key says it already


@pytest.mark.parametrize(
    ("changes", "fields"),
    [
        # 64 tasks on 4 nodes: 16 per node; the numeric size class is recorded as a number.
        ({"tasks": 64, "comment": "adaptalloc:v1 size=2.5E6"}, (2.5e6, 64, 16, "batch")),
        # 10 tasks do not spread evenly over 4 nodes: no tasks per node.
        ({"tasks": 10, "comment": "adaptalloc:v1 size=1000"}, (1000.0, 10, None, "batch")),
        # A size class that is a word, no tasks reported.
        ({"comment": "adaptalloc:v1 size=large"}, (None, None, None, "batch")),
        # A partition name no node type can be (upper case): unknown, the run still counts.
        ({"partition": "Batch", "tasks": 4}, (None, 4, 1, None)),
        ({"tasks": 0}, (None, None, None, "batch")),
    ],
)
def test_a_job_records_size_tasks_and_node_type(
    changes: dict[str, object], fields: tuple[object, ...]
) -> None:
    obs = ingestor().observation(job(**changes))
    assert (obs.size, obs.tasks, obs.tasks_per_node, obs.node_type) == fields


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"state": "FAILED"}, "state"),
        ({"state": "CANCELLED"}, "state"),
        ({"state": "TIMEOUT"}, "state"),
        ({"exit_code": 3}, "exit_code"),
        ({"exit_signal": 9}, "exit_code"),
        ({"elapsed_s": 0}, "runtime"),
        ({"elapsed_s": None}, "runtime"),
        ({"end_time": None}, "end_time"),
        ({"nodes_alloc": 9}, "nodes"),
        ({"end_time": int(NOW) - 400 * 86400}, "too_old"),
        ({"name": "wrap"}, "app_key"),
        ({"name": "\x1b[31mred"}, "app_key"),
        ({"name": "adaptalloc:v1:apps"}, "app_key"),
        ({"comment": "adaptalloc:v1 app=../../evil"}, "app_key"),
    ],
)
def test_jobs_that_are_not_observations(changes: dict[str, object], code: str) -> None:
    with pytest.raises(JobRejectedError) as info:
        ingestor().observation(job(**changes))
    assert info.value.code == code
    assert "\x1b" not in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("state", ["TIMEOUT", "PREEMPTED"])
def test_a_run_stopped_at_a_limit_is_a_censored_observation(state: str) -> None:
    # Slurm's kill gives a non-zero exit status: not the program's failure, so not checked.
    stopped = job(state=state, exit_code=0, exit_signal=9)
    obs = ingestor().observation(stopped, censored=True)
    assert (obs.nodes, obs.runtime_s) == (4, 120.0)  # at least 120 s on 4 nodes
    # A preempted run was stopped by another job, not by its limit (the refused curve's
    # range cut reads which: predictor/covariate.py, Covariate.stopped_n).
    assert obs.preempted == (state == "PREEMPTED")
    with pytest.raises(JobRejectedError, match="not censored"):
        ingestor().observation(job(), censored=True)  # a completed run is not a lower bound
    with pytest.raises(JobRejectedError, match="state"):
        ingestor().observation(stopped)  # and a censored one is never a completed run


def test_zero_nodes_on_a_completed_job_is_unsettled_not_rejected() -> None:
    with pytest.raises(UnsettledJobError):
        ingestor().observation(job(nodes_alloc=0))


def test_limits_can_be_lifted() -> None:
    lifted = ingestor(max_nodes=None, max_age_s=None)
    assert lifted.observation(job(nodes_alloc=10_000, end_time=1)).nodes == 10_000


def test_validation_of_the_captured_sacct_jobs() -> None:
    jobs = parse_sacct_json((DATA / "sacct_completed.json").read_text(encoding="utf-8"))
    check = ingestor(max_age_s=None)
    outcomes: dict[str, int | str] = {}
    for record in jobs:
        try:
            outcomes[record.name] = check.observation(record).nodes
        except JobRejectedError as exc:
            outcomes[record.name] = exc.code
    assert outcomes == {
        "capture-pending-moldable": 3,
        "capture-completed-moldable": 4,
        "capture-running-moldable": "state",
        "capture-failed": "state",
        "capture-cancelled-pending": "state",
    }


def test_validation_of_the_captured_hostile_jobs() -> None:
    """Only the valid tag yields a key; no hostile name or comment does."""
    records = parse_squeue_json((DATA / "squeue_hostile.json").read_text(encoding="utf-8"))
    check = ingestor(max_age_s=None)
    keys, refusals = [], []
    for record in records:
        try:
            keys.append(check.observation(record).app)
        except JobRejectedError as exc:
            refusals.append(exc.code)
    assert keys == [AppKey("hostile-ok", "large", "root")]  # the capture's jobs are root's
    assert refusals == ["app_key"] * 6


# --- import ids, dates ----------------------------------------------------------------------------


def test_csv_job_ids_are_stable_and_count_repeats() -> None:
    app = AppKey("lu")
    first = csv_job_ids(app, "study.csv", [1.0, 2.0, 2.0], [10.0, 6.0, 6.0])
    assert len(set(first)) == 3
    assert all(re.fullmatch(r"csv-[0-9a-f]{24}", i) for i in first)
    assert csv_job_ids(app, "study.csv", [1.0, 2.0, 2.0, 4.0], [10.0, 6.0, 6.0, 4.0])[:3] == first
    assert csv_job_ids(AppKey("other"), "study.csv", [1.0], [10.0])[0] != first[0]
    assert csv_job_ids(app, "other.csv", [1.0], [10.0])[0] != first[0]


def test_sacct_import_ids() -> None:
    assert sacct_import_id(1700000000.7, 1700086400.2) == "sacct-1700000000-1700086401"
    assert sacct_import_id(1700000000, 1700086400) == "sacct-1700000000-1700086400"


def test_parse_when() -> None:
    assert parse_when("now", now=NOW) == NOW
    assert parse_when("now-2days", now=NOW) == NOW - 2 * 86400
    assert parse_when("now-3h", now=NOW) == NOW - 3 * 3600
    assert parse_when("2026-01-31T00:00:00+00:00") == 1769817600.0
    with pytest.raises(ValueError, match="is not a date"):
        parse_when("yesterday-ish")


# --- Lua scripts ---------------------------------------------------------------------------------


def test_the_lua_scripts_are_where_the_store_loads_them() -> None:
    # Guards the parametrized test below: a moved folder would leave it with no cases.
    names = {path.name for path in LUA.glob("*.lua")}
    assert "add_observations.lua" in names
    assert "record_decision.lua" in names


@pytest.mark.parametrize("path", sorted(LUA.glob("*.lua")), ids=lambda p: p.name)
def test_every_lua_script_documents_its_keys_and_argv(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    header = [line for line in text.splitlines() if line.startswith("--")]
    assert text.startswith(f"-- {path.stem}:")
    used_keys = set(re.findall(r"KEYS\[(\d+)\]", text.split("\n\n", 1)[1]))
    documented = set(re.findall(r"^-- KEYS\[(\d+)\]", "\n".join(header), re.MULTILINE))
    assert used_keys <= documented, (
        f"{path.name}: KEYS{sorted(used_keys - documented)} undocumented"
    )
    assert re.search(r"^-- ARGV(\[1\]|  none)", "\n".join(header), re.MULTILINE)
    assert re.search(r"^-- Returns", "\n".join(header), re.MULTILINE)


# --- connection -----------------------------------------------------------------------------------


def test_urls_are_masked_and_resolved_in_order() -> None:
    assert mask_url("redis://u:secret@h:6379/0") == "redis://u:***@h:6379/0"
    assert mask_url("rediss://:secret@h/1") == "rediss://:***@h/1"
    assert mask_url("redis://h:6379/0") == "redis://h:6379/0"
    config = RedisConfig(url="redis://from-config/0")
    env = {"REDIS_URL": "redis://from-env/0"}
    assert resolve_url("redis://given/0", config, env).url == "redis://given/0"
    assert resolve_url(None, config, env).url == "redis://from-config/0"
    assert resolve_url(None, RedisConfig(), env).url == "redis://from-env/0"
    assert resolve_url(None, RedisConfig(), {}).url == "redis://localhost:6379/0"


def test_unreachable_redis_is_one_clear_error() -> None:
    config = RedisConfig(retries=1, backoff_base_s=0.01, backoff_cap_s=0.01)
    with pytest.raises(StoreUnavailable) as info:
        connect("redis://:secret@127.0.0.1:1/0", config)
    message = str(info.value)
    assert message.startswith("Redis at redis://:***@127.0.0.1:1/0 (--redis-url) is unreachable")
    assert "secret" not in message
    assert "\n" not in message


def test_bad_urls_and_password_files() -> None:
    with pytest.raises(StoreUnavailable, match="not usable"):
        connect("http://localhost/0", check=False)
    unreadable = RedisConfig(password_file="/nonexistent/pw")  # noqa: S106 - a path
    with pytest.raises(StoreUnavailable, match="cannot read \\[redis\\] password_file"):
        connect("redis://localhost/0", unreadable, check=False)
