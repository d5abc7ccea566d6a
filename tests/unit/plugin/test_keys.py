"""plugin.store.keys: the exact Redis key strings, and that nothing unvalidated becomes a key."""

from __future__ import annotations

import pytest

from plugin.appkey import AppKey
from plugin.store import keys


def test_global_keys_are_exact() -> None:
    assert keys.PREFIX == "adaptalloc:v2:"
    assert keys.V1_PREFIX == "adaptalloc:v1:"
    assert keys.MIGRATION == "adaptalloc:v2:{global}:migration"
    assert keys.APPS == "adaptalloc:v2:{global}:apps"
    assert keys.DIRTY == "adaptalloc:v2:{global}:dirty"
    assert keys.DECISIONS == "adaptalloc:v2:{global}:decisions"
    assert keys.JOBS == "adaptalloc:v2:{global}:jobs"
    assert keys.DIRTY_VERSION == "adaptalloc:v2:{global}:dirty:version"
    assert keys.LEASE == "adaptalloc:v2:{global}:daemon:lease"


def test_per_app_keys_are_exact() -> None:
    app = AppKey("lulesh", "large")
    assert keys.app_observations(app) == "adaptalloc:v2:app:{lulesh@large}:obs"
    assert keys.app_runs(app) == "adaptalloc:v2:app:{lulesh@large}:runs"
    assert keys.app_state(app) == "adaptalloc:v2:app:{lulesh@large}:state"
    assert keys.app_curve(app) == "adaptalloc:v2:app:{lulesh@large}:curve"
    assert keys.app_keys(AppKey("npb-lu")) == (
        "adaptalloc:v2:app:{npb-lu}:obs",
        "adaptalloc:v2:app:{npb-lu}:runs",
        "adaptalloc:v2:app:{npb-lu}:state",
        "adaptalloc:v2:app:{npb-lu}:curve",
        "adaptalloc:v2:app:{npb-lu}:guard",
        "adaptalloc:v2:app:{npb-lu}:censored",
    )


def test_the_live_accuracy_keys_are_exact() -> None:
    assert keys.SCORES == "adaptalloc:v2:{global}:scores"
    assert keys.scored(4711, 1700000000) == "adaptalloc:v2:{global}:scored:4711-1700000000"
    assert keys.decided(4711, 1700000000) == "adaptalloc:v2:{global}:decided:4711-1700000000"
    for bad in ((-1, 0), (1, -1), (True, 0), (1.5, 0), ("7", 0)):
        with pytest.raises(ValueError, match="whole number"):
            keys.scored(*bad)


def test_the_forget_tombstone_key_is_exact() -> None:
    assert keys.app_forgotten(AppKey("npb-lu")) == "adaptalloc:v2:app:{npb-lu}:forgotten"


def test_learner_and_import_keys_are_exact() -> None:
    assert keys.learner("sacct") == "adaptalloc:v2:{global}:learner:sacct"
    assert keys.learner("squeue") == "adaptalloc:v2:{global}:learner:squeue"
    assert keys.import_checkpoint("sacct-1700000000-1700086400") == (
        "adaptalloc:v2:{global}:import:sacct-1700000000-1700086400"
    )


@pytest.mark.parametrize("bad", ["lulesh", "lulesh:*", "../x", ""])
def test_a_plain_string_never_becomes_an_app_key(bad: str) -> None:
    with pytest.raises(TypeError, match="AppKey"):
        keys.app_observations(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["sacct:*", "x", "", "SACCT"])
def test_learner_sources_are_a_closed_set(bad: str) -> None:
    with pytest.raises(ValueError, match="learner source"):
        keys.learner(bad)


@pytest.mark.parametrize("bad", ["a:b", "*", "x\ny", "", "A", "-x", "a" * 200])
def test_import_ids_are_checked(bad: str) -> None:
    with pytest.raises(ValueError, match="import id"):
        keys.import_checkpoint(bad)


def test_issue_18_keys_are_exact() -> None:
    app = AppKey("cg", "1000")
    assert keys.app_type_curve(app, "gpu-a100") == "adaptalloc:v2:app:{cg@1000}:curve:gpu-a100"
    assert keys.app_node_types(app) == "adaptalloc:v2:app:{cg@1000}:types"
    for bad in ("", "GPU", "a:b", "a{b}", "x" * 65):
        with pytest.raises(ValueError, match="node type"):
            keys.app_type_curve(app, bad)


def test_every_key_of_an_app_shares_its_cluster_hash_tag() -> None:
    """Redis Cluster hashes only the part between the first '{' and the next '}'."""
    app = AppKey("lulesh", "large")
    names = [
        *keys.app_keys(app),
        keys.app_forgotten(app),
        keys.app_node_types(app),
        keys.app_type_curve(app, "batch"),
    ]
    for name in names:
        start = name.index("{")
        assert name[start + 1 : name.index("}", start)] == "lulesh@large", name


def test_the_lease_and_the_global_keys_share_one_cluster_slot() -> None:
    """Redis Cluster: the global scripts and the daemon's fenced transaction
    (WATCH the lease, write the decision keys) each touch keys of one slot only."""
    from redis.crc import key_slot  # noqa: PLC0415 - only this test computes slots

    globals_ = [
        keys.APPS, keys.DIRTY, keys.DIRTY_VERSION, keys.JOBS, keys.DECISIONS, keys.MIGRATION,
        keys.GUARD_WATCH, keys.GUARD_RAISES, keys.LEASE, keys.LEASE_TOKEN,
        keys.learner("sacct"), keys.import_checkpoint("a-1"), keys.decided(7, 17),
        keys.SCORES, keys.scored(7, 17),
    ]  # fmt: skip
    assert all(k.startswith("adaptalloc:v2:{global}:") for k in globals_)
    assert {key_slot(k.encode()) for k in globals_} == {key_slot(b"global")}


def test_each_apps_keys_share_the_slot_of_its_tag() -> None:
    from redis.crc import key_slot  # noqa: PLC0415 - only this test computes slots

    for app in (AppKey("lulesh", "large"), AppKey("npb-lu")):
        names = [*keys.app_keys(app), keys.app_forgotten(app), keys.app_node_types(app),
                 keys.app_type_curve(app, "gpu")]  # fmt: skip
        assert {key_slot(k.encode()) for k in names} == {key_slot(str(app).encode())}
