"""plugin.store.connection: ``redis+sentinel://`` URLs are taken apart exactly, their
password never shows, and a malformed one is one clear error line, not a traceback."""

from __future__ import annotations

import pytest

from plugin.store.connection import (
    SENTINEL_PORT,
    SentinelUrl,
    StoreUnavailable,
    connect,
    mask_url,
    parse_sentinel_url,
)

from .conftest import RunCli


def test_sentinels_service_db_and_password() -> None:
    url = "redis+sentinel://:s%40cret@h1:26380,h2,10.0.0.3:26381/mymaster/3"
    assert parse_sentinel_url(url) == SentinelUrl(
        (("h1", 26380), ("h2", SENTINEL_PORT), ("10.0.0.3", 26381)), "mymaster", 3, None, "s@cret"
    )


def test_user_and_default_db() -> None:
    parsed = parse_sentinel_url("redis+sentinel://ann:pw@h1/svc")
    assert (parsed.username, parsed.password, parsed.db, parsed.service) == ("ann", "pw", 0, "svc")
    assert parse_sentinel_url("redis+sentinel://h1:1/svc/").password is None


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis+sentinel://h1:26379", "path must be /SERVICE"),
        ("redis+sentinel://h1:26379/svc/x", "database 'x'"),
        ("redis+sentinel://h1:port/svc", "not HOST or HOST:PORT"),
        ("redis+sentinel://h1:99999/svc", "out of range"),
        ("redis+sentinel://h1,,h2/svc", "not HOST or HOST:PORT"),
        ("redis+sentinel://h1/svc/0/extra", "path must be /SERVICE"),
    ],
)
def test_malformed_urls_say_what_is_wrong(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_sentinel_url(url)
    with pytest.raises(StoreUnavailable, match="is not usable"):
        connect(url, check=False)


def test_the_password_is_masked() -> None:
    masked = mask_url("redis+sentinel://ann:topsecret@h1:26379,h2:26379/svc/2")
    assert masked == "redis+sentinel://ann:***@h1:26379,h2:26379/svc/2"
    assert mask_url("redis+sentinel://h1/svc") == "redis+sentinel://h1/svc"


def test_a_bad_sentinel_url_is_one_error_line(run_cli: RunCli) -> None:
    done = run_cli("decisions", "--redis-url", "redis+sentinel://:pw@h1:x/svc")
    assert done.returncode != 0
    [line] = [x for x in done.stderr_lines if x.strip()]
    assert line.startswith("adaptalloc: error: Redis URL redis+sentinel://:***@h1:x/svc")
    assert "pw@" not in done.stderr
