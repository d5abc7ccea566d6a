"""The least any releaser must do, for the latency floor (tests/benchmarks/test_release_floor.py).

``python floor_releaser.py STATE_DIR NAME OUT [--resize]``: keeps the heartbeat in STATE_DIR
fresh, so job_submit.lua holds moldable jobs exactly as it does for the daemon (same hold, same
spool line), and releases them with no policy, no Redis, no spool, no journal, no guard: a loop
that reads the queue with the daemon's own libslurm reader (`LibslurmSlurm.pending_jobs`,
one ``slurm_load_jobs``) and releases each held job called NAME with one update
(`LibslurmSlurm.update_jobs`, priority INFINITE, the daemon's 4 threads), as fast as it can:
no sleep between reads. Each released job's id and the time its update returned go to OUT,
one ``id time`` line each. SIGTERM stops it and removes the heartbeat.

``--resize``: each update also carries what the daemon's does (plugin/slurm/libslurm_backend.py
`_update`): the node count pinned (NumNodes=max-max), a time limit (`LIMIT_MIN`) and an admin
comment as long as a daemon's record (`COMMENT`): the least an *adaptive* releaser must do.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path

from plugin.daemon.state import atomic_write
from plugin.slurm.libslurm_backend import LibslurmSlurm, import_binding
from plugin.slurm.records import JobRecord
from plugin.slurm.writer import JobUpdate, Resize

#: Seconds between heartbeats (the hook accepts one up to 15 s old).
BEAT_S = 1.0
#: --resize: the time limit set (minutes) and the admin comment written, shaped like the
#: daemon's record for the benchmark's app (plugin/daemon/marks.py).
LIMIT_MIN = 5
COMMENT = "adaptalloc:v1 app=bench-lu; adaptalloc:v1:sized n=2 range=1-2 rule=floor_releaser"


def beat(heartbeat: Path, stop: threading.Event) -> None:
    """Write the heartbeat (whole Unix seconds, as the daemon does) until `stop`."""
    while not stop.is_set():
        atomic_write(heartbeat, f"{int(time.time())}\n")
        stop.wait(BEAT_S)


def update(job: JobRecord, resize: bool) -> JobUpdate:
    """The release of `job`, with the daemon's resize, limit and comment when `resize`."""
    if not resize:
        return JobUpdate(job.job_id)
    most = job.nodes_max or job.nodes_min or 1
    pinned = Resize(job.job_id, min_nodes=most, max_nodes=most, time_limit_min=LIMIT_MIN)
    return JobUpdate(job.job_id, resize=pinned, admin_comment=COMMENT)


def release_loop(
    slurm: LibslurmSlurm, name: str, out: Path, stop: threading.Event, resize: bool
) -> None:
    """Read, release every held job called `name`, again, until `stop`."""
    with out.open("a") as sink:
        while not stop.is_set():
            held = [j for j in slurm.pending_jobs() if j.priority == 0 and j.name == name]
            if not held:
                continue
            failed = slurm.update_jobs([update(job, resize) for job in held])
            done = time.time()
            sink.writelines(f"{j.job_id} {done:.3f}\n" for j in held if j.job_id not in failed)
            sink.flush()


def main(argv: list[str]) -> int:
    state_dir, name, out = Path(argv[0]), argv[1], Path(argv[2])
    binding = import_binding()
    if binding is None:
        print("floor_releaser: the libslurm binding is not built", file=sys.stderr)
        return 2
    slurm = LibslurmSlurm(binding)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    heartbeat = state_dir / "heartbeat"
    beater = threading.Thread(target=beat, args=(heartbeat, stop), daemon=True)
    beater.start()
    try:
        release_loop(slurm, name, out, stop, resize="--resize" in argv[3:])
    finally:
        stop.set()
        beater.join()
        heartbeat.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
