"""The daemon's event loop: held jobs in, sized (or failed-open) jobs out.

`Daemon.run` is short, the rq way; each step is a method::

    startup()                        lock, metrics, learner and guard threads, recovery
    while not stop requested:
        maintenance()                heartbeat (while healthy), reload on SIGHUP
        if wait_for_work():          a spool wake-up, or the periodic sweep is due
            cycle()                  read the queue -> decide -> apply (grouped) -> record
    drain()                          heartbeat off, then finish the jobs held meanwhile
    finally: teardown()              heartbeat off, learner stopped, lock released

Work comes from two places: job_submit.lua's spool line (a wake-up: inotify wakes the loop
the moment the file is written, plugin/daemon/spool_wake.py; where inotify cannot see the
write, shared storage, the daemon notices the file grow within ``spool_poll_s``) and, as the
safety net, a sweep every
``sweep_interval_s``. Either way the daemon reads the pending jobs once (with the libslurm
binding one ``slurm_load_jobs``, admin comments included, plugin/slurm/libslurm_backend.py;
else the cheap, nonce-separated ``squeue --Format`` read of plugin/slurm/pending.py, plus the
admin comment of held jobs it has not seen yet) and takes every held job it finds (at most
``max_batch``), so a burst of submissions becomes a few batches. job_submit.lua writes its
line before slurmctld creates the job, so a wake-up's sweep can come too early: while a
spool line's job has not been found held, follow-up sweeps run every 0.1 s, at most
``[daemon] follow_ups`` of them after the last wake-up (plugin/daemon/follow_up.py).

Health and the heartbeat: the heartbeat is written only while the daemon's account has the
Slurm privileges it needs (checked at start-up and on SIGHUP, ``[daemon] check_privileges``),
sweeps succeed (the last one less than ``unhealthy_after_s`` ago) *and* Slurm accepts the
daemon's writes, and removed at once otherwise, so that job_submit.lua stops holding jobs the
daemon cannot handle. Writes count as failing from the first release Slurm refused
(plugin/daemon/apply.py) until one goes through; the refused jobs are retried every sweep
meanwhile. When nothing is left to retry, the daemon beats again after ``unhealthy_after_s``
(one job held then shows whether writes work). A journaled job (decided, not yet released) held
longer than ``max_hold_s`` is released as submitted too (the watchdog), its range and limit put
back.

Latency: a job's "held since" is the later of Slurm's submit time (whole seconds) and the
moment the daemon saw the spool grow before the sweep that found it; "released at" is taken
after the release command returned. Each ``decision`` log event of a released job carries its
``timeline`` (Unix seconds): ``woke`` (the spool wake-up before the sweep that first found
it held, or the one a follow-up sweep follows; absent for a periodic sweep), ``read`` and
``seen`` (that sweep's queue read began and returned), ``decided`` (its batch decided) and
``applied`` (its batch's writes returned; for a job whose update the batch left in flight,
plugin/daemon/apply.py, when its update was sent and returned), so the parts of a job's
latency can be told apart (tests/benchmarks/test_release_floor.py).

The kill guard (plugin/daemon/guard.py) ticks in its own thread (`GuardThread`, started
when the daemon starts deciding), off the decision path: it watches the jobs released with
a shortened limit and raises a limit back to the user's before Slurm would kill the job at
it; it writes only while this daemon decides (with HA: holds the lease, checked by `fence`).

High availability (``[daemon] ha = true``, off by default): several daemons (one per host)
run on one state directory (shared storage in production, like slurmctld's
StateSaveLocation: the hook reads one heartbeat and appends to one spool) and one Redis.
Only the holder of the lease (plugin/daemon/lease.py) decides, writes to Slurm and Redis
(each write fenced), runs the learner and beats; the others are standbys: they neither
beat nor touch the heartbeat, and try to take the lease every second. The one that takes
it finishes the journal and sweeps the held jobs (`recover`, as after a restart). A holder
that loses the lease (not renewed in time, refused by Redis) stops at once: heartbeat
removed if it is still the one it wrote, batch abandoned at its next write (the journal
lets the new holder finish it), learner stopped; then it is a standby. A graceful stop
releases what it holds as without HA, then gives the lease up (DEL) so a standby takes
over at once. Without Redis nobody can hold the lease: a daemon that cannot reach it
decides as without HA (failing open) only while it holds the state directory's lock, so
on one host (or a shared directory whose locks work across hosts) a second daemon
refuses to decide; the first one with the lease when Redis is back decides from then on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import pwd
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import redis
import structlog

from plugin.config import Config, load_config
from plugin.daemon import reasons
from plugin.daemon.access import usable_partitions
from plugin.daemon.advise import (
    ADVISED,
    ADVISED_LATE,
    AdviceQueue,
    AdviseLine,
    arrival_demand,
    as_requested,
    pair,
)
from plugin.daemon.apply import (
    GONE,
    PENDING_RELEASE,
    RELEASED,
    Applied,
    Applier,
    outcome_from_journal,
)
from plugin.daemon.cluster import ClusterPrefetch, ClusterView
from plugin.daemon.decider import (
    RELEASE,
    RESIZE,
    Budget,
    CurveSource,
    Decider,
    Outcome,
    release_outcome,
)
from plugin.daemon.explain_files import Explanations
from plugin.daemon.follow_up import FOLLOW_UP_S, FollowUps
from plugin.daemon.guard import GuardThread, KillGuard
from plugin.daemon.journal import Journal, JournalEntry
from plugin.daemon.lease import Lease, LeaseKeeper, LeaseLost
from plugin.daemon.modes import MODES_FILE, modes_text, write_modes
from plugin.daemon.record import DecisionRecorder, decision_record
from plugin.daemon.signals import ForcedStop, Signals
from plugin.daemon.spool_wake import SpoolWake
from plugin.daemon.state import (
    STARTUP_LOCK_WAIT_S,
    DaemonLockedError,
    SpoolWatcher,
    StateDir,
    default_state_dir,
)
from plugin.daemon.sweep import Sweep, classify, held_by_us, on_hold
from plugin.daemon.watchdog import Watchdog
from plugin.errors import InputError, printable
from plugin.learning.worker import LearnerThread
from plugin.metrics import Metrics
from plugin.policy_file import load_policy_config
from plugin.slurm import (
    JobRecord,
    Resize,
    SlurmClient,
    SlurmError,
    SlurmReader,
    slurm_client,
)
from plugin.slurm.cli_backend import run_command
from plugin.slurm.enforcement import assess
from plugin.slurm.privileges import privilege_problem
from plugin.store.connection import connect
from plugin.store.curves import CurveStore
from plugin.store.decisions import DecisionRecord
from policies import ClusterState
from policies.decision import PARTITION_LIMIT, RULES
from policies.partition import Queue

__all__ = ["Daemon"]

log = structlog.get_logger("adaptalloc.daemon")
#: How soon to ask Slurm again whether the daemon may resize, while it may not (meanwhile
#: jobs are released as submitted).
ENFORCEMENT_RETRY_S = 30.0
#: How often (in decisions) a long batch writes the heartbeat in between.
BEAT_EVERY = 200
#: Pause after the heartbeat is removed, for submissions that read it just before.
DRAIN_PAUSE_S = 0.3
#: How often old explanation files are removed (plugin/daemon/explain_files.py).
PRUNE_EVERY_S = 3600.0
#: The cluster prefetch's shortest round (plugin/daemon/cluster.py); it looks every quarter
#: of cluster_cache_s.
PREFETCH_MIN_POLL_S = 0.1
#: The prefetch reads Slurm only while jobs come: within this long of the last batch (an idle
#: daemon asks nothing; the first batch after a lull reads what expired, as before).
PREFETCH_IDLE_S = 60.0


def _version() -> str:
    try:
        return metadata.version("adaptalloc")
    except metadata.PackageNotFoundError:
        return "unknown"


def watchdog_outcome(outcome: Outcome, max_hold_s: float) -> Outcome:
    """A journaled decision held too long, turned into a release as submitted: the job's
    submitted range and limit are put back (a resize to them) before the release."""
    job = outcome.job
    released = release_outcome(
        job,
        reasons.WATCHDOG,
        f"held longer than max_hold_s ({max_hold_s:g} s) with its decision unreleased",
        outcome.app,
        curve_version=outcome.curve_version,
        policy=outcome.policy,
    )
    low, high = job.nodes_min, job.nodes_max
    if outcome.resize is None or low is None or high is None or not 1 <= low <= high:
        return released
    undo = Resize(job.job_id, low, high, job.time_limit_min)
    return dataclasses.replace(released, resize=undo)


class Daemon:
    """``adaptalloc daemon`` (see the module docstring).

    Parameters
    ----------
    config : Config
        The adaptalloc configuration ([daemon], [redis], [appkey], [learner], [slurm]).
    state_dir : Path
        Heartbeat, spool, journal and lock (plugin/daemon/state.py).
    config_path, policy_path : str or None
        Re-read on SIGHUP (None: the defaults, [daemon] policy_file).
    redis_url : str or None
        Overrides [redis] url and $REDIS_URL.
    metrics_port : int or None
        Overrides [daemon] metrics_port (0: no metrics endpoint).
    learn : bool
        Run the learner thread (and [daemon] learn).
    slurm : SlurmClient or None
        The Slurm adapter (default: chosen by [slurm] backend).
    """

    #: The cluster prefetch thread (plugin/daemon/cluster.py), started when deciding starts.
    prefetch: ClusterPrefetch | None = None
    #: When the last batch ran (monotonic): the cluster prefetch reads only after one.
    last_batch: float = -1e18
    #: When to ask Slurm again whether the daemon may resize (enforcement.py): monotonic.
    enforcement_retry_at: float | None = None
    #: What the last such check logged (logged again only when it changes).
    enforcement_note = ""

    def __init__(
        self,
        config: Config,
        state_dir: Path,
        *,
        config_path: str | None = None,
        policy_path: str | None = None,
        redis_url: str | None = None,
        metrics_port: int | None = None,
        learn: bool = True,
        slurm: SlurmClient | None = None,
    ) -> None:
        self.config = config
        self.config_path = config_path
        self.policy_path = policy_path
        self.redis_url = redis_url
        self.state = StateDir(state_dir)
        self.metrics = Metrics(fail_open_reasons=reasons.REASONS, rules=(*RULES, PARTITION_LIMIT))
        self.metrics_port = config.daemon.metrics_port if metrics_port is None else metrics_port
        self.learn = learn and config.daemon.learn
        d = config.daemon
        self.slurm = slurm or slurm_client(
            config.slurm.backend, d.slurm_timeout_s, d.slurm_parallelism, d.sizing_user
        )
        self.wake = threading.Event()
        self.signals = Signals(self.wake)
        self.slurm_ms: defaultdict[str, float] = defaultdict(float)
        self.cluster = ClusterView(
            self.slurm,
            d.cluster_cache_s,
            d.partition_cache_s,
            timed=self.timed,
            metered=self.metrics.slurm_call,
        )
        self.curves = CurveSource(self._curve_store, d.redis_retry_s, on_failure=self._store_failed)
        policy = load_policy_config(self._policy_file())
        self.decider = Decider(
            config.appkey.rule(), policy, self.curves, Budget(), dict(config.node_types)
        )
        self._advise_state(d.mode, policy)
        self.recorder = DecisionRecorder(
            self._redis,
            config.learner.decisions_maxlen,
            d.decided_ttl_days * 86400.0,
            d.redis_retry_s,
            on_failure=self._store_failed,
        )
        self.journal = Journal(self.state.journal)
        #: HA: the lease (None without HA), whether this daemon decides, and whether it does
        #: so without Redis under the state directory's lock (module docstring).
        self.lease = Lease(self._redis, d.lease_ttl_s) if d.ha else None
        self.recorder.fence = self.lease
        self.keeper: LeaseKeeper | None = None
        self.active = self.lease is None
        self.fallback = False
        self.next_lease_try = 0.0
        self.lease_problem: str | None = None
        #: (inode, mtime) of the heartbeat this daemon wrote last (HA: never remove another's).
        self.beat_id: tuple[int, int] | None = None
        self.applier = Applier(
            self.slurm,
            self.journal,
            self.timed,
            fence=self.fence if self.lease else None,
            parallelism=d.slurm_parallelism,
            on_return=self.wake.set,  # a straggler's update returned: record it
            straggler_s=d.straggler_s,
        )
        self.spool_wake = SpoolWake(self.state.spool, self.wake)
        self.guard = KillGuard(self.slurm, self._curve_store, self.metrics)
        self.guard_thread: GuardThread | None = None
        self.watchdog = Watchdog()
        self.learner_stop = threading.Event()
        self.learner: LearnerThread | None = None
        self.held_since: dict[int, float] = {}
        #: Job id -> the first sweep that found it held: woke, read, seen (module docstring).
        self.first_seen: dict[int, dict[str, float]] = {}
        #: The current sweep's (woke, read, seen) times, and its batch's decided/applied.
        self.sweep_times: dict[str, float] = {}
        self.batch_times: dict[str, float] = {}
        self.last_sweep_ok = -1e18
        self.next_sweep = 0.0
        self.next_beat = 0.0
        self.beating = False
        #: The last heartbeat write's error while it fails; a heartbeat that cannot be removed.
        self.beat_error: str | None = None
        self.heartbeat_stuck = False
        #: Why the daemon's account lacks the Slurm privileges it needs (start-up, SIGHUP).
        self.privileges_missing: str | None = None
        self.wake_at: float | None = None
        self.follow_ups = FollowUps(d.follow_ups)
        self.port = 0
        #: (job id, submit time) -> admin comment, for held jobs (read once per job).
        self.comments: dict[tuple[int, int | None], str] = {}

    def _advise_state(self, mode: str, policy: Any) -> None:
        """The spool's watcher, advise mode's and `adaptalloc explain`'s state (``__init__``'s
        share)."""
        self.spool = SpoolWatcher(self.state.spool)
        #: The modes file's text (plugin/daemon/modes.py) and the text last written.
        self.modes = modes_text(mode, policy)
        self.modes_written: str | None = None
        #: Advise mode's spool lines waiting for their jobs (plugin/daemon/advise.py).
        self.advice = AdviceQueue()
        self.uids: dict[str, int | None] = {}
        #: What `adaptalloc explain` reads (plugin/daemon/explain_files.py), pruned hourly.
        self.explanations = Explanations(self.state.path, self._uid)
        self.next_prune = 0.0

    @contextlib.contextmanager
    def timed(self, call: str) -> Iterator[None]:
        """One Slurm adapter call: its metric, and its time added to the batch's log line.

        systemd's watchdog is pinged on either side of it (when due): a call that hangs to
        ``slurm_timeout_s`` then never makes a working daemon miss ``WatchdogSec``, which
        can stay short enough for a hung daemon's jobs to be released within the bound
        (deploy/systemd/adaptalloc.service).
        """
        started = time.perf_counter()
        self.watchdog.ping()
        try:
            with self.metrics.slurm_call(call):
                yield
        finally:
            self.slurm_ms[call] += (time.perf_counter() - started) * 1000.0
            self.watchdog.ping()

    # --- connections ---------------------------------------------------------------------

    def _policy_file(self) -> str | None:
        return self.policy_path or self.config.daemon.policy_file or None

    def _redis(self) -> redis.Redis:
        """A client for the decision path: short timeouts, no retries (fail open fast)."""
        d = self.config.daemon
        cfg = dataclasses.replace(
            self.config.redis,
            socket_timeout_s=d.redis_timeout_s,
            connect_timeout_s=d.redis_timeout_s,
            retries=0,
        )
        return connect(self.redis_url, cfg, check=False)

    def _curve_store(self) -> CurveStore:
        return CurveStore(self._redis())

    def _store_failed(self, op: str) -> None:
        self.metrics.store_failures.labels(op).inc()

    # --- the loop ------------------------------------------------------------------------

    def run(self) -> int:
        """Run until stopped (SIGTERM, SIGINT); returns the process exit code."""
        self.signals.install()
        forced = False
        try:
            self.startup()
            while not self.signals.stop_requested:
                self.maintenance()
                if not self.active:
                    self.wake.wait(self.lease.poll_s if self.lease else 1.0)
                    self.wake.clear()
                elif self.wait_for_work():
                    self.fenced(self.cycle)
            self.fenced(self.drain)
        except ForcedStop as stop:
            forced = True
            log.warning("forced_stop", signal=str(stop))
        finally:
            self.teardown()
        log.info("daemon_stopped", forced=forced)
        return 0

    def startup(self) -> None:
        """Lock the state dir, serve metrics, start the learner, recover held jobs."""
        self.state.prepare()
        self.spool_wake.start()
        if self.lease is None:
            self.state.lock(STARTUP_LOCK_WAIT_S)
        else:  # HA: the lease decides who works; the lock only without Redis
            self.state.try_lock()
        address = self.config.daemon.metrics_address
        try:
            self.port = self.metrics.serve(self.metrics_port, address)
        except OSError as exc:
            raise InputError(
                f"cannot serve metrics on {printable(address)}:{self.metrics_port}: "
                f"{exc.strerror or exc} (set [daemon] metrics_port, or --metrics-port 0)"
            ) from exc
        self.metrics.info.labels(_version(), self.slurm.backend).set(1)
        self.check_privileges()
        self.check_enforcement()
        if self.lease is not None:
            log.info(
                "daemon_started",
                pid=os.getpid(),
                version=_version(),
                state_dir=str(self.state.path),
                ha=True,
                holder=self.lease.holder,
                lease_ttl_s=self.lease.ttl_s,
                note="standby until it holds the lease",
            )
            self.keeper = LeaseKeeper(self.lease, self._lease_lapsed)
            self.keeper.start()
            self.ha_tick()
            return
        self.take_over(starting=True)

    def take_over(self, starting: bool = False) -> None:
        """Start deciding: the journal, the kill guard's watches, recovery of held jobs, the
        guard and cluster prefetch threads (once), the learner (at start-up; with HA, each
        time this daemon takes the lease)."""
        journaled = self.journal.load()
        watched = self.guard.load()
        log.info(
            "daemon_started",
            pid=os.getpid(),
            version=_version(),
            state_dir=str(self.state.path),
            backend=self.slurm.backend,
            policy=self.decider.policy.source,
            config=self.config.source,
            metrics_port=self.port,
            learner=self.learn,
            journaled=len(journaled),
            guard_watched=watched,
            **({} if starting else {"ha": True, "token": self.lease and self.lease.token}),
        )
        prefetching = self.cluster.cache_s > 0 and self.config.daemon.prefetch_cluster
        if prefetching:
            self.warm_cluster()
        self.recover(journaled)
        if self.guard_thread is None:
            self.guard_thread = GuardThread(self.guard, self._guard_may_write).start()
        if self.prefetch is None and prefetching:
            poll_s = max(self.cluster.cache_s / 4, PREFETCH_MIN_POLL_S)
            self.prefetch = ClusterPrefetch(self.cluster, self._prefetch_wanted, poll_s).start()
        if self.learn and self.learner is None:
            self.learner_stop = threading.Event()
            self.learner = LearnerThread(
                self.config,
                self.redis_url,
                self.config.daemon.learn_interval_s,
                self.config.daemon.age_out_interval_s,
                self.metrics,
                self.learner_stop,
            )
            self.learner.start()

    def warm_cluster(self) -> None:
        """Read the cluster (nodes, partitions, QOS table) before the first job, as the
        prefetch would: a daemon that starts deciding (start-up, a lease taken) has not beaten
        yet, so no job waits on these reads; the first batch found them all expired and read
        them with its jobs in hand (a QOS read took 270 ms of a one-job batch's 309 ms on the
        testbed, tests/benchmarks/test_release_floor.py). The start counts as a batch, so the
        prefetch keeps them fresh for ``PREFETCH_IDLE_S`` while the first jobs come. Never
        raises: a read that fails here is made by the first batch, as before."""
        try:
            self.cluster.prefetch()
        except Exception as exc:  # as in the prefetch thread: logged, the batch reads instead
            log.error("cluster_prefetch_failed", error=printable(str(exc))[:200])
        self.last_batch = time.monotonic()

    def recover(self, journaled: dict[int, JournalEntry | None]) -> None:
        """Finish the journal's decisions and decide every job held while the daemon was down."""
        jobs = self._read_queue(journaled)
        if jobs is None:
            return
        # A journaled job released before the crash may be running or finished by now: it is
        # not pending, so read it from every job slurmctld still knows, to record it.
        gone = [job_id for job_id in journaled if job_id not in jobs]
        known = (self.applier.read_jobs() or {}) if gone else {}
        done = []
        for job_id, entry in journaled.items():
            job = jobs.get(job_id) or known.get(job_id)
            outcome = outcome_from_journal(job, entry) if job is not None else None
            if outcome is None:
                continue
            if job is not None and job.state == "PENDING" and job.priority == 0:
                self.applier.unreleased[job_id] = outcome  # finish applying it
            else:
                done.append(Applied(outcome, RELEASED))  # applied; maybe not recorded yet
        held = sum(1 for j in jobs.values() if held_by_us(j))
        log.info("recovery", held=held, to_finish=len(self.applier.unreleased), to_record=len(done))
        self.record(done)
        self.applier.commit()
        self.cycle(jobs)
        while self.signals.stop_requested is False and self.cycle() > 0:
            pass

    # --- high availability (module docstring) -----------------------------------------------

    def fence(self) -> None:
        """Before every write with HA: LeaseLost unless this daemon may write now."""
        if self.lease is None or self.fallback:
            return
        if not self.active:
            raise LeaseLost("this daemon is a standby")
        self.lease.check()

    def fenced(self, step: Callable[[], object]) -> None:
        """Run a step of the loop; a lost lease ends it and makes this daemon a standby."""
        try:
            step()
        except LeaseLost as exc:
            self.step_down(str(exc))

    def ha_tick(self) -> None:
        """Keep or lose the lease; a standby tries to take it every `Lease.poll_s`."""
        lease = self.lease
        if lease is None:
            return
        if self.active and not self.fallback:
            if lease.valid():
                return
            self.step_down("the lease was not renewed in time")
        now = time.monotonic()
        if now < self.next_lease_try:
            return
        self.next_lease_try = now + lease.poll_s
        try:
            got = lease.acquire()
        except (redis.RedisError, OSError) as exc:
            self._lease_unreachable(printable(str(exc))[:200])
            return
        if self.lease_problem is not None and not self.fallback:
            log.info("lease_reachable", note="Redis answers again")
        self.lease_problem = None
        if got:
            was_fallback, self.fallback = self.fallback, False
            self.active = True
            self.recorder.fence = lease
            log.info(
                "lease_acquired",
                token=lease.token,
                holder=lease.holder,
                note="deciding from now on" + (" (Redis is back)" if was_fallback else ""),
            )
            self.fenced(self.take_over)
        elif self.fallback:
            self.step_down(f"Redis is back and {lease.current_holder()} holds the lease")

    def _lease_unreachable(self, error: str) -> None:
        """Redis cannot be reached, so the lease cannot be held: decide as without HA under
        the state directory's lock, or (another process holds the lock) not at all."""
        if self.fallback:
            return
        if self.state.try_lock():
            self.fallback = True
            self.active = True
            self.recorder.fence = None  # no lease to fence with; the once-guard still holds
            log.warning(
                "lease_unavailable",
                error=error,
                note="no Redis, no lease: deciding under the state directory's lock",
            )
            self.take_over()
        elif self.lease_problem is None:
            log.warning(
                "lease_unavailable",
                error=error,
                note="no Redis, no lease, another daemon holds the state directory: standby",
            )
        self.lease_problem = error

    def step_down(self, why: str) -> None:
        """The lease is lost: stop deciding at once and become a standby."""
        lease = self.lease
        if lease is None or not self.active:
            return
        token = None if lease.last_grant is None else lease.last_grant.token
        self.active = False
        self.fallback = False
        self.recorder.fence = lease
        self._stop_beating()
        lease.drop()
        log.error(
            "lease_lost",
            token=token,
            reason=printable(why)[:300],
            holder_now=lease.current_holder(),
            abandoned=len(self.applier.unreleased),
            note="standby from now on; the holder finishes the journal",
        )
        self.applier.unreleased.clear()
        self.applier.inflight.clear()
        self.comments.clear()
        self.held_since.clear()
        self.first_seen.clear()
        self._stop_learner()
        self.next_lease_try = time.monotonic() + lease.poll_s

    def _lease_lapsed(self) -> None:
        """From the keeper thread: the lease lapsed; the heartbeat goes now, the loop
        steps down at its next look."""
        if self.fallback:  # deciding without the lease (no Redis): its heartbeat stays
            return
        self._unlink_own_heartbeat()
        self.wake.set()

    def _stop_learner(self) -> None:
        self.learner_stop.set()
        if self.learner is not None:
            self.learner.join(timeout=5.0)
            self.learner = None

    def maintenance(self) -> None:
        """Heartbeat on time while healthy (removed when not); reload when asked."""
        self.watchdog.ping()
        self.ha_tick()
        if self.signals.reload_requested:
            self.signals.reload_requested = False
            self.reload()
        now = time.monotonic()
        d = self.config.daemon
        if self.enforcement_retry_at is not None and now >= self.enforcement_retry_at:
            self.check_enforcement()
        if now >= self.next_prune and self.active:
            self.next_prune = now + PRUNE_EVERY_S
            self.explanations.prune(d.decided_ttl_days * 86400.0)
        problem = self.health_problem(now)
        if problem is None and now >= self.next_beat:
            self._beat()
            self.next_beat = now + d.heartbeat_interval_s
        elif problem is not None and self.beating:
            log.warning("unhealthy", note=f"{problem}; job_submit stops holding")
            self._stop_beating()

    def check_privileges(self) -> None:
        """Ask Slurm whether this account may annotate, resize and release other users' jobs
        (plugin/slurm/privileges.py); until it may, the daemon is unhealthy and holds nothing."""
        if not self.config.daemon.check_privileges:
            self.privileges_missing = None
            return
        timeout = self.config.daemon.slurm_timeout_s
        self.privileges_missing = privilege_problem(
            lambda *args: run_command(args, timeout, os.environ)
        )
        if self.privileges_missing is not None:
            log.error("privileges_missing", error=self.privileges_missing)

    def check_enforcement(self) -> None:
        """Whether the daemon may resize where Slurm enforces limits (plugin/slurm/
        enforcement.py): if not, every job is released as submitted, and Slurm is asked
        again every ENFORCEMENT_RETRY_S (a fixed sizing user or configuration is picked up)."""
        timeout = self.config.daemon.slurm_timeout_s

        def run(*args: str) -> str:
            return run_command(args, timeout, os.environ)

        sizer = getattr(self.slurm, "sizing_user", None)
        verdict = assess(run, sizer, self.config.daemon.resize_with_enforced_limits)
        self.decider.resize_refused = not verdict.resize
        self.decider.limits_enforced = verdict.enforced is not False
        self.guard.may_raise = verdict.enforced is False
        self.enforcement_retry_at = (
            time.monotonic() + ENFORCEMENT_RETRY_S if verdict.retry else None
        )
        if verdict.note and verdict.note != self.enforcement_note:
            log.warning("limits_enforced", note=verdict.note)
        self.enforcement_note = verdict.note

    def health_problem(self, now: float) -> str | None:
        """Why the daemon is unhealthy (module docstring), or None when it is healthy."""
        d = self.config.daemon
        if not self.active:
            return "standby: another daemon holds the lease"
        if self.privileges_missing is not None:
            return self.privileges_missing
        if now - self.last_sweep_ok >= d.unhealthy_after_s:
            return "no successful sweep lately"
        failed_at = self.applier.writes_failed_at
        if failed_at is not None and (
            self.applier.unreleased or now - failed_at < d.unhealthy_after_s
        ):
            return "Slurm refuses the daemon's releases"
        return None

    def _beat(self) -> None:
        """Write the heartbeat; when it cannot be written (a full disk, a read-only state
        directory) remove the old one at once, so that the hook does not go on holding jobs
        for ``heartbeat_max_age`` on a heartbeat the daemon can no longer renew."""
        try:
            self._publish_modes()
            stamp = self.state.beat()
        except OSError as exc:
            if self.beat_error is None:
                log.error(
                    "heartbeat_failed",
                    error=printable(str(exc))[:200],
                    note="job_submit stops holding until the heartbeat can be written",
                )
            self.beat_error = printable(str(exc))[:200]
            self._stop_beating()
            return
        self.beat_id = self.state.heartbeat_id()
        self.metrics.heartbeat.set(stamp)
        if not self.beating:
            log.info("heartbeat_on", path=str(self.state.heartbeat))
        self.beating = True
        self.beat_error = None

    def _publish_modes(self) -> None:
        """Write the modes file when its text changed or it went missing, before the
        heartbeat: a fresh heartbeat means the hook reads the current modes (OSError when
        it cannot be written: then no heartbeat either)."""
        path = self.state.path / MODES_FILE
        if self.modes_written == self.modes and path.exists():
            return
        write_modes(self.state.path, self.modes)
        if self.modes_written != self.modes:
            log.info("modes_published", path=str(path), modes=self.modes.splitlines()[1:])
        self.modes_written = self.modes

    def _unlink_own_heartbeat(self) -> OSError | None:
        """Remove the heartbeat; with HA only if it is still the one this daemon wrote
        (the new lease holder's is left alone)."""
        if self.lease is not None and (
            self.beat_id is None or self.state.heartbeat_id() != self.beat_id
        ):
            return None
        return self.state.stop_beating()

    def _stop_beating(self) -> None:
        """Remove the heartbeat (never raises: every way out of the daemon comes here)."""
        error = self._unlink_own_heartbeat()
        if error is not None and not self.heartbeat_stuck:
            log.error(
                "heartbeat_stuck",
                error=printable(str(error))[:200],
                note="cannot remove the heartbeat; job_submit stops holding once it is stale",
            )
        self.heartbeat_stuck = error is not None
        self.beating = False

    def wait_for_work(self) -> bool:
        """Wait for a spool wake-up or the next sweep; False when a stop was requested."""
        d = self.config.daemon
        while not self.signals.stop_requested:
            if not self.active:
                return False
            if any(e.future.done() for e in self.applier.inflight.values()):
                self.fenced(self.finish_inflight)
                continue
            now = time.monotonic()
            if self.spool.woken():
                if self.wake_at is None:
                    self.wake_at = time.time()
                self.follow_ups.wake(self.wake_at)
                if d.batch_window_s:
                    time.sleep(d.batch_window_s)
                return True
            if now >= self.next_sweep:
                return True
            if (
                self.signals.reload_requested
                or now >= self.next_beat
                or now >= self.watchdog.next_ping
            ):
                self.maintenance()
            self.wake.wait(min(d.spool_poll_s, max(self.next_sweep - now, 0.0)))
            self.wake.clear()
        return False

    def _read_queue(self, journaled: Collection[int] = ()) -> dict[int, Any] | None:
        """The pending jobs, with the admin comment of every held one (cached per job).

        `journaled` (with the applier's unreleased jobs): ids whose record may already have
        replaced the held marker, so their comment is read in full.
        """
        exact = set(journaled) | set(self.applier.unreleased)
        try:
            with self.timed("squeue"):
                pending = self.slurm.pending_jobs()
            held = {(j.job_id, j.submit_time): j for j in pending if j.priority == 0}
            new = [key[0] for key in held if key not in self.comments]
            if new:
                with self.timed("admin_comment"):
                    found = self.slurm.held_admin_comments(new)
                # Text after the marker, or a journaled job whose record replaced the marker
                # (the fast read sees no marker and says ""): the exact, slow way, unless the
                # backend read the field itself (libslurm), where "" means none.
                exact_read = getattr(self.slurm, "exact_admin_comments", False)
                unknown = [
                    job_id
                    for job_id, text in found.items()
                    if text is None or (text == "" and job_id in exact and not exact_read)
                ]
                if unknown:
                    with self.timed("squeue_json"):
                        found.update(SlurmReader.held_admin_comments(self.slurm, unknown))
                for key in held:
                    if key[0] in found:
                        self.comments[key] = found[key[0]] or ""
        except SlurmError as exc:
            log.warning("sweep_failed", error=printable(str(exc))[:300])
            return None
        self.comments = {key: text for key, text in self.comments.items() if key in held}
        # A held job whose admin comment could not be read (scontrol timing out) is invisible
        # to this sweep: it does not count as a successful one, or the heartbeat would stay
        # fresh while job_submit.lua holds jobs the daemon cannot see.
        unread = [key[0] for key, job in held.items() if key not in self.comments and on_hold(job)]
        if unread:
            log.warning("sweep_incomplete", unread_admin_comments=len(unread), job_id=unread[0])
        else:
            self.last_sweep_ok = time.monotonic()
        out: dict[int, Any] = {}
        for job in pending:
            key = (job.job_id, job.submit_time)
            text = self.comments.get(key)
            if text is not None and text != job.admin_comment:  # no copy when it has it
                job = dataclasses.replace(job, admin_comment=text)  # noqa: PLW2901
            out[job.job_id] = job
        return out

    def forget_comments(self, job_ids: Sequence[int]) -> None:
        """The daemon changed these jobs' admin comments: read them again next time."""
        ids = set(job_ids)
        self.comments = {k: v for k, v in self.comments.items() if k[0] not in ids}

    def cycle(self, jobs: dict[int, Any] | None = None) -> int:
        """One sweep and its batch; returns how many held jobs were left for the next one."""
        d = self.config.daemon
        self.finish_inflight()
        woke = self.wake_at
        self.wake_at = None
        if woke is None:
            woke = self.follow_ups.follow_up()
        self.slurm_ms.clear()
        self.next_sweep = time.monotonic() + d.sweep_interval_s
        # The lines written so far, just before the read (their jobs may be in it).
        self.spool.woken()
        lines = self.spool.take_lines()
        read = time.time()
        if jobs is None:
            jobs = self._read_queue()
        if jobs is None:
            return 0
        self.sweep_times = {"read": read, "seen": time.time()}
        if woke is not None:
            self.sweep_times["woke"] = woke
        # A job in flight may have left the queue (released, started) before its update's
        # return is recorded: its first sweep stays for its timeline.
        inflight = self.applier.inflight
        self.first_seen = {k: v for k, v in self.first_seen.items() if k in jobs or k in inflight}
        sweep = classify(
            jobs.values(),
            time.time(),
            d.max_hold_s,
            self.applier.unreleased,
            d.max_batch,
            in_flight=self.applier.inflight,
        )
        self.metrics.held.set(sweep.held)
        self._note_held(sweep, woke)
        self.follow_ups.read(lines, (i for i, job in jobs.items() if held_by_us(job)))
        if sweep.work:
            self.handle(sweep)
        self.advice.add(self.spool.take_advice())
        if self.advice and self.advise(sweep):
            sweep.deferred += 1  # more advise jobs than one batch: go again at once
        if sweep.deferred:
            self.next_sweep = 0.0  # more held jobs than one batch takes: go again at once
        elif self.follow_ups.wanted():  # a spool line's job not created yet (follow_up.py)
            self.next_sweep = min(self.next_sweep, time.monotonic() + FOLLOW_UP_S)
        self.fence()
        return sweep.deferred

    def _prefetch_wanted(self) -> bool:
        """The cluster prefetch's check: this daemon decides and jobs came lately."""
        return self.active and time.monotonic() - self.last_batch < PREFETCH_IDLE_S

    def _guard_may_write(self) -> bool:
        """The guard thread's check before a tick: this daemon decides (`fence`)."""
        if not self.active:
            return False
        try:
            self.fence()
        except LeaseLost:
            return False
        return True

    def _note_held(self, sweep: Sweep, woke: float | None) -> None:
        seen = time.time()
        for job in sweep.to_decide:
            if job.job_id not in self.held_since:
                submitted = float(job.submit_time or seen)
                self.held_since[job.job_id] = max(submitted, woke) if woke else submitted
            self.first_seen.setdefault(job.job_id, self.sweep_times)

    def handle(self, sweep: Sweep) -> None:
        """Decide the sweep's jobs, apply the outcomes, record them."""
        started = time.perf_counter()
        self.last_batch = time.monotonic()
        outcomes = []
        now = time.time()
        max_hold = self.config.daemon.max_hold_s
        for job in sweep.to_finish:
            outcome = self.applier.unreleased.get(job.job_id)
            if outcome is None:
                continue
            if job.submit_time and now - job.submit_time > max_hold and outcome.action != RELEASE:
                outcome = watchdog_outcome(outcome, max_hold)
            outcomes.append(outcome)
        for job in sweep.stale:
            outcomes.append(
                release_outcome(
                    job,
                    reasons.WATCHDOG,
                    f"held longer than max_hold_s ({self.config.daemon.max_hold_s:g} s)",
                )
            )
        self.curves.begin_batch()
        for count, job in enumerate(sweep.to_decide, start=1):
            outcomes.append(
                self.decider.decide(
                    job,
                    lambda j: self.cluster.state(j, sweep.demand),
                    queue=functools.partial(self._queue, sweep=sweep, job=job, now=now),
                    cpus=self.cluster.cpus_per_node,
                    known_partitions=functools.partial(self._usable_partitions, job),
                    core_counts=self.cluster.core_counts,
                )
            )
            if count % BEAT_EVERY == 0:
                self.maintenance()
        decided_ms = (time.perf_counter() - started) * 1000.0
        self.batch_times = {"decided": time.time()}
        applied = self.applier.apply(outcomes, leave_stragglers=True)
        self.batch_times["applied"] = time.time()
        self.forget_comments([o.job_id for o in outcomes])
        self.metrics.batch.observe(len(outcomes))
        self.record(applied)
        self.batch_times = {}
        self.applier.commit()
        log.info(
            "batch",
            jobs=len(outcomes),
            decided=len(sweep.to_decide),
            finished=len(sweep.to_finish),
            watchdog=len(sweep.stale),
            deferred=sweep.deferred,
            decide_ms=round(decided_ms, 1),
            total_ms=round((time.perf_counter() - started) * 1000.0, 1),
            slurm_ms={k: round(v, 1) for k, v in self.slurm_ms.items()},
        )

    def _uid(self, user: str) -> int | None:
        """A user name's uid (cached: NSS may be slow), None when unknown."""
        if user not in self.uids:
            try:
                self.uids[user] = pwd.getpwnam(user).pw_uid if user else None
            except KeyError:
                self.uids[user] = None
        return self.uids[user]

    def advise(self, sweep: Sweep) -> bool:
        """Advise mode (plugin/daemon/advise.py): pair the spool's advise lines with their
        jobs, decide at most ``max_batch`` of them, record them with mode "advise". Nothing
        in Slurm changes. True when paired jobs were left for the next sweep."""
        try:
            with self.timed("squeue_all"):
                known = self.slurm.known_jobs()
        except SlurmError as exc:
            log.warning("advise_read_failed", error=printable(str(exc))[:300])
            return False
        paired = pair(
            self.advice.lines(),
            known,
            self._uid,
            lambda job: self.advice.taken(job) or on_hold(job),
        )
        batch = paired[: self.config.daemon.max_batch]
        self.advice.done(batch)
        lost = self.advice.expire()
        if lost:
            log.warning("advise_unpaired", lines=lost, note="no job found for these lines")
        if batch:
            self.record_advice(batch, sweep, arrival_demand(known, batch))
        return len(paired) > len(batch)

    def record_advice(
        self,
        batch: Sequence[tuple[AdviseLine, JobRecord]],
        sweep: Sweep,
        demand: dict[int, Counter[str]],
    ) -> None:
        """Decide advise jobs as held ones would be (each on the pending `demand` it met on
        arrival), and record the decisions."""
        started = time.perf_counter()
        now = time.time()
        records: list[DecisionRecord] = []
        rendered: list[dict[str, Any]] = []
        self.curves.begin_batch()
        for line, found in batch:
            job = as_requested(line, found)
            # A started job's own nodes were idle when Slurm gave them to it.
            freed = 0 if found.state == "PENDING" else found.nodes_alloc or found.nodes_min or 0
            outcome = self.decider.decide(
                job,
                functools.partial(
                    self._advised_cluster, met=demand.get(job.job_id, sweep.demand), freed=freed
                ),
                queue=functools.partial(self._queue, sweep=sweep, job=job, now=now),
                cpus=self.cluster.cpus_per_node,
                known_partitions=functools.partial(self._usable_partitions, job),
                core_counts=self.cluster.core_counts,
            )
            status = ADVISED if found.state == "PENDING" else ADVISED_LATE
            record = decision_record(outcome, status, None, mode="advise")
            doc = record.to_dict()
            log.info("decision", **doc)
            self.metrics.advised.labels(status).inc()
            records.append(record)
            rendered.append(doc)
        self.recorder.record(records, rendered)
        self.explanations.write_later(records)
        log.info(
            "advise_batch",
            jobs=len(batch),
            waiting=len(self.advice.waiting),
            total_ms=round((time.perf_counter() - started) * 1000.0, 1),
        )

    def _advised_cluster(self, job: JobRecord, met: Counter[str], freed: int) -> ClusterState:
        """An advise job's cluster state: the pending demand `met` on arrival, and the idle
        nodes now plus the `freed` nodes it holds itself (plugin/daemon/advise.py)."""
        state = self.cluster.state(job, met)
        if not freed or state.idle_nodes is None:
            return state
        idle = state.idle_nodes + freed
        if state.total_nodes is not None:
            idle = min(idle, state.total_nodes)
        return dataclasses.replace(state, idle_nodes=idle)

    def _usable_partitions(self, job: JobRecord) -> list[str]:
        """The partitions Slurm knows that admit `job` (plugin/daemon/access.py): read only
        for a job listing several, the candidates of the partition choice."""
        return usable_partitions(self.cluster.partitions(), job)

    def _queue(self, name: str, sweep: Sweep, job: Any, now: float) -> Queue | None:
        """Partition `name`'s queue for deciding `job` (policies/partition.py)."""
        return self.cluster.queue(name, sweep.jobs.values(), job, now)

    def finish_inflight(self) -> None:
        """Record the jobs whose update was left in flight and has returned since (plugin/
        daemon/apply.py, stragglers); their timeline's ``decided`` and ``applied`` are when
        their update was sent and returned."""
        applied, times = self.applier.harvest()
        if not applied:
            return
        self.forget_comments([a.outcome.job_id for a in applied])
        lines = {j: {"decided": sent, "applied": back} for j, (sent, back) in times.items()}
        self.record(applied, lines)
        self.applier.commit()

    def record(
        self, applied: Sequence[Applied], times: dict[int, dict[str, float]] | None = None
    ) -> None:
        """Metrics, one ``decision`` log event per job, the stream entries; `times`: a job's
        decided and applied times when not its batch's (`batch_times`)."""
        now = time.time()
        records: list[DecisionRecord] = []
        rendered: list[dict[str, Any]] = []
        self.advice.enforced(item.outcome.job for item in applied)
        for item in applied:
            outcome = item.outcome
            since = self.held_since.pop(outcome.job_id, None)
            if item.status == PENDING_RELEASE:
                self.held_since[outcome.job_id] = since or now
                log.warning("release_pending", job_id=outcome.job_id)
                continue
            seen = self.first_seen.pop(outcome.job_id, {})
            latency = None if since is None or item.status != RELEASED else max(now - since, 0.0)
            if item.status == GONE:
                self.metrics.jobs.labels("gone").inc()
            elif outcome.action == RELEASE:
                self.metrics.jobs.labels("released").inc()
                self.metrics.fail_open.labels(outcome.fail_open or "unknown").inc()
            else:
                self.metrics.jobs.labels("resized" if outcome.action == RESIZE else "kept").inc()
                self.metrics.decisions.labels(outcome.rule or "unknown").inc()
                if outcome.resize is not None:
                    job, change = outcome.job, outcome.resize
                    self.metrics.record_limits(
                        job.nodes_max, job.time_limit_min, change.min_nodes, change.time_limit_min
                    )
            if latency is not None:
                self.metrics.latency.observe(latency)
            released = item.status == RELEASED
            record = decision_record(outcome, item.status, latency, now if released else None)
            doc = record.to_dict()
            # The deciding curve's document (a kilobyte) stays in the stream, for scoring;
            # the log line names it by curve_app and curve_version.
            logged = {k: v for k, v in doc.items() if k != "curve_doc"}
            batch = (times or {}).get(outcome.job_id) or self.batch_times
            if released and seen and batch:
                timeline = {k: round(v, 3) for k, v in {**seen, **batch}.items()}
                log.info("decision", **logged, timeline=timeline)
            else:
                log.info("decision", **logged)
            if released:
                records.append(record)
                rendered.append(doc)
        self.recorder.record(records, rendered)
        self.explanations.write_later(records)
        self.guard.watch(a.outcome for a in applied if a.status == RELEASED)

    def drain(self) -> None:
        """Graceful stop: no new holds, then decide (or release) what was held meanwhile."""
        self._stop_beating()
        if not self.active:
            return
        time.sleep(DRAIN_PAUSE_S)
        deadline = time.monotonic() + self.config.daemon.shutdown_grace_s
        while time.monotonic() < deadline:
            if self.cycle() == 0:
                break
        self.applier.wait_inflight()
        self.finish_inflight()
        jobs = self._read_queue()
        if jobs is None:
            return
        left = [j for j in jobs.values() if held_by_us(j)]
        left += self.applier.finish(jobs)
        if left:
            self.release_all(left, reasons.SHUTDOWN, "the daemon stopped before deciding it")

    def release_all(self, jobs: Sequence[Any], reason: str, detail: str) -> int:
        """Release jobs as submitted (outcomes already decided are applied as they are)."""
        outcomes = []
        for job in jobs:
            if hasattr(job, "action"):
                outcomes.append(job)
            else:
                outcomes.append(release_outcome(job, reason, detail))
        applied = self.applier.apply(outcomes)
        self.forget_comments([o.job_id for o in outcomes])
        self.record(applied)
        self.applier.commit()
        return sum(1 for a in applied if a.status == RELEASED)

    def teardown(self) -> None:
        """Always: heartbeat off first, then the rest; ignores further signals."""
        self.signals.quiet = True
        self._stop_beating()
        if self.keeper is not None:
            self.keeper.close()
        if self.lease is not None and self.active and not self.fallback:
            self.lease.release()
        self._stop_learner()
        if self.guard_thread is not None:
            self.guard_thread.stop()
        if self.prefetch is not None:
            self.prefetch.stop()
        self.spool_wake.close()
        self.explanations.close()
        self.metrics.close()
        self.state.unlock()
        self.signals.restore()

    # --- reload ----------------------------------------------------------------------------

    def reload(self) -> None:
        """SIGHUP: re-read the adaptalloc TOML and the policy file; keep the old on error."""
        try:
            config = load_config(self.config_path)
            policy = load_policy_config(self.policy_path or config.daemon.policy_file or None)
            rule = config.appkey.rule()
        except Exception as exc:  # a bad file must not stop the daemon
            log.error("reload_failed", error=printable(str(exc))[:300], kept=self.config.source)
            return
        old = self.config
        self.config = config
        self.decider.rule = rule
        self.decider.policy = policy
        self.decider.node_types = dict(config.node_types)
        self.modes = modes_text(config.daemon.mode, policy)
        if self.modes != self.modes_written:
            self.next_beat = 0.0  # publish the new modes now, with the next heartbeat
        if config.redis != old.redis or config.daemon.redis_timeout_s != old.daemon.redis_timeout_s:
            self.curves.reset(self._curve_store)
            self.recorder.reset(self._redis)
            if self.lease is not None:
                self.lease.reset(self._redis)
        if (config.daemon.ha, config.daemon.lease_ttl_s) != (old.daemon.ha, old.daemon.lease_ttl_s):
            log.warning("reload_partial", note="ha and lease_ttl_s changes need a restart")
        self.curves.retry_s = config.daemon.redis_retry_s
        self.follow_ups.limit = config.daemon.follow_ups
        self.applier.straggler_s = config.daemon.straggler_s
        self.cluster.cache_s = config.daemon.cluster_cache_s
        self.cluster.partition_cache_s = config.daemon.partition_cache_s
        self.check_privileges()
        self.check_enforcement()
        if config.daemon.metrics_port != old.daemon.metrics_port:
            log.warning("reload_partial", note="metrics_port changes need a restart")
        log.info("config_reloaded", config=config.source, policy=policy.source)

    # --- one-shot modes ----------------------------------------------------------------------

    @classmethod
    def for_release(
        cls, config_path: str | None, state_dir: str | None, redis_url: str | None
    ) -> Daemon:
        """A daemon for `release_held` that a broken configuration cannot stop: it runs as
        ExecStopPost after the daemon failed, maybe because of that file. An unreadable or
        invalid configuration is logged and replaced by the defaults (so ``--state-dir``
        should be given, as the unit does); the policy file is not read (releasing decides
        nothing)."""
        try:
            config = load_config(config_path)
        except InputError as exc:
            log.error("release_held_config", error=printable(str(exc))[:300], note="defaults used")
            config = Config()
        config = dataclasses.replace(
            config, daemon=dataclasses.replace(config.daemon, policy_file="")
        )
        where = Path(state_dir) if state_dir else default_state_dir(config.daemon.state_dir)
        return cls(config, where, redis_url=redis_url, metrics_port=0, learn=False)

    def run_once(self) -> int:
        """Decide every held job now (journal first), without heartbeat or metrics; the
        number of jobs handled."""
        self.state.prepare()
        self.state.lock()
        try:
            self.check_enforcement()
            journaled = self.journal.load()
            before = self.metrics_total()
            self.recover(journaled)
            return self.metrics_total() - before
        finally:
            self.state.unlock()

    def metrics_total(self) -> int:
        return int(
            sum(
                sample.value
                for metric in self.metrics.jobs.collect()
                for sample in metric.samples
                if sample.name.endswith("_total")
            )
        )

    def release_held(self, only_if_orphaned: bool = False) -> int | None:
        """Release every job still on job_submit.lua's hold; how many were released (None:
        `only_if_orphaned` and a daemon runs, so nothing was touched).

        For admins (``adaptalloc daemon --release-held``), for systemd's ExecStopPost after a
        crash and for the orphan timer (``--if-orphaned``, deploy/systemd/). It takes the
        state directory's lock, so it never races a live daemon over the same jobs: with a
        daemon running it refuses (DaemonLockedError), or with `only_if_orphaned` does nothing.
        Jobs held with the marker are released as submitted; jobs in the dead daemon's
        journal (decided, their record maybe written, not yet released: the marker is gone)
        are released with their journaled decision, which lies within the user's range.

        With HA it takes the lease first (waiting up to the TTL, for a dead holder's to
        expire) and writes under it, so it never races the daemons; when a daemon holds the
        lease all along it refuses, or with `only_if_orphaned` does nothing. Without Redis it
        takes the state directory's lock, as without HA.
        """
        self.state.prepare()
        if self.lease is not None:
            leased = self._lease_for_release(self.lease)
            if leased is not None and not leased:
                holder = self.lease.current_holder() or "another daemon"
                if only_if_orphaned:
                    log.info("release_held_skipped", note=f"{holder} holds the lease")
                    return None
                raise DaemonLockedError(
                    f"the HA daemon {holder} holds the lease: it decides the held jobs; "
                    "stop every adaptalloc daemon first, then run --release-held"
                )
            if leased:
                keeper = LeaseKeeper(self.lease, lambda: None)
                keeper.start()
                try:
                    return self._release_held_now()
                finally:
                    keeper.close()
                    self.lease.release()
        try:
            self.state.lock()
        except DaemonLockedError as exc:
            if only_if_orphaned:
                log.info("release_held_skipped", note=f"{exc}; nothing released")
                return None
            raise DaemonLockedError(
                f"{exc}: it releases what it holds when it stops (systemctl stop adaptalloc); "
                "stop it first (SIGKILL a hung one), then run --release-held"
            ) from exc
        try:
            return self._release_held_now()
        finally:
            self.state.unlock()

    def _lease_for_release(self, lease: Lease) -> bool | None:
        """HA: take the lease for `release_held`, waiting up to the TTL and a poll for a dead
        holder's to expire; None when Redis cannot be reached."""
        deadline = time.monotonic() + lease.ttl_s + lease.poll_s
        while True:
            try:
                if lease.acquire():
                    self.active = True
                    log.info("lease_acquired", token=lease.token, note="to release held jobs")
                    return True
            except (redis.RedisError, OSError) as exc:
                log.warning("lease_unavailable", error=printable(str(exc))[:200])
                return None
            if time.monotonic() >= deadline:
                return False
            time.sleep(lease.poll_s)

    def _release_held_now(self) -> int:
        """`release_held`'s work, under the lock or the lease."""
        journaled = self.journal.load()
        jobs = self._read_queue(journaled)
        if jobs is None:
            raise SlurmError("cannot read the queue (squeue failed); nothing was released")
        finish: list[Outcome] = []
        done: list[Applied] = []
        for job_id, entry in journaled.items():
            job = jobs.get(job_id)
            outcome = outcome_from_journal(job, entry) if job is not None else None
            if outcome is None:
                continue
            if job is not None and on_hold(job):
                finish.append(outcome)
            else:
                done.append(Applied(outcome, RELEASED))  # released; maybe not recorded
        self.record(done)
        ids = {o.job_id for o in finish}
        held = [j for j in jobs.values() if held_by_us(j) and j.job_id not in ids]
        return self.release_all([*finish, *held], reasons.BY_ADMIN, "released by an administrator")
