# shellcheck shell=bash
# shellcheck disable=SC2034  # the variables here are used by the scripts that source this
# Shared by up.sh, down.sh, status.sh and capture-fixtures.sh: where things live
# under the state directory, the port plan, and pid-file helpers.
#
# Everything the testbed starts lives under STATE_DIR (default: <project>/.local,
# override with ADAPTALLOC_STATE_DIR or --state-dir DIR): configs, the munge key
# and socket, the MariaDB datadir and socket, spool dirs, logs and pid files.

set -o errexit -o nounset -o pipefail

DEPLOY_LOCAL_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT_ROOT="$(cd "$DEPLOY_LOCAL_DIR/../.." && pwd)"

# --- settings (environment overrides) ------------------------------------------
CLUSTER_NAME="${ADAPTALLOC_CLUSTER_NAME:-adaptalloc}"
NODE_COUNT="${ADAPTALLOC_NODES:-8}"
NODE_CPUS="${ADAPTALLOC_NODE_CPUS:-4}"
NODE_MEMORY_MB="${ADAPTALLOC_NODE_MEMORY_MB:-1000}"
# Ports: these defaults plus PORT_OFFSET. The offset is 0 unless the defaults were
# taken (e.g. by a testbed of another checkout) when this state dir was first
# brought up; up.sh then picks 100, 200, … and keeps it in STATE_DIR/ports.
# ADAPTALLOC_PORT_OFFSET=N forces one.
DEFAULT_SLURMCTLD_PORT=16817
DEFAULT_SLURMDBD_PORT=16819
DEFAULT_SLURMD_BASE_PORT=17000 # nodeK listens on BASE+K
DEFAULT_MARIADB_PORT=13306
DEFAULT_REDIS_PORT=16379
WAIT_TIMEOUT="${ADAPTALLOC_WAIT_TIMEOUT:-180}" # seconds per readiness wait

# parse_common_args "$@": accepts --state-dir DIR / --state-dir=DIR and -h/--help;
# anything else is left in REST_ARGS for the caller.
REST_ARGS=()
parse_common_args() {
    local state_dir="${ADAPTALLOC_STATE_DIR:-}"
    while (($#)); do
        case "$1" in
            --state-dir) state_dir="${2:?--state-dir needs a directory}"; shift 2 ;;
            --state-dir=*) state_dir="${1#--state-dir=}"; shift ;;
            -h|--help) usage; exit 0 ;;
            *) REST_ARGS+=("$1"); shift ;;
        esac
    done
    [[ -n "$state_dir" ]] || state_dir="$PROJECT_ROOT/.local"
    mkdir -p "$state_dir" 2>/dev/null || true
    STATE_DIR="$(cd "$state_dir" 2>/dev/null && pwd)" || die "cannot use state directory '$state_dir'"
    set_paths
}

set_paths() {
    ETC_DIR="$STATE_DIR/etc"
    RUN_DIR="$STATE_DIR/run"
    LOG_DIR="$STATE_DIR/log"
    SECRET_DIR="$STATE_DIR/secrets"
    MUNGE_DIR="$STATE_DIR/munge"
    MARIADB_DIR="$STATE_DIR/mariadb"
    REDIS_DIR="$STATE_DIR/redis"
    SLURM_STATE_DIR="$STATE_DIR/slurm/state"
    SLURM_SPOOL_DIR="$STATE_DIR/slurm/spool"

    SLURM_CONF_FILE="$ETC_DIR/slurm.conf"
    SLURMDBD_CONF_FILE="$ETC_DIR/slurmdbd.conf"
    REDIS_CONF_FILE="$ETC_DIR/redis.conf"
    MUNGE_KEY="$MUNGE_DIR/munge.key"
    MUNGE_SOCKET="$MUNGE_DIR/munge.socket.2"
    MARIADB_SOCKET="$MARIADB_DIR/mariadb.sock"
    MARIADB_DATADIR="$MARIADB_DIR/data"
    ENV_FILE="$STATE_DIR/env"

    export SLURM_CONF="$SLURM_CONF_FILE"

    local offset="${ADAPTALLOC_PORT_OFFSET:-}"
    if [[ -z "$offset" && -s "$STATE_DIR/ports" ]]; then
        offset="$(sed -n 's/^PORT_OFFSET=\([0-9][0-9]*\)$/\1/p' "$STATE_DIR/ports")"
    fi
    set_ports "${offset:-0}"
}

