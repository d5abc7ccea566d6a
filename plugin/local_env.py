"""Find and read the local testbed's environment file, ``.local/env``.

``deploy/local/up.sh`` writes that file when it has brought up the local Slurm and
Redis: one assignment per line, ``export KEY='value'`` (the ``export`` is optional,
values are shell-quoted), so that a shell can ``source`` it. The adaptalloc CLI reads
it by default when present, so that ``SLURM_CONF`` and ``REDIS_URL`` point at the
testbed without any setup; values already in the environment always win.

Only the standard library is used, and nothing here runs a shell: the file is parsed
with :mod:`shlex`, never evaluated.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, MutableMapping
from pathlib import Path

__all__ = [
    "ENV_FILE_NAME",
    "STATE_DIR_NAME",
    "STATE_DIR_VAR",
    "LocalEnvError",
    "apply_env",
    "find_env_file",
    "load_local_env",
    "parse_env",
    "read_env_file",
]

#: Name of the file inside the state directory.
ENV_FILE_NAME = "env"
#: Default state directory, relative to the project root.
STATE_DIR_NAME = ".local"
#: Environment variable that overrides the state directory (as for up.sh).
STATE_DIR_VAR = "ADAPTALLOC_STATE_DIR"

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class LocalEnvError(ValueError):
    """The environment file has a line that is not a ``KEY=VALUE`` assignment."""


def find_env_file(
    start: Path | None = None, environ: Mapping[str, str] | None = None
) -> Path | None:
    """Locate the testbed's environment file.

    Looks, in order, at:

    1. ``$ADAPTALLOC_STATE_DIR/env`` when that variable is set (and nowhere else
       then: an explicit state directory without an env file means "none");
    2. ``.local/env`` in ``start`` (default: the current directory) and each of
       its parents;
    3. ``.local/env`` in the project checkout this module belongs to.

    Parameters
    ----------
    start : Path, optional
        Directory to start the upward search from; the current directory if None.
    environ : Mapping[str, str], optional
        Environment to read ``ADAPTALLOC_STATE_DIR`` from; ``os.environ`` if None.

    Returns
    -------
    Path or None
        The first existing file found, or None when there is none.
    """
    env = os.environ if environ is None else environ
    state_dir = env.get(STATE_DIR_VAR)
    if state_dir:
        candidate = Path(state_dir) / ENV_FILE_NAME
        return candidate if candidate.is_file() else None

    here = (Path.cwd() if start is None else start).resolve()
    for directory in (here, *here.parents):
        candidate = directory / STATE_DIR_NAME / ENV_FILE_NAME
        if candidate.is_file():
            return candidate

    checkout = Path(__file__).resolve().parent.parent / STATE_DIR_NAME / ENV_FILE_NAME
    return checkout if checkout.is_file() else None


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
        For a line that is not one assignment, naming ``source`` and the line number.
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
        values[key] = value
    return values


def read_env_file(path: Path) -> dict[str, str]:
    """Read and parse one environment file (see :func:`parse_env`).

    Raises
    ------
    OSError
        When the file cannot be read.
    LocalEnvError
        When a line cannot be parsed.
    """
    return parse_env(path.read_text(encoding="utf-8"), source=str(path))


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


def load_local_env(
    start: Path | None = None, environ: MutableMapping[str, str] | None = None
) -> dict[str, str]:
    """Find the testbed's env file and apply it (the CLI's default behaviour).

    Returns the variables added, an empty dict when no env file exists. Raises like
    :func:`read_env_file` when one exists but cannot be read or parsed.
    """
    env = os.environ if environ is None else environ
    path = find_env_file(start, env)
    if path is None:
        return {}
    return apply_env(read_env_file(path), env)
