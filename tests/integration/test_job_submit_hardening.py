"""job_submit.lua's heartbeat, settings and spool, hardened, and what it
logs and sets (SchedMD's rule for a thin hook: set only what you mean to, log the uid).

Each test rewrites the heartbeat, the spool or ``adaptalloc_submit.conf`` the way a clock
skew, a typo, a comment or a full disk would, and submits a real job as the unprivileged
test user; the fixtures put everything back.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .job_submit_harness import (
    MARKER,
    Heartbeat,
    SubmitConf,
    held,
    untouched,
)
from .testbed import PROJECT_ROOT, LocalCluster, SlurmCLI, SubmitJob

pytestmark = pytest.mark.integration

#: The testbed's default partition (Default=YES in deploy/local/slurm.conf.in) and another.
DEFAULT_PARTITION = "debug"
OTHER_PARTITION = "batch"


def submit_as_user(slurm: SlurmCLI, submit_job: SubmitJob, *args: str) -> int:
    return submit_job("--nodes=1-2", *args, wrap="sleep 1", as_user=slurm.test_user)


@pytest.mark.parametrize(
    "stamp",
    [
        "{future}",
        "1e999",
        "inf",
        "-inf",
        "nan",
        "0x7fffffff",
        "{now}.5",
        "-1",
        "12abc",
        "garbage",
        "",
    ],
)
def test_a_heartbeat_that_is_not_a_past_whole_second_is_no_heartbeat(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, stamp: str
) -> None:
    """Before: "{future}" (an hour ahead), "1e999", "inf" and "0x7fffffff" (2038) held."""
    now = int(time.time())
    daemon_heartbeat.write(stamp.format(now=now, future=now + 3600) + "\n")
    assert untouched(slurm, submit_as_user(slurm, submit_job)), stamp


@pytest.mark.parametrize("max_age", ["1e999", "inf", "-5", "ten"])
def test_a_bad_heartbeat_max_age_holds_nothing(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_heartbeat: Heartbeat,
    submit_conf: SubmitConf,
    max_age: str,
) -> None:
    """Before: "1e999" and "inf" made a 2-minute-old heartbeat count as alive."""
    daemon_heartbeat.beat(age_s=120)
    submit_conf.set(heartbeat_max_age=max_age)
    assert untouched(slurm, submit_as_user(slurm, submit_job)), max_age


def test_a_comment_after_heartbeat_max_age_is_not_part_of_it(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, submit_conf: SubmitConf
) -> None:
    """Before: "600 # ten minutes" was no number, so 15 s applied and nothing was held."""
    daemon_heartbeat.beat(age_s=120)
    submit_conf.set(heartbeat_max_age="600 # ten minutes")
    assert held(slurm, submit_as_user(slurm, submit_job))[0]


def test_a_comment_after_partitions_enables_nothing(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, submit_conf: SubmitConf
) -> None:
    """Before: the words of the comment were partition names, so batch was held."""
    submit_conf.set(partitions=f"{DEFAULT_PARTITION} # {OTHER_PARTITION} next week")
    assert untouched(slurm, submit_as_user(slurm, submit_job, f"--partition={OTHER_PARTITION}"))
    assert held(slurm, submit_as_user(slurm, submit_job, f"--partition={DEFAULT_PARTITION}"))[0]


def test_a_comment_after_state_dir_is_not_part_of_it(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, submit_conf: SubmitConf
) -> None:
    """Before: the heartbeat was looked for under "DIR # ..." and nothing was held."""
    submit_conf.set(state_dir=f"{submit_conf.state_dir} # the daemon's [daemon] state_dir")
    assert held(slurm, submit_as_user(slurm, submit_job))[0]


def test_a_job_without_partition_is_held_only_when_the_default_partition_is_enabled(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, submit_conf: SubmitConf
) -> None:
    """The hook resolves the default partition from part_list's flag_default. Before: a job
    naming no partition was never held with a list, even one naming the default."""
    submit_conf.set(partitions=f"{OTHER_PARTITION}, {DEFAULT_PARTITION}")
    job = submit_as_user(slurm, submit_job)
    assert held(slurm, job)[0]
    assert slurm.show_job(job)["Partition"] == DEFAULT_PARTITION

    submit_conf.set(partitions=OTHER_PARTITION)
    assert untouched(slurm, submit_as_user(slurm, submit_job))


@pytest.mark.parametrize("how", ["directory", "full"])
def test_nothing_is_held_when_the_spool_cannot_be_written(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, how: str
) -> None:
    """The spool as a directory (open fails) or a link to /dev/full (the flush fails).
    Before: both held the job with no wake-up line written."""
    daemon_heartbeat.break_spool(how)
    assert untouched(slurm, submit_as_user(slurm, submit_job)), how


def log_lines_after(log: Path, offset: int, needle: str) -> list[str]:
    with log.open("rb") as stream:
        stream.seek(offset)
        text = stream.read().decode("utf-8", "replace")
    return [line for line in text.splitlines() if needle in line]


def test_it_logs_what_it_did_with_the_submitting_uid(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_heartbeat: Heartbeat,
    local_cluster: LocalCluster,
) -> None:
    """A held job and a moldable job left alone, each one slurmctld log line with the
    user's uid (the second was silent before 6be1237)."""
    uid = pwd.getpwnam(slurm.test_user).pw_uid
    log = local_cluster.log_dir / "slurmctld.log"
    start = log.stat().st_size
    submit_as_user(slurm, submit_job)
    submit_as_user(slurm, submit_job, "--exclude=node8")
    held_line = f"adaptalloc: held a moldable job from uid {uid} for sizing"
    alone_line = f"adaptalloc: left a moldable job from uid {uid} alone: excluded nodes"
    slurm.wait_for(
        "the hook's two log lines",
        lambda: (
            bool(log_lines_after(log, start, held_line))
            and bool(log_lines_after(log, start, alone_line))
        ),
    )
    assert len(log_lines_after(log, start, "adaptalloc:")) == 2