# set_ports OFFSET: every port of the testbed, shifted by OFFSET.
set_ports() {
    [[ "$1" =~ ^[0-9]+$ ]] || die "port offset must be a number, got '$1'"
    PORT_OFFSET="$1"
    SLURMCTLD_PORT=$((DEFAULT_SLURMCTLD_PORT + PORT_OFFSET))
    SLURMDBD_PORT=$((DEFAULT_SLURMDBD_PORT + PORT_OFFSET))
    SLURMD_BASE_PORT=$((DEFAULT_SLURMD_BASE_PORT + PORT_OFFSET))
    MARIADB_PORT=$((DEFAULT_MARIADB_PORT + PORT_OFFSET))
    REDIS_PORT=$((DEFAULT_REDIS_PORT + PORT_OFFSET))
}

testbed_ports() {
    local k
    echo "$SLURMCTLD_PORT" "$SLURMDBD_PORT" "$MARIADB_PORT" "$REDIS_PORT"
    for ((k = 1; k <= NODE_COUNT; k++)); do echo $((SLURMD_BASE_PORT + k)); done
}

# port_in_use PORT: something accepts TCP connections on 127.0.0.1:PORT
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# --- messages -----------------------------------------------------------------
log() { printf '[%s] %s\n' "${SCRIPT_NAME:-adaptalloc}" "$*"; }
warn() { printf '[%s] WARNING: %s\n' "${SCRIPT_NAME:-adaptalloc}" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "${SCRIPT_NAME:-adaptalloc}" "$*" >&2; exit 1; }

# --- components and their pid files ------------------------------------------
# Each component: a name, a pid file, the program name its /proc/PID/comm or
# argv[0] must show, and a string its command line must contain.
# APT_LOCK_TIMEOUT_S: how long an install waits for apt's and dpkg's locks. A fresh Debian
# cloud image holds them for minutes after boot (apt-daily, unattended-upgrades).
APT_LOCK_TIMEOUT_S="${ADAPTALLOC_APT_LOCK_TIMEOUT:-900}"
APT_LOCK_RETRY_S=5
# Where units are enabled (the tests point these at a scratch tree).
SYSTEMD_ETC_DIR=/etc/systemd/system
RC_ETC_DIR=/etc

# apt_get_waiting DEADLINE APT-GET-ARGS...: apt-get (as given, root already arranged by the
# caller's prefix in AS_ROOT) that waits for the package locks until DEADLINE ($SECONDS).
# DPkg::Lock::Timeout makes apt itself wait for dpkg's locks; apt-get update's lists lock and
# the download cache's lock ignore it (apt 2.6 fails at once there), so a failure naming a
# lock is retried every APT_LOCK_RETRY_S (5 s) until the deadline. Output goes to stdout/stderr.
apt_get_waiting() {
    local deadline="$1"
    shift
    local out rc remaining
    while :; do
        remaining=$((deadline - SECONDS))
        ((remaining > 0)) || remaining=1
        rc=0
        out="$("${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get \
            -o "DPkg::Lock::Timeout=$remaining" "$@" 2>&1)" || rc=$?
        printf '%s\n' "$out"
        ((rc != 0)) || return 0
        if grep -qE "Could not get lock|Unable to (lock|acquire)" <<<"$out" && ((SECONDS < deadline)); then
            echo "[apt_get_waiting] a package lock is held by another process; retrying in ${APT_LOCK_RETRY_S} s"
            sleep "$APT_LOCK_RETRY_S"
            continue
        fi
        return "$rc"
    done
}

# enabled_units: every unit enabled on this host, one per line: the symlinks in
# /etc/systemd/system's .wants/.requires folders and its aliases (what `systemctl enable`
# writes), and the sysv start links of /etc/rc?.d (what update-rc.d writes).
enabled_units() {
    {
        # A folder that does not exist has nothing enabled (find's failure is not an error).
        find "$SYSTEMD_ETC_DIR" -mindepth 1 -maxdepth 2 -type l -printf '%P\n' 2>/dev/null || true
        local rc
        for rc in 0 1 2 3 4 5 S; do
            find "$RC_ETC_DIR/rc$rc.d" -maxdepth 1 -type l -name 'S*' -printf 'sysv:%f\n' \
                2>/dev/null || true
        done
    } | sort -u
}

