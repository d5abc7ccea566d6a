#!/usr/bin/env bash
# Print a short table of the testbed's components and whether each is up; exit
# non-zero when anything is down.

SCRIPT_NAME=status.sh
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<USAGE
usage: deploy/local/status.sh [--state-dir DIR]

Shows, for each component of the testbed under DIR (default: \$ADAPTALLOC_STATE_DIR
or <project>/.local), its pid, whether it answers, and its log file. Exits 0 when
everything is up, 1 otherwise.
USAGE
}

parse_common_args "$@"
((${#REST_ARGS[@]} == 0)) || die "unknown argument: ${REST_ARGS[0]} (see --help)"

down=0
row() { printf '%-18s %-6s %-8s %s\n' "$@"; }
row COMPONENT STATE PID DETAIL
slurmctld_up() { timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; }

node_states="$(timeout 10 sinfo -h -N -p debug -o '%N %T' 2>/dev/null || true)"
for comp in $(components); do
    pid="-"
    state=down
    detail="$(log_file_of "$comp")"
    if pid="$(running_pid "$comp")"; then
        state=up
        case "$comp" in
            munged) munge_ok || { state=broken; detail="pid alive but munge/unmunge fails; $detail"; } ;;
            mariadb) mariadb_ping || { state=broken; detail="pid alive but no answer on $MARIADB_SOCKET; $detail"; } ;;
            slurmdbd) sacctmgr_ok || { state=broken; detail="pid alive but sacctmgr gets no answer; $detail"; } ;;
            slurmctld) slurmctld_up || { state=broken; detail="pid alive but scontrol ping fails; $detail"; } ;;
            slurmd:*)
                node_state="$(awk -v n="${comp#slurmd:}" '$1 == n {print $2}' <<<"$node_states")"
                detail="${node_state:-unknown to slurmctld}"
                [[ "$node_state" =~ ^(idle|mixed|allocated|completing|planned)$ ]] || state=broken
                ;;
            redis) redis_ping || { state=broken; detail="pid alive but PING with the password fails; $detail"; } ;;
        esac
    else
        pid="-"
    fi
    [[ "$state" == up ]] || down=1
    row "$comp" "$state" "$pid" "$detail"
done
# The daemon is optional: "not started" is fine, a dead pid file or a stale heartbeat is not.
dpf="$(pid_file_of "$DAEMON_COMPONENT")"
if pid="$(running_pid "$DAEMON_COMPONENT")"; then
    if heartbeat_fresh; then
        row "$DAEMON_COMPONENT" up "$pid" "$(log_file_of "$DAEMON_COMPONENT")"
    else
        down=1
        row "$DAEMON_COMPONENT" broken "$pid" "no fresh heartbeat (jobs are not held); $(log_file_of "$DAEMON_COMPONENT")"
    fi
elif [[ -e "$dpf" ]]; then
    down=1
    row "$DAEMON_COMPONENT" down - "stale pid file; $(log_file_of "$DAEMON_COMPONENT")"
else
    row "$DAEMON_COMPONENT" off - "not started (up.sh --with-daemon)"
fi
echo "state dir: $STATE_DIR (ports: slurmctld $SLURMCTLD_PORT, slurmdbd $SLURMDBD_PORT, mariadb $MARIADB_PORT, redis $REDIS_PORT, slurmd $((SLURMD_BASE_PORT + 1))-$((SLURMD_BASE_PORT + NODE_COUNT)))"
if ((down)); then
    echo "something is down: deploy/local/up.sh starts what is missing"
    exit 1
fi
