"""Fixtures for tests against the real local testbed (Slurm, slurmdbd, Redis).

A pytest plugin: tests/conftest.py loads it (``pytest_plugins``), so integration tests and
benchmarks ask for these fixtures by name, never import them.

The testbed is the one ``deploy/local/up.sh`` starts (see deploy/local/README.md).
The session fixture ``local_cluster`` runs that script once per test session: it
brings the cluster up from nothing, starts what is missing, or (the usual case on a
developer's machine) finds everything up and returns at once. When the script cannot
run here, every integration test FAILS with the script's own message; they are never
skipped, so a machine that silently lacks the testbed cannot pass the suite.

Fixtures:

``local_cluster``  (session) the running testbed, its env applied to os.environ;
                   in CI, stopped again at the end if this session started it
``slurm``          (session) small helper around the Slurm commands
``redis_client``   (function) redis-py client on a scratch database, flushed
                   before and after each test
``submit_job``     (function) ``submit_job(*sbatch_args, wrap=...) -> job id``;
                   every job it submitted is cancelled at teardown
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from .testbed import (
    DOWN_SH,
    PROJECT_ROOT,
    REDIS_SCRATCH_DB,
    UP_SH,
    UP_SH_TIMEOUT_S,
    LocalCluster,
    PrivateRedis,
    SlurmCLI,
    SubmitJob,
)

if str(PROJECT_ROOT) not in sys.path:  # plugin/ when the package is not installed
    sys.path.insert(0, str(PROJECT_ROOT))

from plugin.cli.env_file import read_env_file


def _text(output: str | bytes | None) -> str:
    """What a timed-out subprocess had written (str under text=True; bytes are decoded)."""
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def _state_dir() -> Path:
    return Path(os.environ.get("ADAPTALLOC_STATE_DIR") or PROJECT_ROOT / ".local")


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[LocalCluster]:
    """Bring the testbed up (or reuse the running one) and apply its env file.

    The variables of ``.local/env`` (SLURM_CONF, REDIS_URL, …; not ADAPTALLOC_CONFIG) are
    put into os.environ for the session, overriding what was there (the tests must talk to
    this testbed and no other cluster), and restored afterwards.
    """
    if not UP_SH.is_file():
        pytest.fail(f"{UP_SH} is missing", pytrace=False)
    try:
        proc = subprocess.run(  # noqa: S603 - fixed argument list, no shell
            [str(UP_SH)],
            cwd=PROJECT_ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=UP_SH_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"deploy/local/up.sh did not finish within {UP_SH_TIMEOUT_S}s; "
            f"its output so far:\n{_text(exc.stdout)}{_text(exc.stderr)}",
            pytrace=False,
        )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(
            "the integration tests need the local testbed, and deploy/local/up.sh failed "
            f"(exit {proc.returncode}). They are not skipped: fix the testbed, or run only "
            "the unit tests (pytest tests/unit). up.sh said:\n" + output[-4000:],
            pytrace=False,
        )
    env_file = _state_dir() / "env"
    if not env_file.is_file():
        pytest.fail(f"deploy/local/up.sh succeeded but wrote no {env_file}", pytrace=False)
    env = read_env_file(env_file)
    # A daemon left running (up.sh --with-daemon, or the demo with --keep-daemon) would hold
    # and resize the tests' jobs; the daemon tests start their own. Stop it (it releases
    # what it holds); a no-op when none runs.
    stopped = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(DOWN_SH), "--daemon-only"],
        cwd=PROJECT_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=UP_SH_TIMEOUT_S,
        check=False,
    )
    if stopped.returncode != 0:
        pytest.fail(
            "a running adaptalloc daemon would interfere with the tests and "
            f"deploy/local/down.sh --daemon-only failed:\n{stopped.stdout}{stopped.stderr}",
            pytrace=False,
        )

    # ADAPTALLOC_CONFIG stays out: every test names the config its commands read (a daemon's
    # own, with metrics_port 0), and the testbed's would give them its state directory and
    # metrics port; the test of the testbed as up.sh leaves it sources the env file itself.
    applied = {key: value for key, value in env.items() if key != "ADAPTALLOC_CONFIG"}
    saved = {key: os.environ.get(key) for key in applied}
    os.environ.update(applied)
    try:
        yield LocalCluster(state_dir=Path(env["ADAPTALLOC_STATE_DIR"]), env=env, up_output=output)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if _should_tear_down(output):
            subprocess.run(  # noqa: S603 - fixed argument list, no shell
                [str(DOWN_SH)],
                cwd=PROJECT_ROOT,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=600,
                check=False,
            )


def _should_tear_down(up_output: str) -> bool:
    """Stop the testbed at the end of the session?

    Only a testbed this session started, and only in CI (``CI`` set) or when
    ``ADAPTALLOC_TESTBED_TEARDOWN=1``: a developer's running testbed is reused and
    left running. ``ADAPTALLOC_TESTBED_TEARDOWN=0`` keeps it in CI too.
    """
    choice = os.environ.get("ADAPTALLOC_TESTBED_TEARDOWN", "")
    if choice in {"0", "1"}:
        wanted = choice == "1"
    else:
        wanted = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
    return wanted and "already up and healthy" not in up_output


@pytest.fixture(scope="session")
def slurm(local_cluster: LocalCluster) -> SlurmCLI:
    """Helper for Slurm commands against the running testbed."""
    return SlurmCLI(local_cluster)


@pytest.fixture
def redis_client(local_cluster: LocalCluster) -> Iterator[Any]:
    """A redis-py client (str responses) on scratch db 15, flushed before and after."""
    import redis  # noqa: PLC0415 - only integration tests need redis-py

    parts = urlsplit(local_cluster.redis_url)
    url = urlunsplit(parts._replace(path=f"/{REDIS_SCRATCH_DB}"))
    client = redis.Redis.from_url(url, decode_responses=True)
    client.flushdb()
    try:
        yield client
    finally:
        client.flushdb()
        client.close()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A redis-server of the test's own (not started yet), stopped at teardown."""
    server = PrivateRedis(tmp_path)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def submit_job(
    slurm: SlurmCLI, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[SubmitJob]:
    """Factory: ``submit_job("--nodes=2-4", wrap="sleep 1") -> job id``.

    Submits with ``sbatch --parsable`` as an argument list (never a shell), from a
    temporary directory, output to /dev/null unless an ``--output`` is given, and a
    job name naming the test unless a ``--job-name`` is given. ``as_user=NAME``
    submits as that unprivileged Unix user (``slurm.test_user`` is the testbed's), from
    a directory it owns. Every job submitted is cancelled at teardown (a no-op for
    finished ones).
    """
    submitted: list[int] = []
    default_name = f"adaptalloc-test-{request.node.name}"[:100]

    def submit(*sbatch_args: str, wrap: str | None = None, as_user: str | None = None) -> int:
        workdir = tmp_path
        if as_user is not None:  # a directory the user may write into, as on a real cluster
            workdir = tmp_path / f"as-{as_user}"
            workdir.mkdir(exist_ok=True)
            shutil.chown(workdir, user=as_user)
            for parent in (tmp_path, *tmp_path.parents):
                if parent.stat().st_mode & 0o011 != 0o011:
                    parent.chmod(parent.stat().st_mode | 0o011)  # traversable, not listable
        args = ["sbatch", "--parsable", f"--chdir={workdir}"]
        if not any(a.startswith(("--output", "-o")) for a in sbatch_args):
            args.append("--output=/dev/null")
        if not any(a.startswith(("--job-name", "-J")) for a in sbatch_args):
            args.append(f"--job-name={default_name}")
        args.extend(sbatch_args)
        if wrap is not None:
            args.extend(["--wrap", wrap])
        out = slurm.run(*args, as_user=as_user).stdout.strip()
        job_id = int(out.split(";", 1)[0])  # "ID" or "ID;cluster"
        submitted.append(job_id)
        return job_id

    yield submit

    if submitted:
        slurm.run("scancel", *map(str, submitted), check=False)

        def all_gone() -> bool:
            out = slurm.run(
                "squeue",
                "-h",
                "-o",
                "%i",
                "--jobs=" + ",".join(map(str, submitted)),
                "--states",
                "PENDING,RUNNING,COMPLETING,SUSPENDED,CONFIGURING",
                check=False,
            ).stdout
            return not out.strip()

        # Leave the nodes free for the next test; cancelled jobs end within KillWait.
        slurm.wait_for("the test's jobs to leave the queue after scancel", all_gone)
