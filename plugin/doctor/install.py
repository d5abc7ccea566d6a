"""Checks of the files an install puts in place: slurm.conf's adaptalloc lines, the hook
module (adaptalloc_submit.lua, by checksum against this version's copy), the site's
job_submit.lua that loads and calls it, and the hook's settings file.

Each check reads one thing and says what it saw; the fixes are the lines the admin guide
(docs/admin/install.md) prescribes.
"""

from __future__ import annotations

from pathlib import Path

from plugin.doctor.check import FAIL, OK, WARN, Check
from plugin.doctor.conf_files import HOOK, MODULE, SUBMIT_CONF, SlurmConf, read_submit_conf
from plugin.doctor.shipped import sha256_of, shipped_file
from plugin.doctor.site_script import MODULE_NAME, read_site_script
from plugin.errors import printable

__all__ = ["accounting_flags", "hook_module", "hook_script", "job_submit_plugins", "submit_conf"]

RECONFIGURE = "then run `scontrol reconfigure`"
GUIDE = "docs/admin/install.md, Composing the hook with yours"


def job_submit_plugins(conf: SlurmConf) -> Check:
    """slurm.conf loads the Lua job_submit plugin (``JobSubmitPlugins=lua``)."""
    plugins = conf.values("JobSubmitPlugins")
    shown = ",".join(plugins) or "(not set)"
    if "lua" in plugins or "job_submit/lua" in plugins:
        return Check("job_submit_plugins", OK, f"JobSubmitPlugins={shown} in {conf.path}")
    wanted = ",".join([*plugins, "lua"])
    return Check(
        "job_submit_plugins",
        FAIL,
        f"JobSubmitPlugins={shown} in {conf.path}: slurmctld never runs job_submit.lua, so no "
        "job is held",
        f"set `JobSubmitPlugins={wanted}` in {conf.path}, {RECONFIGURE}",
    )


def accounting_flags(conf: SlurmConf) -> Check:
    """Accounting goes to slurmdbd and keeps job comments (the learner reads both)."""
    storage = conf.get("AccountingStorageType") or "(not set)"
    flags = conf.values("AccountingStoreFlags")
    problems = []
    fixes = []
    if storage.lower() != "accounting_storage/slurmdbd":
        problems.append(
            f"AccountingStorageType={storage}: the learner reads finished jobs from slurmdbd"
        )
        fixes.append("`AccountingStorageType=accounting_storage/slurmdbd`")
    if "job_comment" not in flags:
        problems.append(
            f"AccountingStoreFlags={','.join(flags) or '(not set)'}: sacct loses the app tags"
        )
        fixes.append(f"`AccountingStoreFlags={','.join([*flags, 'job_comment'])}`")
    if not problems:
        return Check(
            "accounting_flags",
            OK,
            f"AccountingStorageType={storage}, AccountingStoreFlags={','.join(flags)}",
        )
    return Check(
        "accounting_flags",
        FAIL,
        "; ".join(problems) + f" ({conf.path})",
        f"set {' and '.join(fixes)} in {conf.path}, {RECONFIGURE}",
    )


def hook_module(directory: Path) -> Check:
    """adaptalloc_submit.lua beside slurm.conf is byte for byte this version's module."""
    installed = directory / MODULE
    ours = shipped_file(f"slurm/{MODULE}")
    if ours is None:
        return Check(
            "hook_module",
            WARN,
            f"this adaptalloc has no copy of {MODULE} to compare with",
            f"reinstall adaptalloc (its wheel carries share/adaptalloc/slurm/{MODULE})",
        )
    install = (
        f"`install -m 644 {ours} {installed} && touch {directory / HOOK}` (or `adaptalloc "
        f"install-files --slurm-dir {directory}`)"
    )
    try:
        theirs = sha256_of(installed)
    except FileNotFoundError:
        return Check("hook_module", FAIL, f"{installed} does not exist", install)
    except OSError as exc:
        return Check(
            "hook_module", FAIL, f"{installed} is unreadable: {exc.strerror or exc}", install
        )
    wanted = sha256_of(ours)
    if theirs != wanted:
        return Check(
            "hook_module",
            FAIL,
            f"{installed} (sha256 {theirs[:12]}…) is not this version's {MODULE} "
            f"(sha256 {wanted[:12]}…, {ours})",
            install,
        )
    return Check("hook_module", OK, f"{installed} is this version's (sha256 {wanted[:12]}…)")


