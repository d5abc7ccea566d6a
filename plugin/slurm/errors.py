"""The Slurm adapter's exceptions: one line each, with Slurm's own words where there are some."""

from __future__ import annotations

from plugin.errors import AdaptallocError

__all__ = ["SlurmCommandError", "SlurmError", "SlurmParseError"]


class SlurmError(AdaptallocError):
    """Slurm could not be asked, or did not answer usefully; the daemon fails open on it."""


class SlurmCommandError(SlurmError):
    """A Slurm command failed, timed out or is missing; the message carries its stderr."""


class SlurmParseError(SlurmError):
    """A Slurm command answered with output the adapter cannot read."""
