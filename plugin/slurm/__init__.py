"""The Slurm adapter, read side: jobs, nodes and partitions as frozen records.

    from plugin.slurm import slurm_reader
    reader = slurm_reader()                    # CLI backend, or pyslurm when it matches
    reader.finished_jobs(since, until, states=("COMPLETED",))   # sacct --json
    reader.jobs()                              # squeue --json (every job slurmctld knows)
    reader.nodes(); reader.partitions()        # sinfo --json; scontrol show partition -o

See reader.py for the interface and how issue 7 adds the write side, parse.py for what the
parsers know about Slurm 22.05's output.
"""

from plugin.slurm.cli_backend import CliSlurmReader, run_command
from plugin.slurm.errors import SlurmCommandError, SlurmError, SlurmParseError
from plugin.slurm.factory import choose_backend, slurm_reader
from plugin.slurm.reader import SlurmReader
from plugin.slurm.records import FINAL_STATES, JobRecord, NodeRecord, PartitionRecord

__all__ = [
    "FINAL_STATES",
    "CliSlurmReader",
    "JobRecord",
    "NodeRecord",
    "PartitionRecord",
    "SlurmCommandError",
    "SlurmError",
    "SlurmParseError",
    "SlurmReader",
    "choose_backend",
    "run_command",
    "slurm_reader",
]
