"""The Slurm adapter, read side: jobs, nodes and partitions as frozen records.

    from plugin.slurm import slurm_reader
    reader = slurm_reader()                    # CLI backend, or pyslurm when it matches
    reader.finished_jobs(since, until, states=("COMPLETED",))   # sacct --json
    reader.jobs()                              # squeue --json (every job slurmctld knows)
    reader.nodes(); reader.partitions()        # sinfo --json; scontrol show partition -o

The write side (the daemon's): ``slurm_client()`` gives reader and writer in one; see
writer.py for how held jobs are resized, annotated and released in few commands.

See reader.py for the read interface, parse.py for what the parsers know about Slurm
22.05's output.
"""

from plugin.slurm.cli_backend import CliSlurmReader, run_command
from plugin.slurm.errors import SlurmCommandError, SlurmError, SlurmParseError
from plugin.slurm.factory import choose_backend, slurm_client, slurm_reader
from plugin.slurm.reader import SlurmReader
from plugin.slurm.records import (
    FINAL_STATES,
    AssocRecord,
    JobRecord,
    NodeRecord,
    PartitionRecord,
    QosRecord,
)
from plugin.slurm.writer import CliSlurm, Resize, SlurmClient, SlurmWriter

__all__ = [
    "FINAL_STATES",
    "AssocRecord",
    "CliSlurm",
    "CliSlurmReader",
    "JobRecord",
    "NodeRecord",
    "PartitionRecord",
    "QosRecord",
    "Resize",
    "SlurmClient",
    "SlurmCommandError",
    "SlurmError",
    "SlurmParseError",
    "SlurmReader",
    "SlurmWriter",
    "choose_backend",
    "run_command",
    "slurm_client",
    "slurm_reader",
]
