"""Which application a job belongs to: app keys, the comment tag, the configurable rule.

A speedup curve is learned per *app key*: an application name plus an optional problem-size
class (strong-scaling curves differ per problem size). Its string form is ``name`` or
``name@size``, e.g. ``lulesh@large``, and it becomes part of Redis key names
(plugin/store/keys.py), so it is validated here, before any Redis key is built from it:

* normalised: surrounding whitespace stripped, ASCII letters lower-cased;
* then it must match ``[a-z0-9][a-z0-9._-]*`` and be at most 64 characters (each part).

Nothing else is repaired. Non-ASCII text is refused *before* lower-casing, because
``str.lower`` maps the Kelvin sign (U+212A) to ``k`` and other look-alikes to ASCII; control
characters (ANSI escapes, newlines), ``:`` (the key separator), ``*``, ``/``, spaces and
over-long strings are refused with a reason whose quoted value is escaped and truncated
(:func:`plugin.errors.quote_value`), so a hostile job name cannot rewrite a terminal or
flood a log.

The explicit override, a tag in the job's comment (versioned, like jobstats' ``JS1:``)::

    adaptalloc:v1 app=lulesh size=large

The tag starts at the whitespace-separated word ``adaptalloc:v1`` and takes the
``key=value`` words that follow it, up to the first word that is not one (or a ``;``).
v1 knows these keys: ``app`` and ``size``, either of which may be left out (``adaptalloc:v1
size=large`` keeps the rule's name and sets the size), ``resize=yes|no``, read by
deploy/slurm/job_submit.lua (``resize=no`` opts a job out of resizing; it does not change
the app key), ``scaling=strong|weak`` (weak: the problem grows with the nodes, and the
daemon sizes the job by Gustafson's law, policies/weak.py; it does not change the app key),
and what the seed papers' models read (docs/science/seed-models.md; none changes the app
key): ``pattern=master-worker`` (the job is one master serving its workers: its size is
capped at the nodes the workers it keeps busy need, policies/master_worker.py) with,
optionally, the task figures the application reports, ``tc=`` (seconds of compute per task
on one worker), ``vi=`` and ``vo=`` (bytes sent to and returned by a worker per task), all
three or none; and ``intensity=`` (operational intensity, flop per byte of memory traffic,
for the roofline prior on node types the app never ran on, policies/roofline.py). Figures
are plain decimal numbers (``2.5``, ``4e6``) of at most 24 characters: finite, ``tc`` and
``intensity`` > 0, ``vi`` and ``vo`` ≥ 0 and not both 0.
A tag with an unknown key, an empty or invalid value, a repeated key, task figures without
``pattern=master-worker`` or only some of them, or a second tag in the same comment is
refused as a whole, with its reason: an explicit override that cannot be honoured must not
silently become some other app. A word ``adaptalloc:vN`` for another N is
refused as an unsupported version. Words
that merely start with ``adaptalloc:v1:`` are the daemon's own records in ``admin_comment``
(plugin/daemon/marks.py) and are not tags.

The tag is looked for in ``admin_comment`` first (only Slurm administrators and the daemon
can set it, so the daemon can record the key it decided with), then in ``comment``.
Otherwise the rule's template (``[appkey] template``, default ``{name}``) is filled from
the job's fields and, when ``[appkey] pattern`` is set, that regular expression picks the
name (group ``app``, else the whole match) and optionally the size (group ``size``).
Generic names such as ``wrap`` (every ``sbatch --wrap`` job) are refused rather than lumping
unrelated jobs into one curve.

**Whose runs.** Job names and tags are text any user writes, so a key made of them alone is
a name every user can claim: one user's runs would size another user's jobs. By default
(``[appkey] scope = "user"``) every key the rule makes is the job's user's own, its *owner*:
``alice/lulesh@large``. The user name comes from Slurm (the job's uid), which no job field
can forge. The learner stores a run under its user's key and the daemon sizes a job from its
user's curve, so a user's runs can move only that user's own decisions. A key without an
owner (``lulesh@large``) is the site's: written by an admin's import (``adaptalloc import
csv --app``) or, for the apps an admin names in ``[appkey] shared`` (patterns such as
``"lulesh*"``; or every app with ``scope = "site"``), by every user's runs, pooled with each
user's weight bounded (plugin/learning/sharing.py). The daemon reads the user's own curve and
falls back on the site's when the user's own cannot size the job.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import PurePosixPath
from typing import Protocol

from plugin.errors import InputError, quote_value

__all__ = [
    "DEFAULT_GENERIC_NAMES",
    "MAX_PART_LENGTH",
    "MAX_USER_INFLUENCE",
    "OWNER_SEPARATOR",
    "PATTERNS",
    "SCOPES",
    "SIZE_SEPARATOR",
    "TAG_MARKER",
    "TEMPLATE_FIELDS",
    "AppKey",
    "AppKeyError",
    "AppKeyRule",
    "JobFields",
    "Tag",
    "normalise_part",
    "numeric_size",
    "owner_of",
    "parse_tag",
    "size_class",
    "size_text",
]

#: Longest name or size class, in characters, after normalisation.
MAX_PART_LENGTH = 64
#: Between the name and the size class in an app key's string form.
SIZE_SEPARATOR = "@"
#: Between the owner (a user name) and the rest in an owned app key's string form.
OWNER_SEPARATOR = "/"
#: Whose runs a key's curve comes from: each user's own, or the site's (every user's).
SCOPES = ("user", "site")
#: How far one user's runs may move a site key's curve (``[appkey] max_user_influence``'s
#: default; plugin/learning/sharing.py says why).
MAX_USER_INFLUENCE = 0.25
#: The word that starts a v1 tag in a job comment.
TAG_MARKER = "adaptalloc:v1"
#: Fields a template may use, e.g. ``"{account}.{name}"``.
TEMPLATE_FIELDS = ("name", "user", "account", "partition", "wckey", "script")
#: Job names that say nothing about the application (refused unless configured otherwise).
DEFAULT_GENERIC_NAMES = ("wrap", "bash", "sh", "zsh", "interactive", "sbatch", "srun", "salloc")
#: Longest raw text a template or pattern is applied to; longer is refused before any regex.
MAX_RAW_LENGTH = 1024

_PART = re.compile(r"[a-z0-9][a-z0-9._-]*")
# A user name as Slurm reports it, taken exactly (two names that differ only in case are two
# users): POSIX portable characters, at most MAX_PART_LENGTH.
_OWNER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
_TAG_KEYS = ("app", "size", "resize", "scaling", "pattern", "tc", "vi", "vo", "intensity")
#: The application patterns a tag may name.
PATTERNS = ("master-worker",)
#: The task figures of a master-worker tag: given together or not at all.
_FIGURES = ("tc", "vi", "vo")
#: A figure's text: a plain decimal number, no sign, at most 24 characters.
_FIGURE = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_FIGURE_LENGTH = 24
# Any word that names a tag version ("adaptalloc:v" and no further ':'; the daemon's
# records are adaptalloc:v1:held and the like): only TAG_MARKER is honoured, the rest are
# refused, including look-alikes such as "adaptalloc:v١" or "adaptalloc:v１".
_TAG_VERSION = re.compile(r"adaptalloc:v[^:]*")
# ASCII whitespace only, as Lua's %s in job_submit.lua: str.split() also splits on
# U+00A0, U+2003, U+001F…, which would make a tag the Lua opt-out check does not see.
_TAG_SPACE = re.compile(r"[ \t\n\r\f\v]+")
_TAG_VALUE = re.compile(r"([a-z]+)=(.*)", re.DOTALL)
_FIELD = re.compile(r"\{([a-z_]+)\}")


class AppKeyError(InputError):
    """A job, tag or string yields no valid app key; the message says why (escaped)."""


def normalise_part(text: str, what: str = "app name") -> str:
    """Normalise and validate one part of an app key (the name or the size class).

    Parameters
    ----------
    text : str
        Untrusted text: a job name, a tag value, a command-line argument.
    what : str
        How the part is named in the error message.

    Returns
    -------
    str
        The normalised part: stripped and lower-cased, matching ``[a-z0-9][a-z0-9._-]*``,
        at most MAX_PART_LENGTH characters.

    Raises
    ------
    AppKeyError
        One line saying what is wrong, quoting the value escaped and truncated.
    """
    value = text.strip()
    if not value:
        raise AppKeyError(f"{what} is empty")
    if len(value) > MAX_PART_LENGTH:
        raise AppKeyError(
            f"{what} {quote_value(value)} is longer than {MAX_PART_LENGTH} characters"
        )
    if not value.isascii():  # shown escaped: a look-alike letter would pass unnoticed
        shown = quote_value(value.encode("ascii", "backslashreplace").decode("ascii"))
        raise AppKeyError(f"{what} {shown} has non-ASCII characters")
    value = value.lower()
    if not _PART.fullmatch(value):
        raise AppKeyError(
            f"{what} {quote_value(value)} must start with a letter or digit and contain "
            "only a-z, 0-9, '.', '_' and '-'"
        )
    return value


@dataclass(frozen=True, order=True)
class AppKey:
    """A validated app key: name and optional size class, both already normalised, and the
    user whose runs it holds (`owner`; None: the site's key, module docstring).

    Construct with :meth:`parse` (normalises untrusted text) or directly with normalised
    parts (validated again, so an AppKey always holds a safe key).
    """

    name: str
    size: str | None = None
    owner: str | None = None

    def __post_init__(self) -> None:
        if not _is_part(self.name):
            raise AppKeyError(f"app name {quote_value(str(self.name))} is not normalised")
        if self.size is not None and not _is_part(self.size):
            raise AppKeyError(f"size class {quote_value(str(self.size))} is not normalised")
        if self.owner is not None and not _is_owner(self.owner):
            raise AppKeyError(f"owner {quote_value(str(self.owner))} is not a user name")

    def __str__(self) -> str:
        base = self.name if self.size is None else f"{self.name}{SIZE_SEPARATOR}{self.size}"
        return base if self.owner is None else f"{self.owner}{OWNER_SEPARATOR}{base}"

    @property
    def app(self) -> str:
        """The key without its owner (``lulesh@large``): what the application is called."""
        return self.name if self.size is None else f"{self.name}{SIZE_SEPARATOR}{self.size}"

    @property
    def site(self) -> AppKey:
        """The site's key of the same application and size (no owner)."""
        return self if self.owner is None else replace(self, owner=None)

    def owned_by(self, owner: str | None) -> AppKey:
        """The same application and size as `owner`'s key (None: the site's)."""
        return replace(self, owner=owner)

    @classmethod
    def parse(cls, text: str) -> AppKey:
        """``[owner/]name[@size]`` from untrusted text (normalised, validated; the owner is a
        user name and taken exactly)."""
        owner: str | None = None
        if OWNER_SEPARATOR in text:
            owner, _, text = text.partition(OWNER_SEPARATOR)
            owner = owner_of(owner)
        name, sep, size = text.partition(SIZE_SEPARATOR)
        if sep and SIZE_SEPARATOR in size:
            raise AppKeyError(f"app key {quote_value(text)} has more than one '@'")
        return cls(
            normalise_part(name, "app name"),
            normalise_part(size, "size class") if sep else None,
            owner,
        )

    @classmethod
    def of(cls, name: str, size: str | None = None) -> AppKey:
        """An app key from an untrusted name and optional size class."""
        return cls(
            normalise_part(name, "app name"),
            None if size is None else normalise_part(size, "size class"),
        )


def _is_part(value: object) -> bool:
    return (
        isinstance(value, str)
        and len(value) <= MAX_PART_LENGTH
        and _PART.fullmatch(value) is not None
    )


def _is_owner(value: object) -> bool:
    return isinstance(value, str) and _OWNER.fullmatch(value) is not None


def owner_of(user: str) -> str:
    """The owner part for a user name, taken exactly; AppKeyError when Slurm's name for the
    user is not one an app key can hold (empty, over-long, or outside [A-Za-z0-9._-])."""
    if not user:
        raise AppKeyError("the job has no user to own its app key")
    if not _is_owner(user):
        shown = quote_value(user.encode("ascii", "backslashreplace").decode("ascii"))
        raise AppKeyError(
            f"user name {shown} cannot own an app key (it must match [A-Za-z0-9_][A-Za-z0-9._-]*, "
            f"at most {MAX_PART_LENGTH} characters)"
        )
    return user


#: A size class that is a problem size: a plain decimal number (``1000``, ``2.5e6``).
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?")


def numeric_size(size_class: str | None) -> float | None:
    """The problem size a size class names when it is a number (``size=2.5e6``), else None.

    The class still picks the app key (``cg@2.5e6``); the number is recorded beside each
    run so that curves of sibling sizes can be borrowed (predictor/sizes.py). Only finite
    values > 0 count (``size=0`` and ``size=1e999`` stay plain class names).
    """
    if size_class is None or not _NUMBER.fullmatch(size_class):
        return None
    value = float(size_class)
    return value if 0.0 < value < float("inf") else None


def size_class(size: float) -> str:
    """The size class that names a numeric problem size: ``1000``, ``2.5e6`` (shortest form
    that reads back as the same number with :func:`numeric_size`, no ``+``)."""
    if not (math.isfinite(size) and size > 0):
        raise ValueError(f"size must be finite and > 0, got {size!r}")
    if size == int(size) and size < 1e15:
        return str(int(size))
    return repr(float(size)).replace("e+", "e")


def size_text(size: float) -> str:
    """A problem size for people: whole numbers in full (``4300800``), others as ``%g``."""
    return str(int(size)) if size == int(size) and abs(size) < 1e15 else f"{size:g}"


# --- the comment tag ----------------------------------------------------------------------


@dataclass(frozen=True)
class Tag:
    """A parsed ``adaptalloc:v1`` tag; each field None when the tag leaves it out.

    pattern: "master-worker" or None; tc, vi, vo: the task figures (seconds, bytes, bytes),
    all set or all None; intensity: flop/byte."""

    app: str | None = None
    size: str | None = None
    resize: bool | None = None
    scaling: str | None = None
    pattern: str | None = None
    tc: float | None = None
    vi: float | None = None
    vo: float | None = None
    intensity: float | None = None


def _figure(fields: dict[str, str], key: str, where: str, zero: bool = False) -> float | None:
    """The number `key` holds (None when the tag leaves it out); AppKeyError for text that is
    not a plain finite number, or one ≤ 0 (< 0 with `zero`)."""
    text = fields.get(key)
    if text is None:
        return None
    least = "≥ 0" if zero else "> 0"
    if len(text) > _FIGURE_LENGTH or not _FIGURE.fullmatch(text):
        raise AppKeyError(
            f"{where} tag {key}= must be a plain decimal number {least}, got {quote_value(text)}"
        )
    value = float(text)
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise AppKeyError(
            f"{where} tag {key}= must be a finite number {least}, got {quote_value(text)}"
        )
    return value


def _with_pattern(tag: Tag, fields: dict[str, str], where: str) -> Tag:
    """`tag` with pattern, tc, vi, vo and intensity, checked as the module docstring says."""
    pattern = fields.get("pattern")
    if pattern is not None and pattern.lower() not in PATTERNS:
        raise AppKeyError(
            f"{where} tag pattern= must be {' or '.join(PATTERNS)}, got {quote_value(pattern)}"
        )
    given = [key for key in _FIGURES if key in fields]
    if given and pattern is None:
        raise AppKeyError(f"{where} tag gives {given[0]}= without pattern=master-worker")
    if given and len(given) < len(_FIGURES):
        missing = [key for key in _FIGURES if key not in fields]
        raise AppKeyError(
            f"{where} tag gives {', '.join(k + '=' for k in given)} without "
            f"{', '.join(k + '=' for k in missing)} (the task figures go together)"
        )
    vi, vo = _figure(fields, "vi", where, zero=True), _figure(fields, "vo", where, zero=True)
    if vi == 0 and vo == 0:
        raise AppKeyError(f"{where} tag vi= and vo= are both 0 (a task moves some data)")
    return replace(
        tag,
        pattern=None if pattern is None else pattern.lower(),
        tc=_figure(fields, "tc", where),
        vi=vi,
        vo=vo,
        intensity=_figure(fields, "intensity", where),
    )


def _tag_fields(words: list[str], where: str) -> dict[str, str]:
    """The key=value words after the marker, up to a ';' or a word that is not one."""
    fields: dict[str, str] = {}
    for word in words:
        if word.startswith(";"):
            break
        match = _TAG_VALUE.fullmatch(word.rstrip(";"))
        if match is None:
            break
        key, value = match.groups()
        if key not in _TAG_KEYS:
            raise AppKeyError(
                f"{where} tag has an unknown key {quote_value(key)} "
                f"({TAG_MARKER} knows {', '.join(_TAG_KEYS)})"
            )
        if key in fields:
            raise AppKeyError(f"{where} tag gives {key}= twice")
        fields[key] = value
        if word.endswith(";"):
            break
    return fields


def parse_tag(comment: str | None, where: str = "comment") -> Tag | None:
    """Find and parse the v1 tag in a job comment (see the module docstring).

    Returns None when the comment holds no tag; raises AppKeyError for a tag that cannot be
    honoured (unknown key, invalid value, unsupported version, two tags).
    """
    if not comment or "adaptalloc:" not in comment:
        return None
    words = [word for word in _TAG_SPACE.split(comment) if word]
    starts = [i for i, word in enumerate(words) if word == TAG_MARKER]
    for word in words:
        if word != TAG_MARKER and _TAG_VERSION.fullmatch(word):
            shown = quote_value(word.encode("ascii", "backslashreplace").decode("ascii"))
            raise AppKeyError(
                f"{where} tag {shown} has an unsupported version "
                f"(this adaptalloc reads {TAG_MARKER})"
            )
    if not starts:
        return None
    if len(starts) > 1:
        raise AppKeyError(f"{where} has {len(starts)} {TAG_MARKER} tags; give one")
    fields = _tag_fields(words[starts[0] + 1 :], where)
    if not fields:
        raise AppKeyError(f"{where} tag {TAG_MARKER} gives no key=value")
    resize = fields.get("resize")
    if resize is not None and resize.lower() not in ("yes", "no"):
        raise AppKeyError(f"{where} tag resize= must be yes or no, got {quote_value(resize)}")
    scaling = fields.get("scaling")
    if scaling is not None and scaling.lower() not in ("strong", "weak"):
        raise AppKeyError(
            f"{where} tag scaling= must be strong or weak, got {quote_value(scaling)}"
        )
    tag = Tag(
        app=None if "app" not in fields else normalise_part(fields["app"], f"{where} tag app"),
        size=None if "size" not in fields else normalise_part(fields["size"], f"{where} tag size"),
        resize=None if resize is None else resize.lower() == "yes",
        scaling=None if scaling is None else scaling.lower(),
    )
    return _with_pattern(tag, fields, where)


# --- the rule -----------------------------------------------------------------------------


class JobFields(Protocol):
    """The job fields an app key can come from (plugin.slurm.JobRecord has them all)."""

    @property
    def name(self) -> str: ...
    @property
    def user(self) -> str: ...
    @property
    def account(self) -> str: ...
    @property
    def partition(self) -> str: ...
    @property
    def wckey(self) -> str: ...
    @property
    def script(self) -> str | None: ...
    @property
    def comment(self) -> str | None: ...
    @property
    def admin_comment(self) -> str | None: ...


def template_fields(template: str) -> tuple[str, ...]:
    """The fields a template uses; ValueError naming an unknown one or a malformed template."""
    names = tuple(_FIELD.findall(template))
    if not names:
        raise ValueError(
            f"template {template!r} uses no field; use some of "
            + ", ".join("{" + f + "}" for f in TEMPLATE_FIELDS)
        )
    unknown = [n for n in names if n not in TEMPLATE_FIELDS]
    if unknown:
        raise ValueError(
            f"template field {{{unknown[0]}}} is unknown; allowed: "
            + ", ".join("{" + f + "}" for f in TEMPLATE_FIELDS)
        )
    if "{" in _FIELD.sub("", template) or "}" in _FIELD.sub("", template):
        raise ValueError(f"template {template!r} has a stray brace")
    return names


def script_stem(path: str | None) -> str:
    """The script's file name without its last extension (``/a/lulesh.sh`` -> ``lulesh``)."""
    if not path:
        return ""
    return PurePosixPath(path).stem


@dataclass(frozen=True)
class AppKeyRule:
    """How a job becomes an app key: tags first, then the template (and pattern).

    Attributes
    ----------
    template : fields to build the key from, e.g. ``"{name}"`` or ``"{account}.{name}"``.
    pattern : optional regular expression searched in the filled template; group ``app``
        (or the whole match) is the name, optional group ``size`` the size class.
    comment_tag : honour an ``adaptalloc:v1`` tag in the job's comment.
    admin_comment_tag : honour one in the job's admin_comment (set by admins/the daemon).
    generic_names : names refused as saying nothing about the application.
    scope : "user" (default: every key is the job's user's own) or "site" (every key is the
        site's: every user's runs size every user's jobs).
    shared : patterns (fnmatch, on ``name`` or ``name@size``) of the apps whose key is the
        site's under scope "user": an admin's choice to pool every user's runs of them.
    """

    template: str = "{name}"
    pattern: str = ""
    comment_tag: bool = True
    admin_comment_tag: bool = True
    generic_names: tuple[str, ...] = DEFAULT_GENERIC_NAMES
    scope: str = "user"
    shared: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        template_fields(self.template)  # raises ValueError for a bad template
        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {self.scope!r}")
        if self.pattern:
            compiled = re.compile(self.pattern)
            unknown = set(compiled.groupindex) - {"app", "size"}
            if unknown:
                raise ValueError(
                    f"pattern group {sorted(unknown)[0]!r} is unknown; use (?P<app>…), (?P<size>…)"
                )

    @property
    def uses_comment(self) -> bool:
        """Whether the job's comment can change its key (callers fetch it when missing)."""
        return self.comment_tag

    @cached_property
    def fields(self) -> tuple[str, ...]:
        """The template's fields (parsed once per rule)."""
        return template_fields(self.template)

    def key_for(self, job: JobFields) -> AppKey:
        """The job's app key, owned by its user unless the site's (module docstring);
        AppKeyError (one escaped line) when it has none."""
        return self.scoped(self.app_for(job), job.user)

    def app_for(self, job: JobFields) -> AppKey:
        """The job's application and size class, without an owner (tags, then template)."""
        tag = self._tag(job)
        if tag is not None and tag.app is not None:
            return AppKey(tag.app, tag.size)
        name, size = self._from_template(job)
        if tag is not None and tag.size is not None:
            size = tag.size
        return AppKey(name, size)

    def is_shared(self, app: AppKey) -> bool:
        """Whether `app`'s runs are pooled over every user (scope "site", or `shared`)."""
        if self.scope == "site":
            return True
        return any(
            fnmatch.fnmatchcase(app.app, pattern) or fnmatch.fnmatchcase(app.name, pattern)
            for pattern in self.shared
        )

    def scoped(self, app: AppKey, user: str) -> AppKey:
        """`app` as `user`'s own key, or the site's when its runs are pooled."""
        return app.site if self.is_shared(app) else app.owned_by(owner_of(user))

    def _tag(self, job: JobFields) -> Tag | None:
        if self.admin_comment_tag:
            tag = parse_tag(job.admin_comment, "admin_comment")
            if tag is not None:
                return tag
        if self.comment_tag:
            return parse_tag(job.comment, "comment")
        return None

    def _from_template(self, job: JobFields) -> tuple[str, str | None]:
        values = {}
        for field_name in self.fields:
            raw = script_stem(job.script) if field_name == "script" else getattr(job, field_name)
            if not raw:
                raise AppKeyError(f"job has no {field_name} for the app key template")
            values[field_name] = raw
        filled = _FIELD.sub(lambda m: values[m.group(1)], self.template).strip()
        if len(filled) > MAX_RAW_LENGTH:
            raise AppKeyError(f"app key source {quote_value(filled)} is too long")
        size: str | None = None
        if self.pattern:
            match = re.search(self.pattern, filled)
            if match is None:
                raise AppKeyError(f"{quote_value(filled)} does not match the app key pattern")
            groups = match.groupdict()
            filled = groups.get("app") or match.group(0)
            if groups.get("size"):
                size = normalise_part(groups["size"], "size class")
        name = normalise_part(filled, "app name")
        if name in self.generic_names:
            raise AppKeyError(
                f"job name {quote_value(name)} is generic; give the job a name "
                f"(--job-name) or a comment tag '{TAG_MARKER} app=NAME'"
            )
        return name, size
