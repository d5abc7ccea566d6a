"""plugin.store.keys: the exact Redis key strings, and that nothing unvalidated becomes a key."""

from __future__ import annotations

import pytest

from plugin.appkey import AppKey
from plugin.store import keys


def test_global_keys_are_exact() -> None:
    assert keys.PREFIX == "adaptalloc:v2:"
    assert keys.V1_PREFIX == "adaptalloc:v1:"
    assert keys.MIGRATION == "adaptalloc:v2:migration"
    assert keys.APPS == "adaptalloc:v2:apps"
    assert keys.DIRTY == "adaptalloc:v2:dirty"
    assert keys.DECISIONS == "adaptalloc:v2:decisions"
    assert keys.JOBS == "adaptalloc:v2:jobs"


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


def test_the_forget_tombstone_key_is_exact() -> None:
    assert keys.app_forgotten(AppKey("npb-lu")) == "adaptalloc:v2:app:{npb-lu}:forgotten"


def test_learner_and_import_keys_are_exact() -> None:
    assert keys.learner("sacct") == "adaptalloc:v2:learner:sacct"
    assert keys.learner("squeue") == "adaptalloc:v2:learner:squeue"
    assert keys.import_checkpoint("sacct-1700000000-1700086400") == (
        "adaptalloc:v2:import:sacct-1700000000-1700086400"
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
