#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: set up Python (deploy/setup.sh), the
# static checks (deploy/lint.sh: ruff, ruff format, mypy strict, shellcheck), then pytest,
# whose session fixture brings the local Slurm + Redis testbed up (deploy/local/up.sh) for
# the integration tests. Extra arguments go to pytest, and then the static checks are skipped
# (a developer iterating on a few tests); without arguments both must pass. It always passes
# --slow: the unit tests marked slow (long property runs, process boundaries), which a bare
# `pytest tests/unit` skips to stay the fast feedback loop, run here (tests/slow_gate.py).

SCRIPT_NAME=test.sh
# shellcheck source=local/lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/local/lib.sh"

"$DEPLOY_LOCAL_DIR/../setup.sh"
# The report's HTML tests open the pages in a real headless browser.
ensure_debian_packages "$PROJECT_ROOT/.local/apt-test.log" chromium
cd "$PROJECT_ROOT"
lint_status=0
if (($# == 0)); then
    "$DEPLOY_LOCAL_DIR/../lint.sh" || lint_status=$?
fi
"${ADAPTALLOC_VENV:-$PROJECT_ROOT/.venv}/bin/python" -m pytest --slow "$@" || exit $?
((lint_status == 0)) || die "the tests passed but the static checks failed (deploy/lint.sh above)"
