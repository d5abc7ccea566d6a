"""plugin.appkey: normalisation, the comment tag, the rule, and hostile input."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from plugin.appkey import (
    MAX_PART_LENGTH,
    AppKey,
    AppKeyError,
    AppKeyRule,
    Tag,
    normalise_part,
    numeric_size,
    parse_tag,
    size_class,
)


@dataclass(frozen=True)
class Job:
    """The fields AppKeyRule reads (plugin.slurm.JobRecord has the same)."""

    name: str = "lulesh"
    user: str = "alice"
    account: str = "physics"
    partition: str = "batch"
    wckey: str = ""
    script: str | None = None
    comment: str | None = None
    admin_comment: str | None = None


HOSTILE = [
    pytest.param("\x1b[31mred\x1b[0m", id="ansi-escape"),
    pytest.param("lulesh\nadaptalloc:v1:apps", id="newline"),
    pytest.param("lu\rlesh", id="carriage-return-inside"),
    pytest.param("adaptalloc:v1:../..", id="namespace-escape"),
    pytest.param("a:b", id="colon"),
    pytest.param("*", id="star"),
    pytest.param("lu*", id="glob"),
    pytest.param("../../etc/passwd", id="path"),
    pytest.param("two words", id="space"),
    pytest.param("-leading-dash", id="leading-dash"),
    pytest.param(".hidden", id="leading-dot"),
    pytest.param("x" * 10240, id="10kB"),
    pytest.param("lul\u0435sh", id="cyrillic-e"),
    pytest.param("\u212aelvin", id="kelvin-sign-lowercases-to-k"),
    pytest.param("\uff4c\uff55\uff4c\uff45\uff53\uff48", id="fullwidth"),
    pytest.param("lulesh\u200b", id="zero-width-space"),
    pytest.param("lulesh\u202egnp.exe", id="bidi-override"),
    pytest.param("lulesh\x00", id="nul"),
    pytest.param("", id="empty"),
    pytest.param("   ", id="blank"),
    pytest.param("a@b@c", id="two-at"),
]


# --- normalisation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("LULESH", "lulesh"),
        ("  npb-lu.W_1  ", "npb-lu.w_1"),
        ("0", "0"),
        ("a" * MAX_PART_LENGTH, "a" * MAX_PART_LENGTH),
    ],
)
def test_normalise_accepts_and_lowercases(raw: str, expected: str) -> None:
    assert normalise_part(raw) == expected


@pytest.mark.parametrize("raw", HOSTILE)
def test_hostile_strings_are_refused_with_one_escaped_line(raw: str) -> None:
    with pytest.raises(AppKeyError) as info:
        AppKey.parse(raw)
    message = str(info.value)
    assert "\n" not in message
    assert "\r" not in message
    assert "\x1b" not in message
    assert "\x00" not in message
    assert "\u202e" not in message
    assert len(message) < 300


def test_too_long_is_refused_before_anything_else() -> None:
    with pytest.raises(AppKeyError, match="longer than 64 characters"):
        normalise_part("a" * (MAX_PART_LENGTH + 1))
    with pytest.raises(AppKeyError, match=r"10,240 characters"):
        normalise_part("x" * 10240)


def test_appkey_string_form_and_parse_round_trip() -> None:
    assert str(AppKey("lulesh")) == "lulesh"
    assert str(AppKey("lulesh", "large")) == "lulesh@large"
    assert AppKey.parse(" LULESH@Large ") == AppKey("lulesh", "large")
    assert AppKey.parse(str(AppKey("a.b", "c-d"))) == AppKey("a.b", "c-d")
    assert AppKey.of("NPB", "W") == AppKey("npb", "w")


@pytest.mark.parametrize(("name", "size"), [("Lulesh", None), ("lulesh", "L"), ("a:b", None)])
def test_appkey_constructor_refuses_unnormalised_parts(name: str, size: str | None) -> None:
    with pytest.raises(AppKeyError, match="not normalised"):
        AppKey(name, size)


# --- the tag ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        (None, None),
        ("", None),
        ("just a comment", None),
        ("adaptalloc:v1 app=lulesh size=large", Tag("lulesh", "large")),
        ("run 3; adaptalloc:v1 app=LULESH; more text", Tag("lulesh", None)),
        ("adaptalloc:v1 size=small", Tag(None, "small")),
        ("adaptalloc:v1 app=lulesh other words", Tag("lulesh", None)),
        ("adaptalloc:v1 resize=no", Tag(resize=False)),  # job_submit.lua's opt-out
        ("run 3 adaptalloc:v1 app=lulesh resize=no", Tag("lulesh", None, False)),
        ("adaptalloc:v1 app=lu; resize=no", Tag("lu", None)),  # the tag ends at ';'
        ("adaptalloc:v1:held", None),  # job_submit.lua's admin_comment marker
        ("adaptalloc:v1:decided=4", None),  # the daemon's admin_comment record is no tag
        ("adaptalloc:v1:../..", None),
    ],
)
def test_parse_tag(comment: str | None, expected: Tag | None) -> None:
    assert parse_tag(comment) == expected


@pytest.mark.parametrize(
    ("comment", "match"),
    [
        ("adaptalloc:v2 app=lulesh", "unsupported version"),
        ("adaptalloc:v1 ap=lulesh", "unknown key 'ap'"),
        ("adaptalloc:v1 app=a app=b", "twice"),
        ("adaptalloc:v1 app=a adaptalloc:v1 app=b", "2 adaptalloc:v1 tags"),
        ("adaptalloc:v1", "gives no key=value"),
        ("adaptalloc:v1 resize=maybe", "resize= must be yes or no"),
        ("adaptalloc:v1 app=", "empty"),
        ("adaptalloc:v1 app=../..", "must start with a letter or digit"),
        ("adaptalloc:v1 app=a:b", "only a-z"),
        ("adaptalloc:v1 app=lul\u0435sh", "non-ASCII"),
        ("adaptalloc:v1 app=\x1b[2Jx", "only a-z"),
        ("adaptalloc:v1 app=" + "x" * 65536, "longer than 64"),
        # Look-alike versions were silently no tag at all before (so app= was ignored):
        ("adaptalloc:v\u0661 app=lulesh", "'adaptalloc:v\\\\u0661' has an unsupported version"),
        ("adaptalloc:v\uff11 app=lulesh", "unsupported version"),
        ("adaptalloc:v1_0 app=lulesh", "unsupported version"),
        ("adaptalloc:v app=lulesh", "unsupported version"),
        # Only ASCII whitespace separates words, as Lua's %s in job_submit.lua: before,
        # U+001F split "app=a" from "resize=no", which the Lua opt-out check never saw.
        ("adaptalloc:v1 app=a\x1fresize=no", "only a-z"),
        ("adaptalloc:v1\u00a0app=lulesh", "unsupported version"),
    ],
)
def test_bad_tags_are_refused_whole(comment: str, match: str) -> None:
    with pytest.raises(AppKeyError, match=match) as info:
        parse_tag(comment)
    assert "\x1b" not in str(info.value)
    assert len(str(info.value)) < 300


def test_a_tag_at_the_end_of_a_64k_comment_is_found() -> None:
    comment = "x" * 65536 + " adaptalloc:v1 app=lulesh size=large"
    assert parse_tag(comment) == Tag("lulesh", "large")


# --- the rule --------------------------------------------------------------------------------


def test_default_rule_uses_the_job_name() -> None:
    assert AppKeyRule().app_for(Job(name="LULESH")) == AppKey("lulesh")


def test_comment_tag_overrides_the_name_and_admin_comment_overrides_both() -> None:
    rule = AppKeyRule()
    tagged = Job(comment="adaptalloc:v1 app=hpl size=big")
    assert rule.app_for(tagged) == AppKey("hpl", "big")
    both = Job(comment="adaptalloc:v1 app=hpl", admin_comment="adaptalloc:v1 app=lammps")
    assert rule.app_for(both) == AppKey("lammps")
    assert AppKeyRule(comment_tag=False).app_for(tagged) == AppKey("lulesh")


def test_a_size_only_tag_keeps_the_templates_name() -> None:
    assert AppKeyRule().app_for(Job(comment="adaptalloc:v1 size=large")) == AppKey(
        "lulesh", "large"
    )


def test_an_opt_out_tag_keeps_the_templates_key() -> None:
    assert AppKeyRule().app_for(Job(comment="adaptalloc:v1 resize=no")) == AppKey("lulesh")
    assert AppKeyRule().app_for(Job(admin_comment="adaptalloc:v1:held")) == AppKey("lulesh")


def test_a_bad_tag_refuses_the_job_instead_of_falling_back() -> None:
    with pytest.raises(AppKeyError, match="unknown key"):
        AppKeyRule().app_for(Job(comment="adaptalloc:v1 aap=lulesh"))


def test_template_fields_and_pattern() -> None:
    job = Job(name="lulesh_large_run7", script="/home/alice/LULESH.sbatch")
    assert AppKeyRule(template="{account}.{name}").app_for(job) == AppKey(
        "physics.lulesh_large_run7"
    )
    assert AppKeyRule(template="{script}").app_for(job) == AppKey("lulesh")
    rule = AppKeyRule(pattern=r"^(?P<app>[a-z]+)_(?P<size>small|large)")
    assert rule.app_for(job) == AppKey("lulesh", "large")
    with pytest.raises(AppKeyError, match="does not match"):
        rule.app_for(Job(name="other"))


def test_missing_fields_and_generic_names_are_refused() -> None:
    with pytest.raises(AppKeyError, match="no wckey"):
        AppKeyRule(template="{wckey}").app_for(Job())
    with pytest.raises(AppKeyError, match="no script"):
        AppKeyRule(template="{script}").app_for(Job())
    with pytest.raises(AppKeyError, match="generic"):
        AppKeyRule().app_for(Job(name="wrap"))
    assert AppKeyRule(generic_names=()).app_for(Job(name="wrap")) == AppKey("wrap")


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_job_names_yield_no_key(name: str) -> None:
    with pytest.raises(AppKeyError):
        AppKeyRule().app_for(Job(name=name))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"template": "{nmae}"}, "unknown"),
        ({"template": "fixed"}, "uses no field"),
        ({"template": "{name}}"}, "stray brace"),
        ({"pattern": "(?P<other>x)"}, "unknown"),
    ],
)
def test_bad_rules_are_refused(kwargs: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        AppKeyRule(**kwargs)  # type: ignore[arg-type]


def test_look_alike_letters_are_shown_escaped() -> None:
    with pytest.raises(AppKeyError, match=r"'lul\\u0435sh' has non-ASCII characters"):
        AppKey.parse("lul\u0435sh")


def test_surrounding_whitespace_is_normalisation_not_an_attack() -> None:
    assert AppKey.parse("lulesh\r\n") == AppKey("lulesh")


@pytest.mark.parametrize(
    ("size_class", "number"),
    [
        ("1000", 1000.0),
        ("2.5e6", 2.5e6),
        ("1e-3", 1e-3),
        (".5", 0.5),
        ("large", None),
        ("0", None),
        ("1e999", None),
        ("1-2", None),
        ("1_000", None),
        (None, None),
    ],
)
def test_a_numeric_size_class_is_also_a_problem_size(
    size_class: str | None, number: float | None
) -> None:
    assert numeric_size(size_class) == number


@pytest.mark.parametrize("value", [1000.0, 2.5e6, 0.125, 1.5e20, 3.0])
def test_size_class_names_a_number_that_reads_back(value: float) -> None:
    name = size_class(value)
    assert AppKey("cg", name).size == name  # a valid key part
    assert numeric_size(name) == value


def test_scaling_tag_is_read_and_checked() -> None:
    tag = parse_tag("adaptalloc:v1 app=heat scaling=WEAK")
    assert tag is not None
    assert tag.scaling == "weak"
    assert tag.app == "heat"
    plain = parse_tag("adaptalloc:v1 app=heat")
    assert plain is not None
    assert plain.scaling is None
    with pytest.raises(AppKeyError, match="scaling= must be strong or weak"):
        parse_tag("adaptalloc:v1 scaling=weak;rm")


def test_a_master_worker_tag_with_its_task_figures_and_an_intensity() -> None:
    tag = parse_tag(
        "adaptalloc:v1 app=farm pattern=Master-Worker tc=2.5 vi=5e7 vo=1E6 intensity=.75"
    )
    assert tag == Tag("farm", pattern="master-worker", tc=2.5, vi=5e7, vo=1e6, intensity=0.75)
    bare = parse_tag("adaptalloc:v1 app=farm pattern=master-worker")
    assert bare == Tag("farm", pattern="master-worker")  # N_opt is then learned from runs
    assert parse_tag("adaptalloc:v1 pattern=master-worker tc=1 vi=0 vo=8") == Tag(
        pattern="master-worker", tc=1.0, vi=0.0, vo=8.0
    )  # no input is fine, some data must move
    assert parse_tag("adaptalloc:v1 app=lu intensity=0.8") == Tag("lu", intensity=0.8)


@pytest.mark.parametrize(
    ("comment", "match"),
    [
        ("adaptalloc:v1 pattern=farm", "pattern= must be master-worker"),
        ("adaptalloc:v1 pattern=", "pattern= must be master-worker"),
        ("adaptalloc:v1 app=x tc=2 vi=1 vo=1", "without pattern=master-worker"),
        ("adaptalloc:v1 pattern=master-worker tc=2 vi=1", "without vo="),
        ("adaptalloc:v1 pattern=master-worker vo=1", "without tc=, vi="),
        ("adaptalloc:v1 pattern=master-worker tc=0 vi=1 vo=1", "tc= must be a finite number > 0"),
        ("adaptalloc:v1 pattern=master-worker tc=-1 vi=1 vo=1", "plain decimal number > 0"),
        ("adaptalloc:v1 pattern=master-worker tc=1e999 vi=1 vo=1", "finite"),
        ("adaptalloc:v1 pattern=master-worker tc=nan vi=1 vo=1", "plain decimal"),
        ("adaptalloc:v1 pattern=master-worker tc=inf vi=1 vo=1", "plain decimal"),
        ("adaptalloc:v1 pattern=master-worker tc=0x10 vi=1 vo=1", "plain decimal"),
        ("adaptalloc:v1 pattern=master-worker tc=1 vi=0 vo=0", "both 0"),
        ("adaptalloc:v1 pattern=master-worker tc=1 vi=$(id) vo=1", "plain decimal"),
        ("adaptalloc:v1 intensity=0", "intensity= must be a finite number > 0"),
        ("adaptalloc:v1 intensity=" + "1" * 25, "plain decimal"),
        ("adaptalloc:v1 intensity=1 intensity=2", "twice"),
    ],
)
def test_bad_pattern_figures_refuse_the_tag_whole(comment: str, match: str) -> None:
    with pytest.raises(AppKeyError, match=match) as info:
        parse_tag(comment)
    assert len(str(info.value)) < 300


# --- whose runs: owners --------------------------------------------------------------------


def test_by_default_a_jobs_key_is_its_users_own_whatever_its_name_or_tag_says() -> None:
    rule = AppKeyRule()
    assert rule.key_for(Job(name="LULESH")) == AppKey("lulesh", owner="alice")
    # A tag names the application, never the owner: bob cannot write into alice's key.
    forged = Job(user="bob", comment="adaptalloc:v1 app=lulesh")
    assert rule.key_for(forged) == AppKey("lulesh", owner="bob")
    assert str(rule.key_for(Job(comment="adaptalloc:v1 size=large"))) == "alice/lulesh@large"


def test_an_owned_key_round_trips_and_its_site_key_drops_the_owner() -> None:
    key = AppKey.parse("Alice_1/LULESH@Large")
    assert key == AppKey("lulesh", "large", "Alice_1")  # the user name is taken exactly
    assert str(key) == "Alice_1/lulesh@large"
    assert key.app == "lulesh@large"
    assert key.site == AppKey("lulesh", "large")
    assert key.site.site == key.site
    assert AppKey("lulesh").owned_by("bob") == AppKey("lulesh", owner="bob")
    assert AppKey.parse(str(key)) == key


@pytest.mark.parametrize(
    "text",
    ["/lulesh", "a b/lulesh", "al:ice/lulesh", "alice/bob/lulesh", "é/lulesh", "x" * 65 + "/lu"],
)
def test_an_owner_that_is_no_user_name_is_refused(text: str) -> None:
    with pytest.raises(AppKeyError):
        AppKey.parse(text)


def test_a_job_whose_user_name_cannot_own_a_key_has_none() -> None:
    for user in ("", "a b", "x" * 65, "al\nice"):
        with pytest.raises(AppKeyError, match="user"):
            AppKeyRule().key_for(Job(user=user))


def test_shared_apps_and_the_site_scope_pool_every_users_runs() -> None:
    shared = AppKeyRule(shared=("lulesh*", "namd@large"))
    assert shared.key_for(Job(name="lulesh")) == AppKey("lulesh")
    assert shared.key_for(Job(name="lulesh2")) == AppKey("lulesh2")
    assert shared.key_for(Job(name="namd", comment="adaptalloc:v1 size=large")) == AppKey(
        "namd", "large"
    )
    assert shared.key_for(Job(name="namd")) == AppKey("namd", owner="alice")
    assert AppKeyRule(scope="site").key_for(Job(user="bob")) == AppKey("lulesh")
    with pytest.raises(ValueError, match="scope"):
        AppKeyRule(scope="account")
