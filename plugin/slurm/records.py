"""What the Slurm adapter returns: frozen values, the same whichever backend read them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FINAL_STATES", "AssocRecord", "JobRecord", "NodeRecord", "PartitionRecord", "QosRecord"]

#: Base job states after which a job never runs again.
FINAL_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "TIMEOUT",
    }
)


@dataclass(frozen=True)
class JobRecord:
    """One job as Slurm reports it. Times are Unix seconds; None means "not reported".

    Attributes
    ----------
    job_id : the job id (array tasks and het components have their own).
    name, user, account, partition, wckey : as submitted ("" when Slurm has none).
    state : the base state, upper case ("COMPLETED", "CANCELLED", "PENDING", ...).
    source : which command or library produced the record ("sacct", "squeue", "pyslurm").
    comment, admin_comment : None when the source does not report them (sacct without
        ``AccountingStoreFlags=job_comment`` has no job comment), "" when empty.
    exit_code, exit_signal : the batch script's exit status and killing signal; None when
        unknown or, as with ``sacct --json`` of Slurm 22.05, not trustworthy.
    nodes_min, nodes_max : the requested node range, when the source knows it.
    nodes_alloc : nodes the job was allocated (0 before it started, or while slurmdbd's
        record of a just-finished job is still incomplete).
    time_limit_min : the time limit in minutes (None: partition limit or unlimited).
    elapsed_s : wall-clock run time in seconds.
    workdir, script : working directory and batch script path, when reported.
    priority : scheduling priority (0 while held); None when not reported.
    state_reason : why a pending job waits ("JobHeldUser", ...), "" when none.
    qos : the job's QOS ("" when the source does not report it).
    tasks : the job's task count, the most tasks of any of its ``srun`` steps (sacct's
        NTasks; the batch and extern steps are not counted); None when not reported.
    num_tasks, ntasks_per_node : a pending job's requested task count and tasks per node
        (``squeue``'s ``tasks`` and ``tasks_per_node``; None when not reported, or 0 for
        tasks per node the user did not set). Slurm's default task count is the minimum
        node count, so a job whose num_tasks exceeds nodes_min asked for a task count.
    node_names : the nodes a running job holds (squeue's job_resources.allocated_nodes);
        empty when the source does not say.
    """

    job_id: int
    name: str
    user: str
    account: str
    partition: str
    state: str
    source: str
    wckey: str = ""
    comment: str | None = None
    admin_comment: str | None = None
    exit_code: int | None = None
    exit_signal: int | None = None
    nodes_min: int | None = None
    nodes_max: int | None = None
    nodes_alloc: int = 0
    time_limit_min: int | None = None
    submit_time: int | None = None
    start_time: int | None = None
    end_time: int | None = None
    elapsed_s: int | None = None
    workdir: str | None = None
    script: str | None = None
    priority: int | None = None
    state_reason: str = ""
    cluster: str = ""
    qos: str = ""
    tasks: int | None = None
    num_tasks: int | None = None
    ntasks_per_node: int | None = None
    node_names: frozenset[str] = frozenset()

    @property
    def finished(self) -> bool:
        """In a final state (completed, failed, cancelled, timed out, ...)."""
        return self.state in FINAL_STATES

    @property
    def moldable(self) -> bool:
        """Submitted with a node range (min < max), as far as the source reports it."""
        return (
            self.nodes_min is not None
            and self.nodes_max is not None
            and self.nodes_min < self.nodes_max
        )


@dataclass(frozen=True)
class NodeRecord:
    """One node from ``sinfo --json``: state is Slurm's ("idle", "mixed", "allocated", ...)."""

    name: str
    state: str
    cpus: int
    alloc_cpus: int
    partitions: tuple[str, ...]
    state_flags: tuple[str, ...] = ()
    real_memory_mb: int | None = None

    @property
    def idle(self) -> bool:
        """Fully idle and not drained, down or reserved."""
        return self.state == "idle" and not self.state_flags


@dataclass(frozen=True)
class PartitionRecord:
    """One partition from ``scontrol show partition -o``. None: UNLIMITED or not set."""

    name: str
    nodes: str
    total_nodes: int
    state: str
    default: bool
    max_nodes: int | None = None
    max_time_min: int | None = None
    # Who may run there (slurm.conf's AllowGroups, AllowAccounts, DenyAccounts, AllowQos,
    # DenyQos, RootOnly, ReqResv). None: ALL; a Deny list is empty when not set. Slurm takes
    # a job listing a partition its user may not use and leaves it pending there
    # (Reason=PartitionConfig) once it is moved there alone: the daemon must know.
    allow_groups: tuple[str, ...] | None = None
    allow_accounts: tuple[str, ...] | None = None
    deny_accounts: tuple[str, ...] = ()
    allow_qos: tuple[str, ...] | None = None
    deny_qos: tuple[str, ...] = ()
    root_only: bool = False
    req_resv: bool = False


@dataclass(frozen=True)
class QosRecord:
    """One QOS's per-job limits from ``sacctmgr show qos``. None: no limit.

    max_nodes_group: the tightest node count of GrpTRES, MaxTRESPerUser and
    MaxTRESPerAccount, which no single job can exceed either (slurmctld caps a node range by
    them, acct_policy.c ``acct_policy_get_max_nodes``; a job pinned past one never starts).
    """

    name: str
    max_nodes_per_job: int | None = None
    max_wall_min: int | None = None
    max_nodes_group: int | None = None


@dataclass(frozen=True)
class AssocRecord:
    """One association's effective per-job limits from ``scontrol show assoc_mgr``.

    Effective: slurmctld's cache holds the limits a child inherits from its parent accounts
    (a user under ``child`` whose parent account sets MaxTRESPerJob=node=2 shows node=2).
    user "" is an account's own association; partition "" applies to every partition.
    None: no limit.
    """

    account: str
    user: str
    partition: str
    max_nodes_per_job: int | None = None
    max_wall_min: int | None = None
    #: GrpTRES node=: the node count the association's running jobs share (its own, not
    #: inherited: `pick_association` adds the account's).
    max_nodes_group: int | None = None
    #: Nodes its running jobs hold now (GrpTRES node=LIMIT(USED)); 0 when not printed.
    nodes_in_use: int = 0
    #: The nodes a job of it could start on now under its GrpTRES node= and the account's:
    #: each limit less what is in use, the tightest (`pick_association`); None: no limit.
    nodes_free_group: int | None = None
