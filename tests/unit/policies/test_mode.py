"""policies/mode.py and the policy file's mode key: precedence as `effective`, lists of
partitions, and one clear line for a bad value."""

from __future__ import annotations

import pytest

from policies.config import PolicyConfig, PolicyConfigError, default_config, parse_config
from policies.mode import ADVISE, ENFORCE, job_mode


def _config(doc: dict[str, object]) -> PolicyConfig:
    return parse_config(doc, "policy.toml")


def test_without_tables_every_job_has_the_site_default() -> None:
    config = default_config()
    assert job_mode(config, ADVISE, "batch", "physics") == ADVISE
    assert job_mode(config, ENFORCE, "batch", "physics") == ENFORCE
    assert job_mode(config, ENFORCE, "", "") == ENFORCE


def test_account_over_partition_over_default() -> None:
    config = _config(
        {
            "partition": {"batch": {"mode": "enforce"}, "debug": {"strategy": "pws"}},
            "account": {"trial": {"mode": "advise"}},
        }
    )
    assert job_mode(config, ADVISE, "batch", "physics") == ENFORCE
    assert job_mode(config, ADVISE, "debug", "physics") == ADVISE  # sets no mode
    assert job_mode(config, ADVISE, "batch", "trial") == ADVISE  # the account wins
    assert job_mode(config, ENFORCE, "debug", "trial") == ADVISE


def test_a_list_of_partitions_is_enforced_only_when_all_are() -> None:
    config = _config({"partition": {"batch": {"mode": "enforce"}, "big": {"mode": "advise"}}})
    assert job_mode(config, ENFORCE, "batch,big", "a") == ADVISE
    assert job_mode(config, ADVISE, "batch,batch", "a") == ENFORCE
    assert job_mode(config, ADVISE, "batch,other", "a") == ADVISE


def test_mode_is_kept_apart_from_the_sizing_settings() -> None:
    config = _config({"partition": {"batch": {"mode": "enforce", "strategy": "pws"}}})
    assert dict(config.partitions["batch"]) == {"strategy": "pws"}
    assert dict(config.partition_modes) == {"batch": "enforce"}


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            {"partition": {"batch": {"mode": "on"}}},
            '[partition.batch] mode: must be one of "advise"',
        ),
        ({"account": {"a": {"mode": 1}}}, "[account.a] mode: must be one of"),
        ({"defaults": {"mode": "advise"}}, "[defaults] mode: the site's mode is [daemon] mode"),
    ],
)
def test_a_bad_mode_is_one_line_naming_the_table(doc: dict[str, object], expected: str) -> None:
    with pytest.raises(PolicyConfigError) as caught:
        _config(doc)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_unknown_default_is_refused() -> None:
    with pytest.raises(ValueError, match="default"):
        job_mode(default_config(), "auto", "batch", "a")
