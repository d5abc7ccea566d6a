"""What a site's job_submit.lua does with adaptalloc's module, read from its text.

The hook is the Lua module ``adaptalloc_submit`` (deploy/slurm/adaptalloc_submit.lua); a
site's own job_submit.lua loads it (``require("adaptalloc_submit")``, plain or under
``pcall``) and calls ``<module>.job_submit(...)`` from its slurm_job_submit and
``<module>.job_modify(...)`` from its slurm_job_modify. This reads the script's code with its
comments removed (strings kept: the module's name is one) and says which of those pieces are
missing. It is a reading, not a Lua interpreter: a script that builds the module's name at run
time, or calls it through another name, reads as not calling it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MODULE_NAME", "SiteScript", "read_site_script", "strip_comments"]

#: The name a site's script requires.
MODULE_NAME = "adaptalloc_submit"

_LONG_OPEN = re.compile(r"\[(=*)\[")
_REQUIRE = re.compile(
    r"""\brequire\s*(?:\(\s*)?(["'])adaptalloc_submit\1"""
    r"""|\bpcall\s*\(\s*require\s*,\s*(["'])adaptalloc_submit\2"""
)
_SUBMIT_CALL = re.compile(r"[\w\]\)]\s*\.\s*job_submit\s*\(")
_MODIFY_CALL = re.compile(r"[\w\]\)]\s*\.\s*job_modify\s*\(")
_SUBMIT_FN = re.compile(r"\bfunction\s+slurm_job_submit\s*\(|\bslurm_job_submit\s*=\s*function\b")
_MODIFY_FN = re.compile(r"\bfunction\s+slurm_job_modify\s*\(|\bslurm_job_modify\s*=\s*function\b")


def _long_bracket_end(text: str, start: int) -> int | None:
    """Where the long bracket opening at `start` (``[[``, ``[==[``) ends (one past its close),
    or None when `start` opens none."""
    opened = _LONG_OPEN.match(text, start)
    if opened is None:
        return None
    close = "]" + opened.group(1) + "]"
    end = text.find(close, opened.end())
    return len(text) if end < 0 else end + len(close)


def strip_comments(text: str) -> str:
    """Lua source without its comments (``-- ...`` to the end of the line, ``--[[ ... ]]``),
    strings and long strings kept as they are."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if text.startswith("--", i):
            end = _long_bracket_end(text, i + 2)
            if end is None:
                newline = text.find("\n", i)
                end = len(text) if newline < 0 else newline
            out.append(" ")
            i = end
        elif char in "\"'":
            j = i + 1
            while j < len(text) and text[j] not in (char, "\n"):
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif char == "[" and (end := _long_bracket_end(text, i)) is not None:
            out.append(text[i:end])
            i = end
        else:
            out.append(char)
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class SiteScript:
    """Which of adaptalloc's pieces a job_submit.lua holds."""

    requires_module: bool
    calls_submit: bool
    calls_modify: bool
    defines_submit: bool
    defines_modify: bool

    def missing(self) -> list[str]:
        """What is missing, in words, in the order a reader adds them ([] when complete)."""
        wanted = [
            (self.defines_submit, "function slurm_job_submit"),
            (self.defines_modify, "function slurm_job_modify"),
            (self.requires_module, f'require("{MODULE_NAME}")'),
            (self.calls_submit, "a call of <module>.job_submit(job_desc, part_list, submit_uid)"),
            (
                self.calls_modify,
                "a call of <module>.job_modify(job_desc, job_rec, part_list, modify_uid)",
            ),
        ]
        return [words for present, words in wanted if not present]


def read_site_script(text: str) -> SiteScript:
    """Which of adaptalloc's pieces the job_submit.lua `text` holds (see the module doc)."""
    code = strip_comments(text)
    return SiteScript(
        requires_module=_REQUIRE.search(code) is not None,
        calls_submit=_SUBMIT_CALL.search(code) is not None,
        calls_modify=_MODIFY_CALL.search(code) is not None,
        defines_submit=_SUBMIT_FN.search(code) is not None,
        defines_modify=_MODIFY_FN.search(code) is not None,
    )