#: What differs between any two submissions of one request.
PER_SUBMISSION = {"JobId", "SubmitTime", "EligibleTime"}


def test_a_hold_sets_only_the_priority_and_the_marker(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat
) -> None:
    """The hook's hold against the user's own (``--hold``, which the hook leaves alone): the
    same request, both held and so neither sized by the scheduler; only the marker differs."""
    request = ("--time=7", "--comment=run 4", "--nice=5", "--ntasks=2")
    ours = submit_as_user(slurm, submit_job, *request)
    theirs = submit_as_user(slurm, submit_job, *request, "--hold")
    is_held, our_fields = held(slurm, ours)
    their_fields = slurm.show_job(theirs)
    assert is_held
    assert our_fields["Priority"] == their_fields["Priority"] == "0"
    assert our_fields["AdminComment"] == MARKER
    assert their_fields.get("AdminComment", "") in ("", "(null)")
    differing = {
        key: (our_fields.get(key), their_fields.get(key))
        for key in our_fields.keys() | their_fields.keys()
        if key not in PER_SUBMISSION | {"AdminComment"}
        and our_fields.get(key) != their_fields.get(key)
    }
    assert differing == {}


HOOK = PROJECT_ROOT / "deploy" / "slurm" / "job_submit.lua"
#: Prepended to the hook: io.open raises for a path ending in {name}, as a Lua fault would.
OPEN_FAULT = """local real_open = io.open
io.open = function(path, mode)
    if path:sub(-#"{name}") == "{name}" then
        error("injected fault opening " .. path)
    end
    return real_open(path, mode)
end
"""
#: Prepended to the hook: logging raises.
LOG_FAULT = """slurm.log_info = function()
    error("injected fault logging")
end
"""


