#!/usr/bin/env bash
# Set up adaptalloc's Python side on a Debian machine: the Debian packages Python needs,
# a virtualenv (.venv in the project root, or $ADAPTALLOC_VENV) and adaptalloc installed
# in it, editable, with its dev extra. Idempotent: a second run only checks.

SCRIPT_NAME=setup.sh
# shellcheck source=local/lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/local/lib.sh"

VENV="${ADAPTALLOC_VENV:-$PROJECT_ROOT/.venv}"
STAMP="$VENV/.adaptalloc-installed"

# prometheus (server and promtool): tests/integration/test_dashboard.py scrapes the testbed's
# daemon with it and evaluates the Grafana panels' queries and the alert rules.
# redis-sentinel: deploy/local/sentinel.sh's opt-in Sentinel set (tests/integration/test_ha_sentinel.py).
# redis-server: the unit tests of the daemon's lease start a private one, so that the unit
# suite runs after this script alone (deploy/local/up.sh needs it too).
ensure_debian_packages "$PROJECT_ROOT/.local/apt-python.log" python3 python3-venv python3-pip prometheus redis-sentinel redis-server

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    die "adaptalloc needs Python 3.11 or newer; python3 is $(python3 --version 2>&1)"

if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating virtualenv $VENV"
    python3 -m venv "$VENV"
fi

# Reinstall only when pyproject.toml changed since the last successful install.
wanted="$(sha256sum "$PROJECT_ROOT/pyproject.toml" | cut -d' ' -f1)"
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$wanted" ]]; then
    log "installing adaptalloc and its dev tools into $VENV (pip)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "${PROJECT_ROOT}[dev]" ||
        die "pip install failed"
    echo "$wanted" >"$STAMP"
fi
# The daemon's libslurm binding: each held job's resize, limit, comment and release in one
# slurmctld RPC instead of three scontrol calls (plugin/slurm/libslurm_build.py). Optional:
# without Slurm's headers or a compiler it is not built and the daemon writes with scontrol.
mkdir -p "$PROJECT_ROOT/.local"
if (ensure_debian_packages "$PROJECT_ROOT/.local/apt-libslurm.log" libslurm-dev gcc python3-dev) &&
    "$VENV/bin/python" -m plugin.slurm.libslurm_build >"$PROJECT_ROOT/.local/libslurm-build.log" 2>&1; then
    log "libslurm binding built: the daemon sends one update per held job"
else
    log "libslurm binding not built (see .local/libslurm-build.log): the daemon writes with scontrol"
fi
log "ready: $VENV/bin/adaptalloc"