# disable_new_units BEFORE: disable what the install enabled since the snapshot BEFORE (a file
# of enabled_units). Debian's postinst scripts enable a package's services for the next boot
# (mariadb, redis, munge, slurmctld, slurmd, slurmdbd, prometheus, redis-sentinel, ...); the
# testbed starts its own processes, so after a reboot none of them should run. Units enabled
# before the install (an admin's own) are left as they were. `systemctl disable` works without
# a running systemd; update-rc.d covers hosts without systemd.
disable_new_units() {
    local before="$1" entry unit
    local -a units=() sysv=()
    while read -r entry; do
        [[ -n "$entry" ]] || continue
        case "$entry" in
            sysv:*) unit="${entry#sysv:S[0-9][0-9]}"; sysv+=("$unit") ;;
            */*) units+=("${entry##*/}") ;;
            *) ;; # an alias (redis.service): disabling the unit it names removes it
        esac
    done < <(comm -13 "$before" <(enabled_units))
    if command -v systemctl >/dev/null 2>&1; then
        for unit in $(printf '%s\n' "${units[@]+"${units[@]}"}" | sort -u); do
            "${AS_ROOT[@]}" systemctl disable --no-reload "$unit" >/dev/null 2>&1 || true
        done
    fi
    for unit in "${sysv[@]+"${sysv[@]}"}"; do
        [[ -x "$RC_ETC_DIR/init.d/$unit" ]] || continue
        "${AS_ROOT[@]}" update-rc.d "$unit" disable >/dev/null 2>&1 || true
    done
    local left
    left="$(comm -13 "$before" <(enabled_units) | tr '\n' ' ')"
    if [[ -n "${left// /}" ]]; then
        warn "still enabled for the next boot after the install: $left"
    elif ((${#units[@]} + ${#sysv[@]})); then
        log "left disabled for the next boot: $(printf '%s\n' "${units[@]+"${units[@]}"}" "${sysv[@]+"${sysv[@]}"}" | sed 's/\.[a-z]*$//' | sort -u | tr '\n' ' ')"
    fi
}

# ensure_debian_packages LOG PKG...: install whichever of the packages are missing, with
# apt-get, as root or through passwordless sudo (a clear message otherwise). Their services
# are kept from starting during the install (a temporary policy-rc.d) and left disabled for
# the next boot (disable_new_units): the testbed starts its own. Waits for apt's locks
# (ADAPTALLOC_APT_LOCK_TIMEOUT, 900 s). apt's output goes to LOG.
ensure_debian_packages() {
    local apt_log="$1"
    shift
    if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
        die "this is not a Debian-like system (no dpkg/apt-get); install $* yourself, or use Debian 12."
    fi
    local p status
    local -a missing=()
    for p in "$@"; do
        status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)"
        [[ "$status" == ii* ]] || missing+=("$p")
    done
    ((${#missing[@]} == 0)) && return 0
    [[ "${ADAPTALLOC_SKIP_INSTALL:-0}" == 1 ]] && die "packages missing (${missing[*]}) and ADAPTALLOC_SKIP_INSTALL=1"

    AS_ROOT=()
    if ((EUID != 0)); then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            AS_ROOT=(sudo -n)
        else
            die "packages missing: ${missing[*]}. Installing them needs root: run as root, or give this user passwordless sudo, or run: sudo apt-get install ${missing[*]}"
        fi
    fi
    local started=$SECONDS
    local deadline=$((SECONDS + APT_LOCK_TIMEOUT_S))
    log "installing ${missing[*]} (apt-get, services neither started nor enabled)"
    local policy=/usr/sbin/policy-rc.d made_policy=0
    if [[ ! -e "$policy" ]]; then
        "${AS_ROOT[@]}" sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
        made_policy=1
    fi
    mkdir -p "$(dirname "$apt_log")"
    local units_before
    units_before="$(mktemp)"
    enabled_units >"$units_before"
    local rc=0
    {
        apt_get_waiting "$deadline" update -q &&
            apt_get_waiting "$deadline" install -y -q --no-install-recommends "${missing[@]}"
    } >"$apt_log" 2>&1 || rc=$?
    ((made_policy)) && "${AS_ROOT[@]}" rm -f "$policy"
    disable_new_units "$units_before"
    rm -f "$units_before"
    ((rc == 0)) || { tail -n 20 "$apt_log" >&2; die "apt-get failed (exit $rc); full log: $apt_log"; }
    log "packages installed in $((SECONDS - started))s"
}

node_names() {
    local k
    for ((k = 1; k <= NODE_COUNT; k++)); do printf 'node%d\n' "$k"; done
}

components() {
    printf '%s\n' munged mariadb slurmdbd slurmctld
    node_names | sed 's/^/slurmd:/'
    printf '%s\n' redis
}

# The adaptalloc daemon is optional (up.sh --with-daemon): not in components(), so a
# testbed without it is still "up"; these helpers treat it like the others.
DAEMON_COMPONENT=adaptalloc-daemon
DEFAULT_METRICS_PORT=9405
daemon_state_dir() { echo "$STATE_DIR/adaptalloc"; }
venv_python() { echo "${ADAPTALLOC_VENV:-$PROJECT_ROOT/.venv}/bin/python"; }

pid_file_of() {
    case "$1" in
        adaptalloc-daemon) echo "$RUN_DIR/adaptalloc-daemon.pid" ;;
        munged) echo "$RUN_DIR/munged.pid" ;;
        mariadb) echo "$RUN_DIR/mariadb.pid" ;;
        slurmdbd) echo "$RUN_DIR/slurmdbd.pid" ;;
        slurmctld) echo "$RUN_DIR/slurmctld.pid" ;;
        slurmd:*) echo "$RUN_DIR/slurmd.${1#slurmd:}.pid" ;;
        redis) echo "$RUN_DIR/redis.pid" ;;
        *) die "unknown component $1" ;;
    esac
}

