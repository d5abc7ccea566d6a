"""The packages: ``python -m build`` gives a wheel and an sdist carrying every non-Python
piece and the license; the wheel installed into a fresh venv outside the checkout runs
``predict`` and the demo's ``decide`` (against the testbed's Redis), ``install-files`` puts
the pieces in place, the libslurm binding builds into that install and loads, and its
``doctor`` recognises the testbed's hook module and script as its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from .test_daemon import learn_curve
from .testbed import PROJECT_ROOT, LocalCluster, scratch_url

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LU_CSV = PROJECT_ROOT / "tests" / "data" / "scaling" / "lan_thesis_npb_lu_W.csv"
#: What a site needs besides Python, as installed under share/adaptalloc/ (deploy/ paths).
DATA_FILES = (
    "slurm/adaptalloc_submit.lua",
    "slurm/job_submit.lua",
    "local/adaptalloc_submit.conf.in",
    "systemd/adaptalloc.service",
    "systemd/adaptalloc-orphans.service",
    "systemd/adaptalloc-orphans.timer",
    "adaptalloc.example.toml",
    "policy.example.toml",
    "grafana/adaptalloc.json",
    "prometheus/adaptalloc-rules.yml",
)
PACKAGE_DATA = (
    "plugin/store/lua/add_observations.lua",
    "plugin/store/lua/record_decision.lua",
    "plugin/store/lua/save_curve.lua",
    "plugin/report/templates/app.html.j2",
    "plugin/report/templates/style.css",
)


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(  # noqa: S603 - fixed argument lists, no shell
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, f"{args[:3]} failed:\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(wheel, sdist) built by ``python -m build`` (sdist first, the wheel from it)."""
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--outdir", out, PROJECT_ROOT, cwd=out)
    (wheel,) = out.glob("adaptalloc-*.whl")
    (sdist,) = out.glob("adaptalloc-*.tar.gz")
    return wheel, sdist


def test_wheel_and_sdist_carry_the_non_python_pieces(built: tuple[Path, Path]) -> None:
    wheel, sdist = built
    names = set(zipfile.ZipFile(wheel).namelist())
    data = f"{wheel.name.split('-py3')[0]}.data/data/share/adaptalloc/"
    for piece in DATA_FILES:
        assert data + piece in names, piece
    assert set(PACKAGE_DATA) <= names
    # BSD-3-Clause asks for its text with every copy.
    license_text = (PROJECT_ROOT / "LICENSE").read_bytes()
    dist_info = f"{wheel.name.split('-py3')[0]}.dist-info"
    assert zipfile.ZipFile(wheel).read(f"{dist_info}/licenses/LICENSE") == license_text
    metadata = zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: BSD-3-Clause" in metadata.splitlines()
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    assert {f"deploy/{piece}" for piece in DATA_FILES} <= members
    assert set(PACKAGE_DATA) <= members
    assert "LICENSE" in members


def test_the_wheel_installed_elsewhere_decides_predicts_and_installs_files(
    built: tuple[Path, Path], local_cluster: LocalCluster, redis_client: Any, tmp_path: Path
) -> None:
    wheel, _ = built  # redis_client: the scratch database, flushed before and after
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    _run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel, cwd=tmp_path)
    adaptalloc = venv / "bin" / "adaptalloc"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ADAPTALLOC_CONFIG")}
    where = _run(
        venv / "bin" / "python",
        "-c",
        "import plugin; print(plugin.__file__)",
        cwd=tmp_path,
        env=env,
    )
    assert where.startswith(str(venv)), where  # the wheel's code, not the checkout's

    predictions = json.loads(
        _run(
            adaptalloc, "predict", LU_CSV, "--at", "4,8", "--format", "json", cwd=tmp_path, env=env
        )
    )["predictions"]
    assert [p["n"] for p in predictions] == [4, 8]
    assert all(p["runtime"] > 0 for p in predictions)

    # The demo's decision: an app whose curve the testbed's Redis holds.
    learn_curve(scratch_url(), "pkg-lu", "lan_thesis_npb_lu_W.csv")
    decision = json.loads(
        _run(
            adaptalloc,
            "decide",
            "--app",
            "pkg-lu",
            "--nodes",
            "1-8",
            "--idle",
            "8",
            "--time-limit",
            "60",
            "--redis-url",
            scratch_url(),
            "--format",
            "json",
            cwd=tmp_path,
            env=env,
        )
    )
    assert 1 <= decision["nodes"] <= 8
    assert decision["rule"]
    offline = json.loads(
        _run(
            adaptalloc,
            "decide",
            "--observations",
            LU_CSV,
            "--nodes",
            "1-8",
            "--idle",
            "8",
            "--time-limit",
            "60",
            "--format",
            "json",
            cwd=tmp_path,
            env=env,
        )
    )
    assert offline["nodes"] == decision["nodes"]

    root = tmp_path / "root"
    files = json.loads(
        _run(
            adaptalloc, "install-files", "--prefix", root, "--format", "json", cwd=tmp_path, env=env
        )
    )["files"]
    assert {f["action"] for f in files} == {"installed"}
    assert len(files) == len(DATA_FILES)  # one installed file per shipped one
    for name in ("job_submit.lua", "adaptalloc_submit.lua"):
        installed = (root / "etc" / "slurm" / name).read_bytes()
        assert installed == (PROJECT_ROOT / "deploy" / "slurm" / name).read_bytes()
    conf = (root / "etc" / "slurm" / "adaptalloc_submit.conf").read_text()
    assert "state_dir = /var/lib/adaptalloc\n" in conf
    units = root / "etc" / "systemd" / "system"
    unit = (units / "adaptalloc.service").read_text()
    assert f"ExecStart={adaptalloc} daemon" in unit
    execs = [line for line in unit.splitlines() if line.startswith("Exec")]
    assert len(execs) == 3
    assert not [line for line in execs if "/opt/adaptalloc" in line]
    orphans = (units / "adaptalloc-orphans.service").read_text()
    assert f"ExecStart={adaptalloc} daemon --state-dir /var/lib/adaptalloc --release-held" in (
        orphans
    )
    assert "OnUnitActiveSec=30" in (units / "adaptalloc-orphans.timer").read_text()

    # The libslurm binding, built on this machine into the wheel's install (as the admin
    # guide says), loads and matches the installed Slurm.
    python = venv / "bin" / "python"
    built_at = _run(python, "-m", "plugin.slurm.libslurm_build", cwd=tmp_path, env=env).strip()
    assert built_at.startswith(str(venv)), built_at
    version = _run(
        python,
        "-c",
        "from plugin.slurm.libslurm_backend import probe_binding; print(probe_binding())",
        cwd=tmp_path,
        env=env,
    )
    assert version.strip() == "(22, 5)", version

    # The installed doctor compares the testbed's hook with the wheel's copy.
    report = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [
            str(adaptalloc),
            "doctor",
            "--no-probe",
            "--format",
            "json",
            "--slurm-conf",
            str(local_cluster.slurm_conf),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    checks = {c["name"]: c for c in json.loads(report.stdout)["checks"]}
    assert checks["hook_module"]["status"] == "ok", checks["hook_module"]
    assert "is this version's" in checks["hook_module"]["detail"]
    assert checks["hook_script"]["status"] == "ok", checks["hook_script"]
    assert checks["slurm_backend"]["status"] == "ok", checks["slurm_backend"]