def bump_mtime(path: Path, after: Path) -> None:
    """Make slurmctld reload the script on the next submission: it reloads when the file's
    mtime (whole seconds) is later than the one it loaded, so set `path`'s ahead of now and
    of `after`'s (the script loaded so far)."""
    ahead = max(int(time.time()) + 2, int(after.stat().st_mtime) + 1)
    os.utime(path, (ahead, ahead))


@pytest.fixture
def faulty_hook(local_cluster: LocalCluster) -> Iterator[Callable[[str], None]]:
    """Replace the hook slurmctld loads by the repo's with a fault injected; the link to the
    repo's hook is put back (and reloaded) at teardown."""
    loaded = local_cluster.slurm_conf.parent / "job_submit.lua"
    target = os.readlink(loaded)

    def inject(prelude: str) -> None:
        text = prelude + HOOK.read_text()
        scratch = loaded.with_name("job_submit.lua.faulty")
        scratch.write_text(text)
        bump_mtime(scratch, after=loaded)
        scratch.replace(loaded)

    try:
        yield inject
    finally:
        injected = loaded.with_name("job_submit.lua.injected")
        loaded.replace(injected)
        loaded.symlink_to(target)
        bump_mtime(HOOK, after=injected)
        injected.unlink()


@pytest.mark.parametrize("name", ["/heartbeat", "/spool"])
def test_a_fault_in_the_hook_leaves_the_job_untouched(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_heartbeat: Heartbeat,
    local_cluster: LocalCluster,
    faulty_hook: Callable[[str], None],
    name: str,
) -> None:
    """A Lua error while deciding (heartbeat) or announcing (spool): the job is accepted as
    submitted, and the error is logged with the uid."""
    uid = pwd.getpwnam(slurm.test_user).pw_uid
    log = local_cluster.log_dir / "slurmctld.log"
    start = log.stat().st_size
    faulty_hook(OPEN_FAULT.replace("{name}", name))
    job = submit_as_user(slurm, submit_job)
    assert untouched(slurm, job)
    needle = f"left a moldable job from uid {uid} alone: "
    assert any(
        "error: " in line
        and line.endswith(f"injected fault opening {daemon_heartbeat.path.parent}{name}")
        for line in log_lines_after(log, start, needle)
    )


def test_a_fault_in_logging_still_accepts_every_submission(
    slurm: SlurmCLI,
    submit_job: SubmitJob,
    daemon_heartbeat: Heartbeat,
    faulty_hook: Callable[[str], None],
) -> None:
    """slurm.log_info raising: the job left alone is accepted untouched, the job held stays
    held (the log line comes after the hold). This passed before the outer pcall too: 22.05's
    job_submit/lua logs an error escaping the hook and accepts the job as the hook left it;
    later versions reject the submission (their slurm_lua_pcall's rc is returned)."""
    faulty_hook(LOG_FAULT)
    assert untouched(slurm, submit_as_user(slurm, submit_job, "--exclude=node8"))
    assert held(slurm, submit_as_user(slurm, submit_job))[0]


def test_a_job_listing_partitions_is_held_only_when_every_one_is_enabled(
    slurm: SlurmCLI, submit_job: SubmitJob, daemon_heartbeat: Heartbeat, submit_conf: SubmitConf
) -> None:
    """Partition choice: the daemon chooses among a job's partitions, so such a job is held,
    but only when adaptalloc is enabled in all of them (before: never held)."""
    listed = f"--partition={DEFAULT_PARTITION},{OTHER_PARTITION}"
    assert held(slurm, submit_as_user(slurm, submit_job, listed))[0]
    submit_conf.set(partitions=DEFAULT_PARTITION)
    assert untouched(slurm, submit_as_user(slurm, submit_job, listed))
    submit_conf.set(partitions=f"{OTHER_PARTITION},{DEFAULT_PARTITION}")
    assert held(slurm, submit_as_user(slurm, submit_job, listed))[0]
