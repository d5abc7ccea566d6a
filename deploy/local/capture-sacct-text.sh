#!/usr/bin/env bash
# Capture tests/data/slurm/sacct_text_hostile.{txt,sep,json}: the text query of the sacct
# fallback (plugin/slurm/sacct_text.py, its own arguments and a fresh nonce separator) and
# `sacct --json` of the same finished jobs, some with hostile names, comments, wckeys, an
# admin comment and a work directory holding '|', quotes, newlines and nonce-like text.
# Jobs are submitted as the testbed's unprivileged user; root adds the admin comment.
# See tests/data/slurm/README.md.

SCRIPT_NAME=capture-sacct-text.sh
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

parse_common_args "$@"
OUT_DIR="$PROJECT_ROOT/tests/data/slurm"
"$DEPLOY_LOCAL_DIR/up.sh" --state-dir "$STATE_DIR" >/dev/null
# shellcheck disable=SC1090,SC1091
source "$ENV_FILE"
umask 022
USER_NAME="${ADAPTALLOC_TEST_USER:-aatest}"
WORK=$(mktemp -d /tmp/adaptalloc-capture.XXXXXX)
chmod 755 "$WORK"
HOSTILE_DIR="$WORK/dir|with"$'\n'"newline ~0123456789ab~"
mkdir -p "$HOSTILE_DIR"
chown "$USER_NAME" "$WORK" "$HOSTILE_DIR"
JOBS=()
cleanup() {
    ((${#JOBS[@]} == 0)) || scancel "${JOBS[@]}" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

submit() { # submit NAME SBATCH-ARGS... -> the job id; as the unprivileged user
    local name="$1"
    shift
    runuser -u "$USER_NAME" -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable \
        --chdir="$WORK" --output=/dev/null --job-name="$name" "$@" | cut -d';' -f1
}

# Application steps: the largest is named "batch" (the name rule skips it, see sacct_text.py),
# one fails, the job completes.
steps=$(submit capture-steps --nodes=2 --ntasks=4 --time=5 \
    --wrap 'srun -n 4 -J batch true; srun -n 3 true; srun -n 2 false; true')
hostile=$(submit $'two\nlines|pipe ~0123456789ab~ "q"' --nodes=1 --time=5 \
    --comment=$'c|d\n"e" \'f\' ~0123456789ab~\n5\n6' --wckey=$'w|k\nx' --wrap 'srun -n 1 true')
forged=$(submit $'1\n1' --nodes=1 --time=5 --comment='|' --wrap 'sleep 1')
workdir=$(runuser -u "$USER_NAME" -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable \
    --chdir="$HOSTILE_DIR" --output=/dev/null --job-name=capture-workdir --time=5 \
    --wrap 'sleep 1' | cut -d';' -f1)
failed=$(submit capture-failed --nodes=1 --time=5 --wrap 'sleep 1; exit 3')
admin=$(submit capture-admin-comment --hold --nodes=1-2 --time=5 --wrap 'sleep 1')
scontrol update JobId="$admin" AdminComment=$'adm|in\nline ~0123456789ab~'
scontrol release "$admin"
cancelled=$(submit capture-cancelled-pending --hold --nodes=2-4 --wrap 'sleep 1')
scancel "$cancelled"
JOBS+=("$steps" "$hostile" "$forged" "$workdir" "$failed" "$admin" "$cancelled")
ids=$(IFS=,; echo "${JOBS[*]}")

# Every job final in sacct with its node count (slurmdbd lags a little).
sacct_ready() {
    local lines
    lines="$(sacct -n -P -X -a -o JobIDRaw,State,AllocNodes --jobs="$ids" 2>/dev/null)" || return 1
    (($(grep -cE '\|(COMPLETED|FAILED)\|[1-9]$|\|CANCELLED by [0-9]+\|0$' <<<"$lines") == ${#JOBS[@]}))
}
wait_for "sacct to record the finished jobs" "$LOG_DIR/slurmdbd.log" sacct_ready
sleep 2 # the steps' records

sep=$(cd "$PROJECT_ROOT" && "$(venv_python)" -c 'from plugin.slurm.pending import new_separator; print(new_separator())')
mapfile -t text_args < <(cd "$PROJECT_ROOT" && "$(venv_python)" -c '
import sys
from plugin.slurm.sacct_text import sacct_text_args
print("\n".join(sacct_text_args(sys.argv[1])))' "$sep")
printf '%s\n' "$sep" >"$OUT_DIR/sacct_text_hostile.sep"
sacct "${text_args[@]}" --allusers --jobs="$ids" >"$OUT_DIR/sacct_text_hostile.txt"
sacct --json --allusers --jobs="$ids" >"$OUT_DIR/sacct_text_hostile.json"
JOBS=()
log "captured jobs $ids into $OUT_DIR/sacct_text_hostile.{txt,sep,json}"