log_file_of() {
    case "$1" in
        adaptalloc-daemon) echo "$LOG_DIR/adaptalloc-daemon.log" ;;
        munged) echo "$LOG_DIR/munged.log" ;;
        mariadb) echo "$LOG_DIR/mariadb.log" ;;
        slurmdbd) echo "$LOG_DIR/slurmdbd.log" ;;
        slurmctld) echo "$LOG_DIR/slurmctld.log" ;;
        slurmd:*) echo "$LOG_DIR/slurmd.${1#slurmd:}.log" ;;
        redis) echo "$LOG_DIR/redis.log" ;;
        *) die "unknown component $1" ;;
    esac
}

# program name and a command-line fragment that identify the process we started
expected_cmd_of() {
    case "$1" in
        adaptalloc-daemon) echo "python*|daemon --state-dir $(daemon_state_dir) " ;;
        munged) echo "munged|$MUNGE_SOCKET" ;;
        mariadb) echo "mariadbd|$MARIADB_DATADIR" ;;
        slurmdbd) echo "slurmdbd|slurmdbd" ;;
        slurmctld) echo "slurmctld|$SLURM_CONF_FILE" ;;
        slurmd:*) echo "slurmd|-N ${1#slurmd:} " ;;
        redis) echo "redis-server|127.0.0.1:$REDIS_PORT" ;;
        *) die "unknown component $1" ;;
    esac
}

# pid_matches PID COMPONENT: true when PID is alive and its command line is the
# one we started for COMPONENT (guards against a recycled pid).
pid_matches() {
    local pid="$1" comp="$2" spec prog fragment cmdline argv0
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r "/proc/$pid/cmdline" ]] || return 1
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
    [[ -n "$cmdline" ]] || return 1
    spec="$(expected_cmd_of "$comp")"
    prog="${spec%%|*}"
    fragment="${spec#*|}"
    argv0="${cmdline%% *}"
    # shellcheck disable=SC2053  # prog may be a glob (python*)
    [[ "$(basename -- "$argv0")" == $prog ]] || return 1
    [[ "$cmdline " == *"$fragment"* ]] || return 1
    # slurmdbd is started without arguments: tie it to this state dir through
    # its environment instead (SLURM_CONF points into STATE_DIR).
    if [[ "$comp" == slurmdbd ]]; then
        { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$SLURM_CONF_FILE" || return 1
    fi
    return 0
}

# running_pid COMPONENT: prints the pid and succeeds when the component's pid
# file names a live process of ours.
running_pid() {
    local comp="$1" pf pid
    pf="$(pid_file_of "$comp")"
    [[ -s "$pf" ]] || return 1
    pid="$(tr -dc '0-9' <"$pf")"
    pid_matches "$pid" "$comp" || return 1
    echo "$pid"
}

# --- readiness checks ---------------------------------------------------------
redis_password() { cat "$SECRET_DIR/redis.password"; }

redis_ping() {
    [[ -s "$SECRET_DIR/redis.password" ]] || return 1
    local out
    out="$(REDISCLI_AUTH="$(redis_password)" timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" || return 1
    [[ "$out" == PONG ]]
}

