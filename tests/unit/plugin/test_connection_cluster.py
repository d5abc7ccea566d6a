"""plugin.store.connection: ``redis+cluster://`` URLs are taken apart exactly, their
password never shows, and a malformed one is one clear error line, not a traceback."""

from __future__ import annotations

import pytest

from plugin.store.connection import (
    CLUSTER_PORT,
    ClusterUrl,
    StoreUnavailable,
    connect,
    mask_url,
    parse_cluster_url,
)

from .conftest import RunCli


def test_nodes_user_and_password() -> None:
    url = "redis+cluster://ann:s%40cret@h1:7000,h2,10.0.0.3:7002"
    assert parse_cluster_url(url) == ClusterUrl(
        (("h1", 7000), ("h2", CLUSTER_PORT), ("10.0.0.3", 7002)), "ann", "s@cret"
    )
    assert parse_cluster_url("redis+cluster://h1/").password is None
    assert parse_cluster_url("redis+cluster://:pw@h1/0").password == "pw"  # noqa: S105


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis+cluster://h1:7000/3", "only database 0"),
        ("redis+cluster://h1:port", "not HOST or HOST:PORT"),
        ("redis+cluster://h1:99999", "out of range"),
        ("redis+cluster://h1,,h2", "not HOST or HOST:PORT"),
        ("redis+cluster://", "not HOST or HOST:PORT"),
    ],
)
def test_malformed_urls_say_what_is_wrong(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_cluster_url(url)
    with pytest.raises(StoreUnavailable, match="is not usable"):
        connect(url, check=False)


def test_the_password_is_masked() -> None:
    masked = mask_url("redis+cluster://ann:topsecret@h1:7000,h2:7001")
    assert masked == "redis+cluster://ann:***@h1:7000,h2:7001"
    assert mask_url("redis+cluster://h1:7000") == "redis+cluster://h1:7000"


def test_a_bad_cluster_url_is_one_error_line(run_cli: RunCli) -> None:
    done = run_cli("decisions", "--redis-url", "redis+cluster://:pw@h1:x")
    assert done.returncode != 0
    [line] = [x for x in done.stderr_lines if x.strip()]
    assert line.startswith("adaptalloc: error: Redis URL redis+cluster://:***@h1:x")
    assert "pw@" not in done.stderr


def test_an_unreachable_cluster_is_one_error_line(run_cli: RunCli) -> None:
    done = run_cli("decisions", "--redis-url", "redis+cluster://:pw@127.0.0.1:1")
    assert done.returncode != 0
    [line] = [x for x in done.stderr_lines if x.strip()]
    assert line.startswith("adaptalloc: error: Redis at redis+cluster://:***@127.0.0.1:1")
    assert "pw@" not in done.stderr
