"""The policy configuration: defaults, the example file, overrides and their precedence, and
error messages that name the file, the key and what is allowed."""

from __future__ import annotations

import re
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from policies import DEFAULTS, KEYS, PolicyConfigError, PolicySettings, effective, parse_config
from policies.config import default_config

EXAMPLE = Path(__file__).resolve().parents[3] / "deploy" / "policy.example.toml"
SOURCE = "policy.toml"


def parse(text: str) -> Any:
    return parse_config(tomllib.loads(text), SOURCE)


def refused(text: str) -> str:
    with pytest.raises(PolicyConfigError) as info:
        parse(text)
    message = str(info.value)
    assert message.startswith(f"{SOURCE}: ")
    assert "\n" not in message
    return message


def test_the_example_file_sets_every_key_to_its_default() -> None:
    doc = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert set(doc) == {"defaults"}
    assert list(doc["defaults"]) == list(KEYS)  # every key, in the documented order
    config = parse_config(doc, str(EXAMPLE))
    assert config.defaults == DEFAULTS == PolicySettings()
    assert config.partitions == {}
    assert config.accounts == {}


def test_every_setting_has_a_spec_and_a_comment_in_the_example() -> None:
    names = [f.name for f in fields(PolicySettings)]
    assert names == list(KEYS)
    text = EXAMPLE.read_text(encoding="utf-8")
    for name in names:
        # a comment block right above the key explains it
        assert re.search(rf"#[^\n]*\n{name} = ", text) or re.search(
            rf"#[^\n]*\n(\w+ = [^\n]*\n)?{name} = ", text
        ), name


def test_an_empty_file_is_the_built_in_defaults() -> None:
    config = parse("")
    assert config.defaults == DEFAULTS
    assert effective(config, "any", "one") == DEFAULTS
    assert effective(default_config(), "batch", "physics") == DEFAULTS


def test_precedence_account_over_partition_over_defaults() -> None:
    config = parse(
        """
        [defaults]
        efficiency_threshold = 0.6
        fallback = "min"
        [partition.batch]
        efficiency_threshold = 0.7
        strategy = "pws"
        [account.physics]
        efficiency_threshold = 0.8
        """
    )
    assert effective(config).efficiency_threshold == 0.6
    assert effective(config, "debug", "chemistry").efficiency_threshold == 0.6
    batch = effective(config, "batch", "")
    assert (batch.efficiency_threshold, batch.strategy, batch.fallback) == (0.7, "pws", "min")
    both = effective(config, "batch", "physics")
    assert (both.efficiency_threshold, both.strategy, both.fallback) == (0.8, "pws", "min")
    assert effective(config, "", "physics").strategy == "load_adaptive"
    assert config.partitions["batch"] == {"efficiency_threshold": 0.7, "strategy": "pws"}


def test_whole_numbers_are_accepted_for_numbers_and_stored_as_floats() -> None:
    config = parse("[defaults]\nefficiency_threshold = 1\ntime_limit_safety_factor = 2\n")
    assert config.defaults.efficiency_threshold == 1.0
    assert isinstance(config.defaults.time_limit_safety_factor, float)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[partition.batch]\nefficiency_threshold = "high"',
            '[partition.batch] efficiency_threshold: must be a number in (0, 1], got "high"',
        ),
        (
            "[defaults]\nefficiency_threshold = 0",
            "[defaults] efficiency_threshold: must be a number in (0, 1], got 0",
        ),
        (
            "[defaults]\nefficiency_threshold = 1.5",
            "[defaults] efficiency_threshold: must be a number in (0, 1], got 1.5",
        ),
        (
            "[defaults]\nefficiency_threshold = nan",
            "[defaults] efficiency_threshold: must be a number in (0, 1], got nan",
        ),
        (
            "[defaults]\nlight_pressure = true",
            "[defaults] light_pressure: must be a number in [0, 1e6], got true",
        ),
        (
            '[account.physics]\nstrategy = "greedy"',
            '[account.physics] strategy: must be one of "load_adaptive", "efficiency", "pws", '
            'got "greedy"',
        ),
        (
            '[defaults]\nfallback = "rigid"',
            '[defaults] fallback: must be one of "as_submitted", "min", "max", got "rigid"',
        ),
        (
            '[defaults]\nlimit_to_idle = "yes"',
            '[defaults] limit_to_idle: must be true or false, got "yes"',
        ),
        (
            "[defaults]\ntime_limit_floor_min = 2.5",
            "[defaults] time_limit_floor_min: must be a whole number of minutes in [1, 10080], got "
            "2.5",
        ),
        (
            "[defaults]\ntime_limit_safety_factor = 0.9",
            "[defaults] time_limit_safety_factor: must be a number in [1, 10], got 0.9",
        ),
        # Values that once passed the check but made every decision fail
        (
            "[defaults]\ntime_limit_safety_factor = 1e308",
            "[defaults] time_limit_safety_factor: must be a number in [1, 10], got 1e+308",
        ),
        (
            "[defaults]\ntime_limit_floor_min = 9223372036854775807",
            "[defaults] time_limit_floor_min: must be a whole number of minutes in [1, 10080], got "
            "9223372036854775807",
        ),
        (
            "[defaults]\nheavy_pressure = 1e300",
            "[defaults] heavy_pressure: must be a number in (0, 1e6], got 1e+300",
        ),
        (
            "[defaults]\nmax_fit_error = 0.9",
            "[defaults] max_fit_error: must be a number in (0, 0.5], got 0.9",
        ),
        (
            "[defaults]\nlight_pressure = " + "9" * 400,
            "[defaults] light_pressure: must be a number in [0, 1e6], got 99999999999999999999999"
            "99999999999999999... (400 digits)",
        ),
        (
            "[defaults]\nexploration_job_share = [0.1]",
            "[defaults] exploration_job_share: must be a number in [0, 1], got an array",
        ),
        (
            "[defaults]\nmax_fit_error = {a = 1}",
            "[defaults] max_fit_error: must be a number in (0, 0.5], got a table",
        ),
        (
            '[defaults]\ntime_limit_reference = "' + "x" * 60 + '"',
            '[defaults] time_limit_reference: must be one of "min", "max", got "'
            + "x" * 40
            + '..." (60 characters)',
        ),
    ],
)
def test_bad_values_name_file_key_and_what_is_allowed(text: str, expected: str) -> None:
    assert refused(text) == f"{SOURCE}: {expected}"


