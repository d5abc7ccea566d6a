#!/usr/bin/env bash
# The main job, from a fresh Debian machine: set up Python (deploy/setup.sh), bring up the
# local Slurm + Redis testbed (deploy/local/up.sh), then run adaptalloc's predictor on the
# real strong-scaling curves bundled in tests/data/scaling: the fitted Downey curve of each,
# and ADEPT's predictions at sizes nobody measured.
#
# The daemon that resizes held jobs on the testbed is not built yet (tracker issue 7); this
# script grows into that end-to-end demo when it is.

SCRIPT_NAME=demo.sh
# shellcheck source=local/lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/local/lib.sh"

usage() {
    echo "usage: deploy/demo.sh [--state-dir DIR]   (see the comment at the top of this script)"
}
parse_common_args "$@"
((${#REST_ARGS[@]} == 0)) || die "unknown argument: ${REST_ARGS[0]} (see --help)"

"$DEPLOY_LOCAL_DIR/../setup.sh"
"$DEPLOY_LOCAL_DIR/up.sh" --state-dir "$STATE_DIR"
ADAPTALLOC="${ADAPTALLOC_VENV:-$PROJECT_ROOT/.venv}/bin/adaptalloc"
DATA="$PROJECT_ROOT/tests/data/scaling"

echo
echo "== The local cluster adaptalloc will size jobs on =="
# shellcheck disable=SC1091  # written by up.sh
source "$STATE_DIR/env"
sinfo --Format=partition,nodes,cpus,statecompact

for curve in lan_thesis_npb_lu_W gamer_fdm_wave_only hpc_assignment2_openmp; do
    echo
    echo "== $curve: the fitted curve =="
    "$ADAPTALLOC" fit "$DATA/$curve.csv"
done

echo
echo "== gamer_fdm_wave_only: measured on 1..28 nodes; ADEPT's predictions beyond =="
"$ADAPTALLOC" predict "$DATA/gamer_fdm_wave_only.csv" --at 32,48,64,96,128
