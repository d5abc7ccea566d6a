#!/usr/bin/env bash
# Stop adaptalloc's local testbed: exactly the processes that up.sh started, found
# through the pid files under the state directory (each pid's command line is
# checked first, so a recycled pid is never killed). Nothing else is touched.
# State (configs, MariaDB data, Slurm state, Redis dump) stays for the next up.sh.

SCRIPT_NAME=down.sh
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<USAGE
usage: deploy/local/down.sh [--state-dir DIR] [--daemon-only]

Stops the testbed started by up.sh under DIR (default: \$ADAPTALLOC_STATE_DIR or
<project>/.local). Running jobs are cancelled first so no job step outlives its
slurmd; pending jobs stay in Slurm's saved state. The adaptalloc daemon (up.sh
--with-daemon) is stopped first: it releases the jobs it holds. --daemon-only stops just
the daemon.
USAGE
}

parse_common_args "$@"
DAEMON_ONLY=0
for arg in "${REST_ARGS[@]+"${REST_ARGS[@]}"}"; do
    case "$arg" in
        --daemon-only) DAEMON_ONLY=1 ;;
        *) die "unknown argument: $arg (see --help)" ;;
    esac
done
[[ -d "$RUN_DIR" ]] || { log "nothing to stop: no $RUN_DIR"; exit 0; }

# The daemon first, while Slurm still answers: it releases what it holds.
stop_daemon
((DAEMON_ONLY == 0)) || exit 0

# Cancel running jobs while slurmctld still answers, so their slurmstepd
# processes end with them instead of outliving the slurmd that started them.
if running_pid slurmctld >/dev/null && timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; then
    running_jobs="$(timeout 10 squeue -h -t RUNNING,COMPLETING -o '%i' 2>/dev/null || true)"
    if [[ -n "$running_jobs" ]]; then
        log "cancelling running jobs: $(tr '\n' ' ' <<<"$running_jobs")"
        # shellcheck disable=SC2086  # one job id per word
        timeout 10 scancel $running_jobs 2>/dev/null || true
        deadline=$((SECONDS + 40))
        while [[ -n "$(timeout 10 squeue -h -t RUNNING,COMPLETING -o '%i' 2>/dev/null || true)" ]] && ((SECONDS < deadline)); do
            sleep 0.5
        done
    fi
fi

for node in $(node_names); do stop_component "slurmd:$node" 30; done
# slurmd pid files of nodes beyond the current ADAPTALLOC_NODES (an earlier, larger testbed)
for pf in "$RUN_DIR"/slurmd.node*.pid; do
    [[ -e "$pf" ]] || continue
    node="${pf##*/slurmd.}"; node="${node%.pid}"
    stop_component "slurmd:$node" 30
done
stop_component slurmctld 30
stop_component slurmdbd 30
stop_component mariadb 30
stop_component redis 30
stop_component munged 30
log "down (state kept in $STATE_DIR)"
