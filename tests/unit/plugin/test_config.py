"""plugin.config: defaults, the example file, and one clear line for every refused value."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from plugin.appkey import AppKey
from plugin.config import (
    CONFIG_ENV,
    Config,
    ConfigError,
    find_config,
    load_config,
    parse_config,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "deploy" / "adaptalloc.example.toml"


def test_defaults_without_a_file() -> None:
    config = load_config(None, environ={})
    assert config == Config()
    assert config.learner.max_observations == 500
    assert config.learner.max_age_s == 365 * 86400.0
    assert config.redis.url == ""
    assert config.appkey.rule().template == "{name}"


def test_the_example_file_holds_every_key_with_its_default() -> None:
    doc = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    config = parse_config(doc, str(EXAMPLE))
    assert config == Config(source=str(EXAMPLE))
    defaults = Config()
    for section in ("redis", "appkey", "learner", "slurm"):
        listed = set(doc[section])
        expected = set(vars(getattr(defaults, section)))
        assert listed == expected, f"[{section}] lists {sorted(listed ^ expected)} differently"


def test_a_file_is_read_and_converted(tmp_path: Path) -> None:
    path = tmp_path / "adaptalloc.toml"
    path.write_text(
        '[redis]\nurl = "rediss://cache:6380/2"\nretries = 5\n'
        '[appkey]\ntemplate = "{account}.{name}"\ngeneric_names = ["wrap"]\n'
        "[learner]\nmax_age_days = 30\nrefit_debounce_s = 5\nrefit_growth = 0\n"
        "refit_max_age_h = 0\n",
        encoding="utf-8",
    )
    config = load_config(str(path))
    assert config.learner.refit_growth == 0.0  # every change, as before the refit cadence
    assert config.learner.refit_max_age_s is None  # 0: never
    assert Config().learner.refit_max_age_s == 24 * 3600.0
    assert config.redis.url == "rediss://cache:6380/2"
    assert config.redis.retries == 5
    assert config.learner.max_age_s == 30 * 86400.0
    assert isinstance(config.learner.refit_debounce_s, float)
    assert config.appkey.generic_names == ("wrap",)
    job_like = type(
        "J",
        (),
        {
            "name": "x",
            "user": "ann",
            "account": "phys",
            "comment": None,
            "admin_comment": None,
            "script": None,
        },
    )
    assert config.appkey.rule().key_for(job_like()) == AppKey("phys.x", owner="ann")


@pytest.mark.parametrize(
    ("text", "where", "facts"),
    [
        ("[redis]\nurll = 'x'\n", "[redis] urll", ("not a known key", 'did you mean "url"?')),
        ("[daemon]\nzzz = 1\n", "[daemon] zzz", ("not a known key", "adaptalloc.example.toml")),
        ("[reddis]\n", "[reddis]", ("not a known section", '"redis"')),
        ("[tables]\n", "[tables]", ("not a known section", "redis, appkey, learner")),
        ("[redis]\nurl = 'http://x'\n", "[redis] url", ("redis://", '"http://x"')),
        ("[redis]\nretries = -1\n", "[redis] retries", ("whole number", "[0, 20]", "got -1")),
        ("[redis]\nretries = true\n", "[redis] retries", ("whole number", "got true")),
        ("[redis]\nsocket_timeout_s = 0\n", "[redis] socket_timeout_s", ("> 0", "got 0")),
        ("[learner]\nmax_age_days = -3\n", "[learner] max_age_days", ("≥ 0", "got -3")),
        ("[learner]\nmax_age_days = nan\n", "[learner] max_age_days", ("number", "got nan")),
        ("[learner]\nrefit_growth = -0.5\n", "[learner] refit_growth", ("[0, 10]", "got -0.5")),
        ("[learner]\nrefit_max_age_h = -1\n", "[learner] refit_max_age_h", ("≥ 0", "got -1")),
        ("[learner]\nsource = 'slurmdbd'\n", "[learner] source", ('"sacct"', '"slurmdbd"')),
        ("[learner]\nmethod = 'magic'\n", "[learner] method", ('"adept", "lm"', '"magic"')),
        ("[appkey]\ntemplate = '{nmae}'\n", "[appkey]", ("template", "{nmae}", "unknown")),
        ("[appkey]\npattern = '('\n", "[appkey] pattern", ("regular expression",)),
        ("[appkey]\ngeneric_names = 'wrap'\n", "[appkey] generic_names", ("list of strings",)),
        ("[slurm]\nbackend = 'rest'\n", "[slurm] backend", ('"pyslurm"', '"rest"')),
        ("redis = 3\n", "[redis]", ("must be a table", "got 3")),
        ("node_types = 3\n", "[node_types]", ("[node_types.NAME] tables",)),
        (
            "[node_types.big]\npeak_gflops = 3000\n",
            "[node_types.big] bandwidth_gbs",
            ("required", "> 0"),
        ),
        (
            "[node_types.big]\npeak_gflops = -1\nbandwidth_gbs = 100\n",
            "[node_types.big] peak_gflops",
            ("> 0", "got -1"),
        ),
        (
            "[node_types.big]\npeak_gflops = 1\nbandwidth_gbs = 1\nlink = 1\n",
            "[node_types.big] link",
            ("not a known key", "link_gbs"),
        ),
        (
            "[node_types.'a b']\npeak_gflops = 1\nbandwidth_gbs = 1\n",
            '[node_types."a b"]',
            ("partition name",),
        ),
        ("[node_type.big]\n", "[node_type]", ("not a known section", '"node_types"')),
        (
            "[redis]\nbackoff_base_s = 2.0\nbackoff_cap_s = 1.0\n",
            "[redis] backoff_cap_s",
            ("backoff_base_s",),
        ),
    ],
)
def test_refused_values_name_file_key_and_what_is_allowed(
    tmp_path: Path, text: str, where: str, facts: tuple[str, ...]
) -> None:
    path = tmp_path / "site.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}: {where}: "), message
    assert [fact for fact in facts if fact not in message] == [], message
    assert "\n" not in message


def test_node_types_are_read_by_partition_name(tmp_path: Path) -> None:
    path = tmp_path / "adaptalloc.toml"
    path.write_text(
        "[node_types.big]\npeak_gflops = 3000\nbandwidth_gbs = 200\nlink_gbs = 12.5\n"
        "[node_types.batch]\npeak_gflops = 1000\nbandwidth_gbs = 100\n",
        encoding="utf-8",
    )
    config = load_config(str(path))
    assert [name for name, _ in config.node_types] == ["batch", "big"]
    big = config.node_type("big")
    assert big is not None
    assert (big.peak_gflops, big.bandwidth_gbs, big.link_gbs) == (3000.0, 200.0, 12.5)
    batch = config.node_type("batch")
    assert batch is not None
    assert batch.link_gbs == 0.0  # not known: master-worker caps learned from runs there
    assert config.node_type("debug") is None
    assert Config().node_types == ()


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("[redis\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(str(bad))
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(str(binary))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[redis]\nurl = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("[redis]\nurl = " + "{a=" * 3000 + "1" + "}" * 3000 + "\n", "nested too deeply"),
        ('[appkey]\npattern = "' + "(" * 5000 + ")" * 5000 + '"\n', "regular expression.*nested"),
        ('[appkey]\npattern = "a{99999999999}"\n', "regular expression.*repeat count"),
        ("[learner]\nmax_age_days = \u0663\n", "not valid TOML"),
        ("[learner]\nmax_age_days = \uff11\n", "not valid TOML"),
        # Failed before the policy file's reader was shared: ValueError, a traceback (exit 70).
        ("[learner]\nmax_age_days = " + "9" * 5000 + "\n", "not valid TOML: Exceeds the limit"),
    ],
)
def test_deep_nesting_and_non_ascii_numbers_are_one_clear_error(
    tmp_path: Path, text: str, problem: str
) -> None:
    # The first three raised RecursionError or OverflowError (exit 70) before.
    path = tmp_path / "deep.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=problem) as info:
        load_config(str(path))
    assert "\n" not in str(info.value)
    assert len(str(info.value)) < 400


def test_toml_digit_separators_are_toml_syntax(tmp_path: Path) -> None:
    # 1_000 is an integer in TOML itself (toml.io, "Integer"), unlike 1_0 in a CSV cell.
    path = tmp_path / "sep.toml"
    path.write_text("[learner]\nmax_observations = 1_000\n", encoding="utf-8")
    assert load_config(str(path)).learner.max_observations == 1000


def test_hostile_values_are_escaped(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('[learner]\nsource = "\\u001b[31mred\\n"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert "\x1b" not in str(info.value)
    assert "\n" not in str(info.value)


def test_where_the_file_is_looked_for(tmp_path: Path) -> None:
    assert find_config("given.toml", {CONFIG_ENV: "env.toml"}) == Path("given.toml")
    assert find_config(None, {CONFIG_ENV: "env.toml"}) == Path("env.toml")
