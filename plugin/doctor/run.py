"""All of the doctor's checks, in the order an admin fixes them: the files Slurm reads, the
state directory, the daemon's Slurm privileges and clock, the node types the models read, the
services, then how well the curves predicted the jobs they decided (live accuracy)."""

from __future__ import annotations

from collections.abc import Callable

from plugin.doctor import (
    access,
    accuracy,
    backend,
    install,
    limits,
    node_types,
    probe,
    services,
    sizer_scope,
)
from plugin.doctor.check import FAIL, OK, Check
from plugin.doctor.conf_files import SlurmConf, parse_slurm_conf, read_submit_conf
from plugin.doctor.settings import DoctorSettings
from plugin.errors import printable
from plugin.slurm.writer import CliSlurm

__all__ = ["DEFAULT_MAX_AGE", "run_checks"]

#: The hook's heartbeat_max_age when its settings file cannot tell (the template's value).
DEFAULT_MAX_AGE = 15


def _guarded(name: str, check: Callable[[], Check]) -> Check:
    """A check that raised is reported as failed, with what it raised (never a traceback)."""
    try:
        return check()
    except Exception as exc:  # a doctor reports; one broken check must not hide the others
        return _failed(name, exc)


def _failed(name: str, exc: Exception) -> Check:
    """The failed check `name` whose code raised `exc`."""
    return Check(
        name,
        FAIL,
        f"the check could not run: {type(exc).__name__}: {printable(str(exc))}",
        "run `adaptalloc --debug doctor` and report it",
    )


def _slurm_conf(settings: DoctorSettings) -> tuple[Check, SlurmConf | None]:
    path = settings.slurm_conf
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return Check(
            "slurm_conf",
            FAIL,
            f"{path} is unreadable: {exc.strerror or exc}",
            "give the doctor slurmctld's slurm.conf (--slurm-conf, or $SLURM_CONF)",
        ), None
    return Check("slurm_conf", OK, f"read {path}"), parse_slurm_conf(path, text)


def _max_age(conf: SlurmConf | None) -> int:
    if conf is None:
        return DEFAULT_MAX_AGE
    try:
        _, values = read_submit_conf(conf.directory)
    except OSError:
        return DEFAULT_MAX_AGE
    text = values.get("heartbeat_max_age", "")
    return int(text) if text.isdigit() else DEFAULT_MAX_AGE


def run_checks(settings: DoctorSettings, slurm: CliSlurm) -> list[Check]:
    """Every check's outcome, in order (see the module docstring)."""
    first, conf = _slurm_conf(settings)
    checks = [first]
    if conf is not None:
        checks += [
            _guarded("job_submit_plugins", lambda: install.job_submit_plugins(conf)),
            _guarded("accounting_flags", lambda: install.accounting_flags(conf)),
            _guarded("hook_module", lambda: install.hook_module(conf.directory)),
            _guarded("hook_script", lambda: install.hook_script(conf.directory)),
            _guarded(
                "submit_conf", lambda: install.submit_conf(conf.directory, settings.state_dir)
            ),
            _guarded(
                "state_dir_access",
                lambda: access.state_dir_access(settings.state_dir, conf.slurm_user),
            ),
        ]
    max_age = _max_age(conf)
    checks.append(_guarded("heartbeat", lambda: access.heartbeat(settings.state_dir, max_age)))
    result = probe.run_probe(slurm) if settings.probe else None
    checks += [
        _guarded("daemon_privileges", lambda: probe.daemon_privileges(slurm, result)),
        _guarded(
            "enforced_limits",
            lambda: limits.enforced_limits(
                slurm,
                settings.config.daemon.sizing_user,
                settings.config.daemon.resize_with_enforced_limits,
            ),
        ),
        _guarded(
            sizer_scope.NAME,
            lambda: sizer_scope.sizer_scope(slurm.run, settings.config.daemon.sizing_user),
        ),
        _guarded("clock_offset", lambda: probe.clock_offset(result, max_age)),
        _guarded("slurm_backend", lambda: backend.slurm_backend(settings.config, slurm)),
        _guarded(
            node_types.NAME,
            lambda: node_types.node_types_check(settings.config, slurm.partitions),
        ),
        _guarded("accounting_answers", lambda: services.accounting_answers(slurm)),
        _guarded("redis", lambda: services.redis_answers(settings)),
        _guarded("metrics", lambda: services.metrics_endpoint(settings)),
    ]
    try:
        checks += accuracy.accuracy_checks(settings)
    except Exception as exc:  # as _guarded: one broken check must not hide the others
        checks.append(_failed(accuracy.COVERAGE, exc))
    return checks