def test_unknown_keys_and_tables_are_errors_with_a_suggestion() -> None:
    message = refused("[defaults]\nefficency_threshold = 0.5")
    assert message.startswith(f"{SOURCE}: [defaults] efficency_threshold: not a known key")
    assert 'did you mean "efficiency_threshold"?' in message
    message = refused("[partitions.batch]\nstrategy = 'pws'")
    assert message.startswith(f"{SOURCE}: partitions: not a known table")
    assert 'did you mean "partition"?' in message
    message = refused("strategy = 'pws'")
    assert message.startswith(f"{SOURCE}: strategy: not a known table")
    assert "defaults, partition, account" in message  # few tables: all of them are named
    message = refused("[partition.batch]\nzzz = 1")
    assert message.startswith(f"{SOURCE}: [partition.batch] zzz: not a known key")
    assert "policy.example.toml" in message  # many keys: where they are listed


def test_tables_must_be_tables() -> None:
    assert refused("defaults = 3") == f"{SOURCE}: [defaults]: must be a table, got 3"
    assert refused("partition = 'batch'") == (
        f'{SOURCE}: [partition]: must hold one table per partition name, got "batch"'
    )
    assert refused("[partition]\nbatch = 1") == (
        f"{SOURCE}: [partition.batch]: must be a table, got 1"
    )


def test_odd_table_names_are_quoted_in_messages() -> None:
    message = refused('[partition."gpu a100"]\nstrategy = 1')
    assert message.startswith(f'{SOURCE}: [partition."gpu a100"] strategy: must be one of')


def test_crowded_pressure_must_stay_above_heavy() -> None:
    assert refused("[defaults]\ncrowded_pressure = 1.5") == (
        f"{SOURCE}: [defaults] crowded_pressure: must be above heavy_pressure of the built-in "
        "defaults (2), got 1.5"
    )
    assert refused("[partition.p]\nheavy_pressure = 9.0") == (
        f"{SOURCE}: [partition.p] heavy_pressure: must be below crowded_pressure of defaults (8), "
        "got 9"
    )
    assert (
        parse("[defaults]\nheavy_pressure = 9.0\ncrowded_pressure = 20.0").defaults.crowded_pressure
        == 20.0
    )


def test_light_pressure_must_stay_below_heavy_in_every_combination() -> None:
    assert refused("[defaults]\nlight_pressure = 3.0") == (
        f"{SOURCE}: [defaults] light_pressure: must be below heavy_pressure of the built-in "
        "defaults (2), got 3"
    )
    assert refused("[defaults]\nlight_pressure = 3.0\nheavy_pressure = 1.0") == (
        f"{SOURCE}: [defaults] light_pressure: must be below heavy_pressure (1), got 3"
    )
    assert refused("[partition.batch]\nheavy_pressure = 0.3") == (
        f"{SOURCE}: [partition.batch] heavy_pressure: must be above light_pressure of defaults "
        "(0.5), got 0.3"
    )
    # Each table alone is fine; together (a job of account a in partition p) they are not.
    assert refused("[partition.p]\nheavy_pressure = 1.0\n[account.a]\nlight_pressure = 1.5") == (
        f"{SOURCE}: [account.a] light_pressure: must be below heavy_pressure of partition.p (1), "
        "got 1.5"
    )


def test_the_error_is_a_value_error_with_its_parts() -> None:
    with pytest.raises(ValueError, match=r"\[defaults\] fallback") as info:
        parse('[defaults]\nfallback = "x"')
    assert isinstance(info.value, PolicyConfigError)
    assert (info.value.source, info.value.key) == (SOURCE, "defaults.fallback")
