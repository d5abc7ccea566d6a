"""The allocation policy file: read with tomllib, validated by `policies.parse_config`.

Used by ``adaptalloc decide``/``policy check`` (plugin/cli/policy.py) and by the daemon, which
reads it at start and again on SIGHUP. Every problem is one line naming the file: unreadable,
not TOML (with line and column), or a key the policies refuse (with what is allowed).
"""

from __future__ import annotations

import tomllib

import policies
from plugin.errors import InputError, printable

__all__ = ["load_policy_config"]


def load_policy_config(path: str | None) -> policies.PolicyConfig:
    """Read and validate a policy TOML file; None (or "") gives the built-in defaults.

    Raises InputError with one line: the file and what is wrong with it.
    """
    if not path:
        return policies.default_config()
    name = printable(path)
    try:
        with open(path, "rb") as handle:
            doc = tomllib.load(handle)
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{name}: not valid TOML: {printable(str(exc))}") from exc
    except ValueError as exc:  # an integer beyond Python's 4300-digit conversion limit
        raise InputError(f"{name}: not a policy file: {printable(str(exc))[:120]}") from exc
    except RecursionError as exc:  # tomllib recurses once per nested array or inline table
        raise InputError(f"{name}: not a policy file: arrays or tables nested too deeply") from exc
    try:
        return policies.parse_config(doc, name)
    except policies.PolicyConfigError as exc:
        raise InputError(printable(str(exc))) from exc
