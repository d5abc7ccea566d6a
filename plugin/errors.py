"""The plugin layer's exceptions, and helpers to put untrusted text into their messages.

Every anticipated problem (a missing file, a malformed CSV row, an option value the
predictor refuses) is raised as an :class:`AdaptallocError` whose message is one line a
person can act on. Library code only raises; the CLI turns these into
``adaptalloc: error: <message>`` and exit code 1.

Messages often quote what the user gave us (a CSV cell, a header name, a path). That
text may be hostile: ANSI escape sequences can recolour or rewrite a terminal, and a
100 kB cell would flood it. :func:`printable` escapes every non-printable character and
:func:`quote_value` additionally truncates, so a message stays one short, inert line.
"""

from __future__ import annotations

__all__ = [
    "QUOTE_LIMIT",
    "AdaptallocError",
    "InputError",
    "ObservationsError",
    "TooManyRowsError",
    "printable",
    "quote_value",
]

#: Characters of an untrusted value shown in a message before it is cut off.
QUOTE_LIMIT = 40


class AdaptallocError(Exception):
    """Base of the plugin layer's anticipated errors; ``str(exc)`` is one line for the user."""


class InputError(AdaptallocError):
    """Input the user can fix: a file, an option value, data the predictor refuses."""


class ObservationsError(InputError):
    """An observation CSV cannot be read or holds an unusable row."""


class TooManyRowsError(ObservationsError):
    """An observation CSV has more rows than the configured limit.

    Attributes
    ----------
    limit : int
        The row limit that was exceeded, so that the caller can say how to raise it.
    """

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


def _escape_char(ch: str) -> str:
    """One character as a Python-style escape: ``\\x1b``, ``\\u202e``, ``\\U0001f600``."""
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str) -> str:
    """Escape every character that is not printable (controls, bidi overrides, newlines).

    Printable text, including non-ASCII letters, is kept as it is, and so are backslashes,
    so escaping twice changes nothing.

    >>> printable("a\\x1b[31mb\\n")
    'a\\\\x1b[31mb\\\\x0a'
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape_char(ch) for ch in text)


def quote_value(text: str, limit: int = QUOTE_LIMIT, quotes: bool = True) -> str:
    """Show an untrusted value in a one-line message: escaped, quoted, cut at `limit`.

    A value longer than `limit` characters shows its first `limit` characters, then
    ``...`` and its full length. With ``quotes=False`` the quotes are left off (for
    values already known to be numbers).

    >>> quote_value("abc")
    "'abc'"
    >>> quote_value("x" * 50, limit=5)
    "'xxxxx...' (50 characters)"
    """
    q = "'" if quotes else ""
    if len(text) <= limit:
        return f"{q}{printable(text)}{q}"
    return f"{q}{printable(text[:limit])}...{q} ({len(text):,} characters)"
