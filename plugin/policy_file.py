"""The allocation policy file: read as plugin/config.py reads its own (`read_toml_file`),
validated by `policies.parse_config` (both with policies/toml_keys.py).

Used by ``adaptalloc decide``/``policy check`` (plugin/cli/policy.py) and by the daemon, which
reads it at start and again on SIGHUP. Every problem is one line naming the file: unreadable,
not TOML (with line and column), or a key the policies refuse (with what is allowed).
"""

from __future__ import annotations

import policies
from plugin.config import read_toml_file
from plugin.errors import InputError, printable

__all__ = ["load_policy_config"]


def load_policy_config(path: str | None) -> policies.PolicyConfig:
    """Read and validate a policy TOML file; None (or "") gives the built-in defaults.

    Raises InputError with one line: the file and what is wrong with it.
    """
    if not path:
        return policies.default_config()
    name = printable(path)
    doc = read_toml_file(path, name)
    try:
        return policies.parse_config(doc, name)
    except policies.PolicyConfigError as exc:
        raise InputError(printable(str(exc))) from exc
