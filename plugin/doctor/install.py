"""Checks of the files an install puts in place: slurm.conf's adaptalloc lines, the hook
(job_submit.lua, by checksum against this version's copy) and its settings file.

Each check reads one thing and says what it saw; the fixes are the lines the admin guide
(README.md) prescribes.
"""

from __future__ import annotations

from pathlib import Path

from plugin.doctor.check import FAIL, OK, WARN, Check
from plugin.doctor.conf_files import HOOK, SUBMIT_CONF, SlurmConf, read_submit_conf
from plugin.doctor.shipped import sha256_of, shipped_file
from plugin.errors import printable

__all__ = ["accounting_flags", "hook_file", "job_submit_plugins", "submit_conf"]

RECONFIGURE = "then run `scontrol reconfigure`"


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


def hook_file(directory: Path) -> Check:
    """job_submit.lua beside slurm.conf is byte for byte this version's copy."""
    installed = directory / HOOK
    ours = shipped_file(f"slurm/{HOOK}")
    if ours is None:
        return Check(
            "hook_installed",
            WARN,
            "this adaptalloc has no copy of job_submit.lua to compare with",
            "reinstall adaptalloc (its wheel carries share/adaptalloc/slurm/job_submit.lua)",
        )
    install = f"`install -m 644 {ours} {installed}`, {RECONFIGURE}"
    try:
        theirs = sha256_of(installed)
    except FileNotFoundError:
        return Check("hook_installed", FAIL, f"{installed} does not exist", install)
    except OSError as exc:
        return Check(
            "hook_installed", FAIL, f"{installed} is unreadable: {exc.strerror or exc}", install
        )
    wanted = sha256_of(ours)
    if theirs != wanted:
        return Check(
            "hook_installed",
            FAIL,
            f"{installed} (sha256 {theirs[:12]}…) is not this version's job_submit.lua "
            f"(sha256 {wanted[:12]}…, {ours})",
            install,
        )
    return Check("hook_installed", OK, f"{installed} is this version's (sha256 {wanted[:12]}…)")


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
            f"create {path} with `state_dir = {state_dir}`{example}, readable by SlurmUser",
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
