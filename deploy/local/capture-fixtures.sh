#!/usr/bin/env bash
# Regenerate tests/data/slurm/: real outputs of squeue/sinfo/scontrol/sacct from the
# local testbed, one file per scenario, for fast unit tests of the parsers.
# Brings the testbed up first (up.sh is a no-op when it is already running).
# See tests/data/slurm/README.md for what each file shows.

SCRIPT_NAME=capture-fixtures.sh
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<USAGE
usage: deploy/local/capture-fixtures.sh [--state-dir DIR] [--out DIR]

Submits a few small jobs to the local testbed and writes what Slurm shows about them
to DIR (default: tests/data/slurm). Takes about a minute.
USAGE
}

parse_common_args "$@"
OUT_DIR="$PROJECT_ROOT/tests/data/slurm"
set -- "${REST_ARGS[@]+"${REST_ARGS[@]}"}"
while (($#)); do
    case "$1" in
        --out) OUT_DIR="${2:?--out needs a directory}"; shift 2 ;;
        --out=*) OUT_DIR="${1#--out=}"; shift ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done
mkdir -p "$OUT_DIR"

"$DEPLOY_LOCAL_DIR/up.sh" --state-dir "$STATE_DIR" >/dev/null
# shellcheck disable=SC1090,SC1091
source "$ENV_FILE"
umask 022
cd /tmp || exit 1

JOBS=()
cleanup() { ((${#JOBS[@]} == 0)) || scancel "${JOBS[@]}" 2>/dev/null || true; }
trap cleanup EXIT

submit() { # submit NAME SBATCH-ARGS... -> prints the job id
    local name="$1"
    shift
    sbatch --parsable --chdir=/tmp --output=/dev/null --job-name="capture-$name" "$@" | cut -d';' -f1
}

# squeue --json on 22.05 ignores --jobs/--states and lists every job slurmctld
# still remembers (finished ones for MinJobAge): keep only the scenario's jobs.
keep_jobs() { # keep_jobs ID... < json > json
    python3 -c '
import json, sys
keep = {int(a) for a in sys.argv[1:]}
data = json.load(sys.stdin)
data["jobs"] = [j for j in data["jobs"] if j["job_id"] in keep]
json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
print()
' "$@"
}

job_state() { scontrol show job -o "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
wait_state() { # wait_state ID STATE
    local id="$1" want="$2" deadline=$((SECONDS + WAIT_TIMEOUT))
    until [[ "$(job_state "$id")" == "$want" ]]; do
        ((SECONDS < deadline)) || die "job $id never reached $want (it is $(job_state "$id")); see $LOG_DIR/slurmctld.log"
        sleep 0.5
    done
}

log "waiting for every node to be idle"
wait_for "all nodes idle (cancel running jobs first)" "$LOG_DIR/slurmctld.log" nodes_all_idle
sinfo --json >"$OUT_DIR/sinfo_idle.json"

# A held moldable job: what the daemon will find after job_submit.lua held it.
pending=$(submit pending-moldable --hold --nodes=2-4 --time=30 --comment=adaptalloc-capture --wrap 'sleep 1')
JOBS+=("$pending")
squeue --json | keep_jobs "$pending" >"$OUT_DIR/squeue_pending_moldable.json"
scontrol show job "$pending" >"$OUT_DIR/scontrol_show_job_pending.txt"
scontrol show job -o "$pending" >"$OUT_DIR/scontrol_show_job_pending_oneline.txt"

# The same job after the daemon's resize (pinned to 3 nodes, 10 minutes), still held.
scontrol update JobId="$pending" NumNodes=3-3 TimeLimit=10
scontrol show job "$pending" >"$OUT_DIR/scontrol_show_job_pending_resized.txt"

# A moldable job running on the nodes Slurm gave it.
running=$(submit running-moldable --nodes=2-4 --time=5 --wrap 'sleep 60')
JOBS+=("$running")
wait_state "$running" RUNNING
squeue --json | keep_jobs "$running" >"$OUT_DIR/squeue_running_moldable.json"
scontrol show job "$running" >"$OUT_DIR/scontrol_show_job_running.txt"
sinfo --json >"$OUT_DIR/sinfo_partly_allocated.json"

# Finished jobs for sacct: completed (moldable, and the resized one), failed,
# cancelled while pending, cancelled while running.
scontrol release "$pending"
completed=$(submit completed-moldable --nodes=2-4 --time=5 --wrap 'sleep 2')
failed=$(submit failed --nodes=1 --time=5 --wrap 'sleep 1; exit 3')
cancelled=$(submit cancelled-pending --hold --nodes=2-4 --wrap 'sleep 1')
JOBS+=("$completed" "$failed" "$cancelled")
scancel "$cancelled"
wait_state "$pending" COMPLETED
wait_state "$completed" COMPLETED
wait_state "$failed" FAILED
scancel "$running"
wait_state "$running" CANCELLED

ids="$pending,$completed,$failed,$cancelled,$running"
# slurmdbd lags a little: wait until sacct shows every final state and node count.
sacct_ready() {
    local lines
    lines="$(sacct -n -P -X -o JobID,State,AllocNodes --jobs="$ids" 2>/dev/null)" || return 1
    grep -qx "$pending|COMPLETED|3" <<<"$lines" &&
        grep -qE "^$completed\|COMPLETED\|[234]$" <<<"$lines" &&
        grep -qx "$failed|FAILED|1" <<<"$lines" &&
        grep -qE "^$cancelled\|CANCELLED( by [0-9]+)?\|0$" <<<"$lines" &&
        grep -qE "^$running\|CANCELLED( by [0-9]+)?\|[234]$" <<<"$lines"
}
wait_for "sacct to record the finished jobs" "$LOG_DIR/slurmdbd.log" sacct_ready
sacct --json --jobs="$ids" >"$OUT_DIR/sacct_completed.json"
sacct -P -o JobID,JobName,State,ExitCode,AllocNodes,NNodes,Elapsed,Timelimit,Submit,Start,End,NodeList \
    --jobs="$ids" >"$OUT_DIR/sacct_completed.txt"
squeue --json | keep_jobs "$pending" "$completed" "$failed" "$cancelled" "$running" \
    >"$OUT_DIR/squeue_finished.json"
JOBS=()

log "captured into $OUT_DIR (jobs $ids):"
for f in "$OUT_DIR"/*; do printf '  %s\n' "${f##*/}"; done
