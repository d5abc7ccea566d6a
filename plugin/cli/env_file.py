"""Read an environment file named explicitly with ``adaptalloc --env-file FILE``.

adaptalloc is a product: it reads its configuration file (``--config``,
``$ADAPTALLOC_CONFIG``, ``/etc/adaptalloc/adaptalloc.toml``) and its own environment,
and nothing it finds lying around. It never searches the working directory, its parents
or its checkout for an env file: when an admin starts it under ``/tmp``, a user's
``/tmp/.local/env`` would otherwise hand it ``LD_PRELOAD``, ``SLURM_CONF`` or
``REDIS_URL`` and run the user's choices as root.

The development testbed (``deploy/local/up.sh``) writes ``.local/env``, one
``export KEY='value'`` per line, for a shell to ``source``. Passing it explicitly with
``--env-file`` is the other way in, and it is checked as a file a privileged process
may trust: owned by root or the caller, not writable by group or others, and setting no
variable that changes how a process loads code (``LD_*``, ``PYTHON*``).

Only the standard library is used, and nothing here runs a shell: the file is parsed
with :mod:`shlex`, never evaluated.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Mapping, MutableMapping
from pathlib import Path

__all__ = [
    "FORBIDDEN_PREFIXES",
    "MAX_ENV_FILE_BYTES",
    "LocalEnvError",
    "apply_env",
    "forbidden_name",
    "load_env_file",
    "parse_env",
    "read_env_file",
]

#: Variables an env file may never set: they choose the code a process (or its children,
#: squeue and scontrol) loads, which no file should decide for a privileged daemon.
FORBIDDEN_PREFIXES = ("LD_", "PYTHON")
#: An env file is a dozen lines; anything far larger is not one.
MAX_ENV_FILE_BYTES = 1 << 16

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class LocalEnvError(ValueError):
    """The env file is untrusted, unreadable, or has a line that is not an allowed assignment."""


def forbidden_name(key: str) -> bool:
    """True for the names an env file may not set (prefixes in FORBIDDEN_PREFIXES)."""
    return key.upper().startswith(FORBIDDEN_PREFIXES)


def parse_env(text: str, source: str = "<string>") -> dict[str, str]:
    """Parse ``KEY=VALUE`` lines with shell-quoted values.

    Blank lines and ``#`` comments are skipped; a leading ``export`` is allowed.
    Values follow POSIX shell quoting (``'a b'``, ``"a b"``, ``a\\ b``) but nothing is
    expanded, since no shell runs: ``$HOME`` stays the literal text ``$HOME``. Each
    assignment must fit on one line.

    Parameters
    ----------
    text : str
        The file's contents.
    source : str
        Name used in error messages (usually the file's path).

    Returns
    -------
    dict[str, str]
        The assignments in file order; a key assigned twice keeps its last value.

    Raises
    ------
    LocalEnvError
        For a line that is not one assignment, or one that sets a forbidden variable
        (:data:`FORBIDDEN_PREFIXES`), naming ``source`` and the line number.
    """
    values: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            words = shlex.split(stripped, comments=True, posix=True)
        except ValueError as exc:  # unbalanced quotes
            raise LocalEnvError(f"{source}:{lineno}: {exc}: {line!r}") from exc
        if words[:1] == ["export"]:
            words = words[1:]
        if len(words) != 1 or "=" not in words[0]:
            raise LocalEnvError(f"{source}:{lineno}: expected KEY=VALUE, got {line!r}")
        key, value = words[0].split("=", 1)
        if not _KEY.fullmatch(key):
            raise LocalEnvError(f"{source}:{lineno}: {key!r} is not a variable name")
        if forbidden_name(key):
            raise LocalEnvError(
                f"{source}:{lineno}: an env file may not set {key} "
                f"(no {'*, '.join(FORBIDDEN_PREFIXES)}* variables)"
            )
        values[key] = value
    return values


def _untrusted_reason(info: os.stat_result, euid: int) -> str | None:
    """Why a file with this status may not configure a process run by `euid`, or None."""
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_uid not in {0, euid}:
        return f"it is owned by uid {info.st_uid}, neither root nor the caller (uid {euid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"it is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def read_env_file(path: Path) -> dict[str, str]:
    """Read and parse one env file a privileged process may trust (see :func:`parse_env`).

    The ownership and mode are checked on the opened file (``fstat``), so the text parsed
    is the text of the file checked: it must be a regular file owned by root or the
    effective user and not writable by group or others.

    Raises
    ------
    LocalEnvError
        When the file cannot be read, is untrusted, too large, not UTF-8, or a line
        cannot be parsed or sets a forbidden variable.
    """
    try:
        # O_NONBLOCK: a FIFO named as the env file must be refused, not waited on.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            reason = _untrusted_reason(os.fstat(fd), os.geteuid())
            if reason is not None:
                raise LocalEnvError(f"{path}: refusing the env file: {reason}")
            chunks: list[bytes] = []
            size = 0
            while size <= MAX_ENV_FILE_BYTES and (chunk := os.read(fd, 1 << 14)):
                chunks.append(chunk)
                size += len(chunk)
            data = b"".join(chunks)
        finally:
            os.close(fd)
    except OSError as exc:
        raise LocalEnvError(f"cannot read env file {path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_ENV_FILE_BYTES:
        raise LocalEnvError(f"{path}: larger than {MAX_ENV_FILE_BYTES} bytes, not an env file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LocalEnvError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    return parse_env(text, source=str(path))


def apply_env(
    values: Mapping[str, str], environ: MutableMapping[str, str] | None = None
) -> dict[str, str]:
    """Copy ``values`` into the environment without overriding what is already set.

    A variable counts as set when it is present at all, even with an empty value.

    Parameters
    ----------
    values : Mapping[str, str]
        Variables to add, e.g. from :func:`read_env_file`.
    environ : MutableMapping[str, str], optional
        Environment to update; ``os.environ`` if None.

    Returns
    -------
    dict[str, str]
        The variables that were actually added.
    """
    env = os.environ if environ is None else environ
    applied = {key: value for key, value in values.items() if key not in env}
    env.update(applied)
    return applied


def load_env_file(path: Path, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Read the env file given with ``--env-file`` and apply it (variables already set win).

    Returns the variables added. Raises :class:`LocalEnvError` like :func:`read_env_file`.
    """
    return apply_env(read_env_file(path), environ)
