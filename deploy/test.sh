#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: set up Python (deploy/setup.sh), then
# pytest, whose session fixture brings the local Slurm + Redis testbed up
# (deploy/local/up.sh) for the integration tests. Extra arguments go to pytest.

SCRIPT_NAME=test.sh
# shellcheck source=local/lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/local/lib.sh"

"$DEPLOY_LOCAL_DIR/../setup.sh"
# The report's HTML tests open the pages in a real headless browser.
ensure_debian_packages "$PROJECT_ROOT/.local/apt-test.log" chromium
cd "$PROJECT_ROOT"
exec "${ADAPTALLOC_VENV:-$PROJECT_ROOT/.venv}/bin/python" -m pytest "$@"