mariadb_ping() {
    timeout 5 mariadb-admin --no-defaults --socket="$MARIADB_SOCKET" -u root ping >/dev/null 2>&1
}

munge_ok() {
    timeout 5 munge --socket="$MUNGE_SOCKET" -n 2>/dev/null |
        timeout 5 unmunge --socket="$MUNGE_SOCKET" >/dev/null 2>&1
}

sacctmgr_ok() {
    timeout 10 sacctmgr -n -P list cluster format=cluster >/dev/null 2>&1
}

# prints "<idle> <total>" for the nodes of this testbed (partition debug holds all)
node_idle_counts() {
    local lines idle total
    lines="$(timeout 10 sinfo -h -N -p debug -o '%N %T' 2>/dev/null)" || { echo "0 0"; return 1; }
    total="$(grep -c . <<<"$lines" || true)"
    idle="$(grep -cE ' idle$' <<<"$lines" || true)"
    echo "$idle $total"
}

nodes_all_idle() {
    local counts
    counts="$(node_idle_counts)" || return 1
    [[ "$counts" == "$NODE_COUNT $NODE_COUNT" ]]
}

# every node registered and usable: idle, or running jobs (not down, drained,
# not responding "*" or unknown)
nodes_all_ready() {
    local lines total ready
    lines="$(timeout 10 sinfo -h -N -p debug -o '%N %T' 2>/dev/null)" || return 1
    total="$(grep -c . <<<"$lines" || true)"
    ready="$(grep -cE ' (idle|mixed|allocated|completing|planned)$' <<<"$lines" || true)"
    [[ "$total" == "$NODE_COUNT" && "$ready" == "$NODE_COUNT" ]]
}

# wait_for DESCRIPTION LOGFILE COMMAND...: polls COMMAND until it succeeds or
# WAIT_TIMEOUT passes; on timeout dies pointing at LOGFILE.
wait_for() {
    local what="$1" logfile="$2"
    shift 2
    local deadline=$((SECONDS + WAIT_TIMEOUT))
    until "$@"; do
        if ((SECONDS >= deadline)); then
            {
                echo "[${SCRIPT_NAME:-adaptalloc}] ERROR: timed out after ${WAIT_TIMEOUT}s waiting for $what."
                echo "  Look at: $logfile"
                if [[ -r "$logfile" ]]; then
                    echo "  Last lines of it:"
                    tail -n 15 "$logfile" | sed 's/^/    /'
                fi
            } >&2
            exit 1
        fi
        sleep 0.5
    done
}

# heartbeat_fresh: the daemon's heartbeat is whole seconds, at most 15 s old and not from the
# future (what the hook accepts)
heartbeat_fresh() {
    local hb stamp age
    hb="$(daemon_state_dir)/heartbeat"
    [[ -s "$hb" ]] || return 1
    stamp="$(tr -d '[:space:]' <"$hb")"
    [[ "$stamp" =~ ^[0-9]{1,12}$ ]] || return 1
    age=$(($(date +%s) - 10#$stamp))
    ((age >= 0 && age <= 15))
}

# stop_component COMPONENT GRACE_S [NOTE]: SIGTERM the process of its pid file, SIGKILL it
# when it is still there after GRACE_S seconds (NOTE says what that costs). Returns 0 when it
# was not running (a stale pid file is removed).
stop_component() {
    local comp="$1" grace="$2" note="${3:-}" pid pf
    pf="$(pid_file_of "$comp")"
    if ! pid="$(running_pid "$comp")"; then
        [[ -e "$pf" ]] && { log "$comp: not running (removing stale $pf)"; rm -f "$pf"; }
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + grace))
    while pid_matches "$pid" "$comp"; do
        if ((SECONDS >= deadline)); then
            warn "$comp (pid $pid) ignored SIGTERM for ${grace}s; sending SIGKILL${note:+ ($note)}"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.5
            break
        fi
        sleep 0.2
    done
    rm -f "$pf"
    log "$comp: stopped (pid $pid)"
}

# stop_daemon: SIGTERM the adaptalloc daemon (it finishes the jobs in hand, releases what is
# held, removes its heartbeat), SIGKILL after 60 s; the heartbeat goes either way, so that
# job_submit.lua stops holding jobs at once.
stop_daemon() {
    stop_component adaptalloc-daemon 60 "held jobs are released at its next start"
    rm -f "$(daemon_state_dir)/heartbeat"
}