def hook_script(directory: Path) -> Check:
    """job_submit.lua beside slurm.conf loads the module and calls it from both functions;
    warn while the module is newer than the script (slurmctld loads the module again only
    when the script's mtime changes)."""
    script = directory / HOOK
    example = shipped_file(f"slurm/{HOOK}")
    guide = f"the lines marked adaptalloc in {example or 'the example job_submit.lua'} ({GUIDE})"
    try:
        text = script.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return Check(
            "hook_script",
            FAIL,
            f"{script} does not exist: slurmctld runs no job_submit script",
            f"`install -m 644 {example or 'share/adaptalloc/slurm/job_submit.lua'} {script}` "
            "(the example: adaptalloc's hook and nothing "
            f"else), {RECONFIGURE}",
        )
    except OSError as exc:
        return Check(
            "hook_script",
            FAIL,
            f"{script} is unreadable: {exc.strerror or exc}",
            f"`chmod 644 {script}`",
        )
    missing = read_site_script(text).missing()
    if missing:
        return Check(
            "hook_script",
            FAIL,
            f"{script} lacks {'; '.join(missing)}: slurmctld never runs adaptalloc's hook",
            f"add to {script} {guide}",
        )
    module = directory / MODULE
    try:
        stale = module.stat().st_mtime > script.stat().st_mtime
    except OSError:
        stale = False  # hook_module says what is wrong with the module
    if stale:
        return Check(
            "hook_script",
            WARN,
            f"{module} is newer than {script}: slurmctld may still run the module it loaded "
            "before (it loads job_submit.lua and its modules again only when the script's "
            "mtime changes)",
            f"`touch {script}`",
        )
    return Check(
        "hook_script", OK, f"{script} loads {MODULE_NAME} and calls its job_submit and job_modify"
    )


def submit_conf(directory: Path, state_dir: Path) -> Check:
    """adaptalloc_submit.conf exists and its state_dir is the daemon's."""
    path = directory / SUBMIT_CONF
    template = shipped_file("local/adaptalloc_submit.conf.in")
    example = f" (template: {template})" if template is not None else ""
    try:
        _, settings = read_submit_conf(directory)
    except OSError as exc:
        return Check(
            "submit_conf",
            FAIL,
            f"{path} is unreadable: {exc.strerror or exc}; the hook then holds nothing",
            f"`printf 'state_dir = {state_dir}\\nheartbeat_max_age = 15\\npartitions = *\\n' > "
            f"{path} && chmod 644 {path}`{example}",
        )
    configured = settings.get("state_dir", "")
    max_age = settings.get("heartbeat_max_age", "")
    if not configured:
        return Check(
            "submit_conf",
            FAIL,
            f"{path} sets no state_dir; the hook then holds nothing",
            f"add `state_dir = {state_dir}` to {path}",
        )
    if not max_age.isdigit():
        return Check(
            "submit_conf",
            FAIL,
            f"{path}: heartbeat_max_age = {printable(max_age) or '(not set)'} is not a whole "
            "number of seconds; the hook then holds nothing",
            f"set `heartbeat_max_age = 15` in {path}",
        )
    if not Path(configured).is_absolute():
        return Check(
            "submit_conf",
            FAIL,
            f"{path}: state_dir = {printable(configured)} is relative: slurmctld resolves it "
            "against its own working directory, not the daemon's",
            f"set `state_dir = {state_dir.absolute()}` in {path}",
        )
    if _same_dir(Path(configured), state_dir):
        return Check(
            "submit_conf",
            OK,
            f"{path}: state_dir = {printable(configured)} is the daemon's, "
            f"heartbeat_max_age = {max_age} s",
        )
    return Check(
        "submit_conf",
        FAIL,
        f"{path}: state_dir = {printable(configured)}, but the daemon's is {state_dir}: the hook "
        "reads another heartbeat than the daemon writes",
        f"set `state_dir = {state_dir}` in {path} (or the daemon's [daemon] state_dir to "
        f"{printable(configured)})",
    )


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b
