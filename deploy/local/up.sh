#!/usr/bin/env bash
# Bring up adaptalloc's local testbed: munge, MariaDB + slurmdbd, slurmctld,
# N slurmd (virtual nodes on localhost) and a password-protected Redis, all under
# one state directory. Installs missing Debian packages first.
#
# Idempotent: when everything is already up and healthy it says so and exits 0;
# when only some of it is up it starts the rest. See deploy/local/README.md.

SCRIPT_NAME=up.sh
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat <<USAGE
usage: deploy/local/up.sh [--state-dir DIR] [--with-daemon]

Installs what is missing (slurm-wlm, slurmctld, slurmd, slurmdbd, munge,
mariadb-server, redis-server) from Debian's packages, then starts the testbed under
DIR (default: \$ADAPTALLOC_STATE_DIR or <project>/.local) and writes DIR/env and
DIR/adaptalloc.toml (the daemon's state directory and metrics port; DIR/env exports it as
ADAPTALLOC_CONFIG).
With --with-daemon it also starts \`adaptalloc daemon\` in the background against the
testbed (pid file DIR/run/adaptalloc-daemon.pid, log DIR/log/adaptalloc-daemon.log,
metrics on port 9405 + the port offset, or \$ADAPTALLOC_METRICS_PORT; needs the venv of
deploy/setup.sh). down.sh stops it.

Environment: ADAPTALLOC_STATE_DIR, ADAPTALLOC_NODES (8), ADAPTALLOC_NODE_CPUS (4),
ADAPTALLOC_WAIT_TIMEOUT (180 s per readiness wait), ADAPTALLOC_PORT_OFFSET (chosen
on first start: 0 unless the default ports are taken), ADAPTALLOC_SKIP_INSTALL=1,
ADAPTALLOC_ACCOUNTING_ENFORCE (slurm.conf's AccountingStorageEnforce, e.g. limits,qos;
default: not set; a running slurmctld must be restarted for a change to apply),
ADAPTALLOC_SIZING_USER (aasizer: the daemon's sizing user, a coordinator of the
testbed's user account aausers only, ADAPTALLOC_SIZED_ACCOUNT in DIR/env).
USAGE
}

parse_common_args "$@"
WITH_DAEMON=0
for arg in "${REST_ARGS[@]+"${REST_ARGS[@]}"}"; do
    case "$arg" in
        --with-daemon) WITH_DAEMON=1 ;;
        *) die "unknown argument: $arg (see --help)" ;;
    esac
done

T_START=$SECONDS
STARTED=()

# --- 1. packages --------------------------------------------------------------
PACKAGES=(slurm-wlm slurmctld slurmd slurm-client slurmdbd munge mariadb-server mariadb-client redis-server redis-tools)

ensure_debian_packages "$STATE_DIR/apt.log" "${PACKAGES[@]}"
T_INSTALLED=$SECONDS

# --- 2. directories, secrets, configs ------------------------------------------
umask 077
mkdir -p "$ETC_DIR" "$RUN_DIR" "$LOG_DIR" "$SECRET_DIR" "$MUNGE_DIR" "$MARIADB_DIR" \
    "$REDIS_DIR" "$SLURM_STATE_DIR" "$SLURM_SPOOL_DIR"
chmod 700 "$SECRET_DIR"
# munged wants its socket directory searchable by all (the key inside stays 600)
chmod 755 "$MUNGE_DIR"
# slurmstepd runs a job's script from the spool as the job's user: traversable, not listable
chmod 711 "$(dirname "$SLURM_SPOOL_DIR")" "$SLURM_SPOOL_DIR"
# The munge and MariaDB sockets must fit in sockaddr_un (108 bytes).
((${#MUNGE_SOCKET} < 100)) || die "state dir path too long for a unix socket: $MUNGE_SOCKET (use --state-dir with a shorter path)"

# Which daemons were already running before configs are (re)written: a config
# change only needs a restart for those.
PRE_RUNNING=()
for comp in $(components); do
    running_pid "$comp" >/dev/null && PRE_RUNNING+=("$comp")
done

# Ports: on the first start of this state dir, move every port by 100, 200, … when
# something else (a testbed of another checkout, say) already holds the defaults.
if [[ ! -s "$STATE_DIR/ports" && -z "${ADAPTALLOC_PORT_OFFSET:-}" ]] && ((${#PRE_RUNNING[@]} == 0)); then
    for offset in 0 100 200 300 400 500 600 700 800 900 ""; do
        [[ -n "$offset" ]] || die "the testbed's ports (16817, 16819, 13306, 16379, 17001…, and the same +100 … +900) are all in use"
        set_ports "$offset"
        busy=0
        for port in $(testbed_ports); do
            if port_in_use "$port"; then busy=1; break; fi
        done
        ((busy)) || break
    done
    ((PORT_OFFSET == 0)) || log "default ports are in use (another testbed?): this one uses them +$PORT_OFFSET (Redis on $REDIS_PORT)"
fi
echo "PORT_OFFSET=$PORT_OFFSET" >"$STATE_DIR/ports"

new_secret() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
[[ -s "$SECRET_DIR/redis.password" ]] || new_secret >"$SECRET_DIR/redis.password"
[[ -s "$SECRET_DIR/mariadb-slurm.password" ]] || new_secret >"$SECRET_DIR/mariadb-slurm.password"
if [[ ! -s "$MUNGE_KEY" ]]; then
    head -c 1024 /dev/urandom >"$MUNGE_KEY.tmp" && mv "$MUNGE_KEY.tmp" "$MUNGE_KEY"
fi
chmod 600 "$MUNGE_KEY" "$SECRET_DIR"/*.password

# Two node types: node1..node(N/2) "std", the rest "big" (partition big); at least 2 nodes.
((NODE_COUNT >= 2)) || die "ADAPTALLOC_NODES must be at least 2 (two node types), got $NODE_COUNT"
STD_LAST=$((NODE_COUNT / 2))
BIG_FIRST=$((STD_LAST + 1))

ACCOUNTING_ENFORCE="${ADAPTALLOC_ACCOUNTING_ENFORCE:-}"
[[ "$ACCOUNTING_ENFORCE" =~ ^[a-z,]*$ ]] ||
    die "ADAPTALLOC_ACCOUNTING_ENFORCE must be AccountingStorageEnforce words (a-z, commas)"
if [[ -n "$ACCOUNTING_ENFORCE" ]]; then
    ENFORCE_LINE="AccountingStorageEnforce=$ACCOUNTING_ENFORCE"
else
    ENFORCE_LINE="# AccountingStorageEnforce: not set"
fi

declare -A VARS=(
    [ACCOUNTING_ENFORCE_LINE]="$ENFORCE_LINE"
    [STATE_DIR]="$STATE_DIR"
    [CLUSTER_NAME]="$CLUSTER_NAME"
    [SLURM_USER]="$(id -un)"
    [SLURMCTLD_PORT]="$SLURMCTLD_PORT"
    [SLURMDBD_PORT]="$SLURMDBD_PORT"
    [SLURMD_PORTS_STD]="$((SLURMD_BASE_PORT + 1))-$((SLURMD_BASE_PORT + STD_LAST))"
    [SLURMD_PORTS_BIG]="$((SLURMD_BASE_PORT + BIG_FIRST))-$((SLURMD_BASE_PORT + NODE_COUNT))"
    [STD_LAST]="$STD_LAST"
    [BIG_FIRST]="$BIG_FIRST"
    [NODE_COUNT]="$NODE_COUNT"
    [NODE_CPUS]="$NODE_CPUS"
    [NODE_MEMORY_MB]="$NODE_MEMORY_MB"
    [MUNGE_SOCKET]="$MUNGE_SOCKET"
    [MARIADB_PORT]="$MARIADB_PORT"
    [MARIADB_SLURM_PASSWORD]="$(cat "$SECRET_DIR/mariadb-slurm.password")"
    [REDIS_PORT]="$REDIS_PORT"
    [REDIS_PASSWORD]="$(redis_password)"
)

# ensure_port_free PORT COMPONENT: fail fast, naming the port, rather than waiting
# for a daemon that cannot bind.
ensure_port_free() {
    port_in_use "$1" || return 0
    die "cannot start $2: port $1 on 127.0.0.1 is already taken by another process; stop it, or use another state dir and ADAPTALLOC_PORT_OFFSET=N (see deploy/local/README.md)"
}

CONFIG_CHANGED=()
# render TEMPLATE OUTPUT: fills @KEY@ from VARS; rewrites OUTPUT only when it changes.
render() {
    local template="$1" out="$2" text key
    text="$(<"$template")"
    for key in "${!VARS[@]}"; do text="${text//@$key@/${VARS[$key]}}"; done
    ! [[ "$text" =~ @[A-Z_]+@ ]] || die "unfilled placeholder left in $template"
    if [[ ! -f "$out" ]] || [[ "$(<"$out")" != "$text" ]]; then
        [[ -f "$out" ]] && CONFIG_CHANGED+=("$(basename "$out")")
        printf '%s\n' "$text" >"$out.tmp"
        chmod 600 "$out.tmp"
        mv "$out.tmp" "$out"
    fi
}
render "$DEPLOY_LOCAL_DIR/slurm.conf.in" "$SLURM_CONF_FILE"
chmod 644 "$SLURM_CONF_FILE"
render "$DEPLOY_LOCAL_DIR/slurmdbd.conf.in" "$SLURMDBD_CONF_FILE"
render "$DEPLOY_LOCAL_DIR/redis.conf.in" "$REDIS_CONF_FILE"
# Slurm loads job_submit.lua from the directory of slurm.conf: the composed form a site
# uses, the example script that loads the module adaptalloc_submit.lua beside it. Link the
# repo's copies so edits take effect: slurmctld re-reads the script (and with it the module)
# when the script's mtime changes, so the script is touched when the module is newer. The
# module's settings sit beside it; the daemon's state directory holds the heartbeat and
# spool it reads.
ln -sfn "$PROJECT_ROOT/deploy/slurm/job_submit.lua" "$ETC_DIR/job_submit.lua"
ln -sfn "$PROJECT_ROOT/deploy/slurm/adaptalloc_submit.lua" "$ETC_DIR/adaptalloc_submit.lua"
if [[ "$ETC_DIR/adaptalloc_submit.lua" -nt "$ETC_DIR/job_submit.lua" ]]; then
    touch "$PROJECT_ROOT/deploy/slurm/job_submit.lua"
fi
render "$DEPLOY_LOCAL_DIR/adaptalloc_submit.conf.in" "$ETC_DIR/adaptalloc_submit.conf"
chmod 644 "$ETC_DIR/adaptalloc_submit.conf"
mkdir -p "$STATE_DIR/adaptalloc"
chmod 755 "$STATE_DIR" "$ETC_DIR"

# already_running COMPONENT: true when our pid file names a live process of ours;
# otherwise removes a stale pid file so the component can be started afresh.
already_running() {
    local comp="$1"
    if running_pid "$comp" >/dev/null; then
        return 0
    fi
    rm -f "$(pid_file_of "$comp")"
    return 1
}

# --- 3. munge -----------------------------------------------------------------
if ! already_running munged; then
    log "starting munged"
    munged --force --socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" \
        --pid-file="$(pid_file_of munged)" --log-file="$(log_file_of munged)" \
        --seed-file="$MUNGE_DIR/munged.seed" </dev/null >>"$LOG_DIR/munged.stdout" 2>&1 ||
        die "munged failed to start; see $(log_file_of munged) and $LOG_DIR/munged.stdout"
    STARTED+=(munged)
fi
wait_for "munge to encode/decode a credential" "$(log_file_of munged)" munge_ok

# --- 4. MariaDB with the Slurm accounting database -----------------------------
if ! already_running mariadb; then
    if [[ ! -d "$MARIADB_DATADIR/mysql" ]]; then
        log "initialising MariaDB datadir"
        rm -rf "$MARIADB_DATADIR"
        mariadb-install-db --no-defaults --datadir="$MARIADB_DATADIR" --user="$(id -un)" \
            --auth-root-authentication-method=socket --skip-test-db \
            >>"$LOG_DIR/mariadb-install.log" 2>&1 ||
            die "mariadb-install-db failed; see $LOG_DIR/mariadb-install.log"
    fi
    ensure_port_free "$MARIADB_PORT" mariadbd
    log "starting mariadbd (127.0.0.1:$MARIADB_PORT, socket $MARIADB_SOCKET)"
    setsid -f mariadbd --no-defaults --datadir="$MARIADB_DATADIR" --socket="$MARIADB_SOCKET" \
        --port="$MARIADB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
        --pid-file="$(pid_file_of mariadb)" --log-error="$(log_file_of mariadb)" \
        --user="$(id -un)" --innodb-buffer-pool-size=128M --innodb-log-file-size=64M \
        --innodb-lock-wait-timeout=900 --max-allowed-packet=16M \
        </dev/null >>"$LOG_DIR/mariadb.stdout" 2>&1
    STARTED+=(mariadb)
fi
wait_for "MariaDB to answer on $MARIADB_SOCKET" "$(log_file_of mariadb)" mariadb_ping
DB_PW="${VARS[MARIADB_SLURM_PASSWORD]}"
mariadb --no-defaults --socket="$MARIADB_SOCKET" -u root <<SQL >>"$LOG_DIR/mariadb-setup.log" 2>&1 || die "creating the Slurm database user failed; see $LOG_DIR/mariadb-setup.log"
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PW';
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PW';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PW';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PW';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
SQL

# --- 5. slurmdbd, and the cluster registered in it ----------------------------
if ! already_running slurmdbd; then
    ensure_port_free "$SLURMDBD_PORT" slurmdbd
    log "starting slurmdbd (port $SLURMDBD_PORT)"
    slurmdbd </dev/null >>"$LOG_DIR/slurmdbd.stdout" 2>&1 ||
        die "slurmdbd failed to start; see $(log_file_of slurmdbd)"
    STARTED+=(slurmdbd)
fi
wait_for "slurmdbd to answer sacctmgr" "$(log_file_of slurmdbd)" sacctmgr_ok
if ! sacctmgr -n -P list cluster format=cluster | grep -qxF "$CLUSTER_NAME"; then
    log "registering cluster '$CLUSTER_NAME' in the accounting database"
    sacctmgr -i add cluster "$CLUSTER_NAME" >>"$LOG_DIR/sacctmgr.log" 2>&1 ||
        die "sacctmgr add cluster failed; see $LOG_DIR/sacctmgr.log and $(log_file_of slurmdbd)"
fi

# --- 6. slurmctld and the slurmd of every virtual node --------------------------
if ! already_running slurmctld; then
    ensure_port_free "$SLURMCTLD_PORT" slurmctld
    log "starting slurmctld (port $SLURMCTLD_PORT)"
    slurmctld -f "$SLURM_CONF_FILE" </dev/null >>"$LOG_DIR/slurmctld.stdout" 2>&1 ||
        die "slurmctld failed to start; see $(log_file_of slurmctld)"
    STARTED+=(slurmctld)
fi
slurmctld_up() { timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; }
wait_for "slurmctld to answer scontrol ping" "$(log_file_of slurmctld)" slurmctld_up

for node in $(node_names); do
    if ! already_running "slurmd:$node"; then
        ensure_port_free "$((SLURMD_BASE_PORT + ${node#node}))" "slurmd -N $node"
        mkdir -p "$SLURM_SPOOL_DIR/slurmd.$node"
        slurmd -N "$node" -f "$SLURM_CONF_FILE" </dev/null >>"$LOG_DIR/slurmd.$node.stdout" 2>&1 ||
            die "slurmd -N $node failed to start; see $(log_file_of "slurmd:$node")"
        STARTED+=("slurmd:$node")
    fi
done
started_nodes="$(printf '%s\n' "${STARTED[@]+"${STARTED[@]}"}" | sed -n 's/^slurmd://p' | tr '\n' ' ')"
[[ -z "$started_nodes" ]] || log "started slurmd for: ${started_nodes% }"

# --- 7. Redis -------------------------------------------------------------------
if ! already_running redis; then
    ensure_port_free "$REDIS_PORT" redis-server
    log "starting redis-server (127.0.0.1:$REDIS_PORT)"
    redis-server "$REDIS_CONF_FILE" </dev/null >>"$LOG_DIR/redis.stdout" 2>&1 ||
        die "redis-server failed to start; see $(log_file_of redis)"
    STARTED+=(redis)
fi
wait_for "Redis to answer PING with the password" "$(log_file_of redis)" redis_ping

# --- 8. every node up ------------------------------------------------------------
# Idle on a fresh start; a running testbed may have jobs on its nodes, which is fine.
wait_for "all $NODE_COUNT nodes to be idle (or busy with jobs) in 'sinfo -N -p debug'" \
    "$LOG_DIR/slurmctld.log and $LOG_DIR/slurmd.node*.log" nodes_all_ready

# --- 9. a non-root user for the user-side tests ---------------------------------
# adaptalloc runs beside slurmctld as root and treats every job field as hostile: the tests
# submit as an ordinary Unix user to exercise that side (holds, releases, comments).
# A second one is the other user of the tests of whose runs size whose jobs.
TEST_USER="${ADAPTALLOC_TEST_USER:-aatest}"
OTHER_USER="${ADAPTALLOC_OTHER_USER:-aaother}"
for user in "$TEST_USER" "$OTHER_USER"; do
    if ! id -u "$user" >/dev/null 2>&1; then
        log "creating the unprivileged test user '$user'"
        useradd --create-home --shell /bin/bash "$user" ||
            die "useradd $user failed (up.sh needs root to create the test users)"
    fi
done

# The daemon's sizing user (docs/admin/sizing-user.md): a plain account that coordinates
# only the accounts whose jobs it resizes, so that Slurm checks the daemon's resizes like the
# user's own where it enforces limits. Here that is the testbed's user account aausers (root
# has an association in it, for the benchmarks' jobs); tests that make accounts of their own
# make it a coordinator of those too. Never a coordinator of root: that is every account,
# and a coordinator may lift limits, add users and coordinators and cancel jobs in its
# accounts. Only the tests that enforce limits give it to a daemon.
SIZING_USER="${ADAPTALLOC_SIZING_USER:-aasizer}"
SIZED_ACCOUNT=aausers
if ! id -u "$SIZING_USER" >/dev/null 2>&1; then
    log "creating the sizing user '$SIZING_USER'"
    useradd --system --no-create-home --shell /usr/sbin/nologin "$SIZING_USER" ||
        die "useradd $SIZING_USER failed (up.sh needs root to create the sizing user)"
fi
if ! sacctmgr -n -P show account "$SIZED_ACCOUNT" format=Account | grep -qxF "$SIZED_ACCOUNT"; then
    sacctmgr -i add account "$SIZED_ACCOUNT" "Description=the testbed's users" >>"$LOG_DIR/sacctmgr.log" 2>&1 ||
        die "sacctmgr could not add the account $SIZED_ACCOUNT; see $LOG_DIR/sacctmgr.log"
    sacctmgr -i add user root "account=$SIZED_ACCOUNT" >>"$LOG_DIR/sacctmgr.log" 2>&1 || true
fi
# A testbed made before the sizing user was narrowed: no longer a coordinator of root (first:
# Slurm lists a coordinator of root as one of every account under it).
coordinates() { sacctmgr -n -P show user "$SIZING_USER" withcoord format=Coordinators; }
if [[ ",$(coordinates)," == *",root,"* ]]; then
    sacctmgr -i delete coordinator account=root names="$SIZING_USER" >>"$LOG_DIR/sacctmgr.log" 2>&1 ||
        die "sacctmgr could not end $SIZING_USER's coordination of root; see $LOG_DIR/sacctmgr.log"
fi
if [[ ",$(coordinates)," != *",$SIZED_ACCOUNT,"* ]]; then
    sacctmgr -i add user "$SIZING_USER" "account=$SIZED_ACCOUNT" MaxSubmitJobs=0 >>"$LOG_DIR/sacctmgr.log" 2>&1 || true
    sacctmgr -i add coordinator "account=$SIZED_ACCOUNT" names="$SIZING_USER" >>"$LOG_DIR/sacctmgr.log" 2>&1 ||
        die "sacctmgr could not make $SIZING_USER a coordinator of $SIZED_ACCOUNT; see $LOG_DIR/sacctmgr.log"
fi

# --- 10. the adaptalloc config and the env file --------------------------------
# The testbed's adaptalloc.toml: the daemon's state directory and metrics port, what the
# daemon of --with-daemon runs with. The env file exports ADAPTALLOC_CONFIG, so every
# command of a shell that sources it (adaptalloc doctor among them) sees what the daemon sees.
METRICS_PORT="${ADAPTALLOC_METRICS_PORT:-$((DEFAULT_METRICS_PORT + PORT_OFFSET))}"
[[ "$METRICS_PORT" =~ ^[0-9]{1,5}$ ]] || die "ADAPTALLOC_METRICS_PORT must be a port number, got $METRICS_PORT"
CONFIG_FILE="$STATE_DIR/adaptalloc.toml"
tomlq() { local s="${1//\\/\\\\}"; printf '"%s"' "${s//\"/\\\"}"; }
{
    echo "# Written by deploy/local/up.sh: the testbed's adaptalloc configuration (ADAPTALLOC_CONFIG"
    echo "# in $ENV_FILE), the one up.sh --with-daemon starts the daemon with."
    echo "[daemon]"
    printf 'state_dir = %s\n' "$(tomlq "$(daemon_state_dir)")"
    printf 'metrics_port = %s\n' "$METRICS_PORT"
} >"$CONFIG_FILE.tmp"
chmod 644 "$CONFIG_FILE.tmp"
mv "$CONFIG_FILE.tmp" "$CONFIG_FILE"

shq() { local s="$1"; printf "'%s'" "${s//\'/\'\\\'\'}"; }
{
    echo "# Written by deploy/local/up.sh. Use: source $(shq "$ENV_FILE")"
    echo "# adaptalloc never reads it by itself: source it, or pass adaptalloc --env-file FILE."
    printf 'export SLURM_CONF=%s\n' "$(shq "$SLURM_CONF_FILE")"
    printf 'export REDIS_URL=%s\n' "$(shq "redis://:$(redis_password)@127.0.0.1:$REDIS_PORT/0")"
    printf 'export ADAPTALLOC_STATE_DIR=%s\n' "$(shq "$STATE_DIR")"
    printf 'export ADAPTALLOC_CONFIG=%s\n' "$(shq "$CONFIG_FILE")"
    printf 'export ADAPTALLOC_CLUSTER_NAME=%s\n' "$(shq "$CLUSTER_NAME")"
    printf 'export ADAPTALLOC_NODES=%s\n' "$(shq "$NODE_COUNT")"
    printf 'export ADAPTALLOC_REDIS_HOST=%s\n' "$(shq 127.0.0.1)"
    printf 'export ADAPTALLOC_REDIS_PORT=%s\n' "$(shq "$REDIS_PORT")"
    printf 'export ADAPTALLOC_REDIS_PASSWORD=%s\n' "$(shq "$(redis_password)")"
    printf 'export ADAPTALLOC_MUNGE_SOCKET=%s\n' "$(shq "$MUNGE_SOCKET")"
    printf 'export ADAPTALLOC_LOG_DIR=%s\n' "$(shq "$LOG_DIR")"
    printf 'export ADAPTALLOC_PORT_OFFSET=%s\n' "$(shq "$PORT_OFFSET")"
    printf 'export ADAPTALLOC_TEST_USER=%s\n' "$(shq "$TEST_USER")"
    printf 'export ADAPTALLOC_OTHER_USER=%s\n' "$(shq "$OTHER_USER")"
    printf 'export ADAPTALLOC_SIZING_USER=%s\n' "$(shq "$SIZING_USER")"
    printf 'export ADAPTALLOC_SIZED_ACCOUNT=%s\n' "$(shq "$SIZED_ACCOUNT")"
} >"$ENV_FILE.tmp"
chmod 600 "$ENV_FILE.tmp"
mv "$ENV_FILE.tmp" "$ENV_FILE"

# --- 11. the adaptalloc daemon (--with-daemon) ------------------------------------
if ((WITH_DAEMON)) && ! running_pid "$DAEMON_COMPONENT" >/dev/null; then
    PY="$(venv_python)"
    [[ -x "$PY" ]] || die "--with-daemon needs the project's venv ($PY): run deploy/setup.sh first"
    rm -f "$(pid_file_of "$DAEMON_COMPONENT")"
    if [[ "$METRICS_PORT" != 0 ]] && port_in_use "$METRICS_PORT"; then
        warn "metrics port $METRICS_PORT is taken; the daemon runs without a metrics endpoint (adaptalloc doctor will say so)"
        METRICS_PORT=0
    fi
    mkdir -p "$(daemon_state_dir)"
    log "starting adaptalloc daemon (state $(daemon_state_dir), metrics port $METRICS_PORT)"
    (
        # A config the caller exported (deploy/demo.sh's, with its policy) wins over the env
        # file's; the state directory and metrics port are given on the command line anyway.
        caller_config="${ADAPTALLOC_CONFIG:-}"
        set -a
        # shellcheck disable=SC1090  # written just above
        source "$ENV_FILE"
        set +a
        [[ -z "$caller_config" ]] || export ADAPTALLOC_CONFIG="$caller_config"
        cd "$PROJECT_ROOT"
        # The config (ADAPTALLOC_CONFIG, from the env file) names the state directory too; it
        # is repeated here because status.sh and down.sh know the daemon by it.
        exec setsid -f "$PY" -m plugin daemon --state-dir "$(daemon_state_dir)" \
            --pid-file "$(pid_file_of "$DAEMON_COMPONENT")" --metrics-port "$METRICS_PORT" \
            </dev/null >>"$(log_file_of "$DAEMON_COMPONENT")" 2>&1
    )
    STARTED+=("$DAEMON_COMPONENT")
    daemon_up() { running_pid "$DAEMON_COMPONENT" >/dev/null && heartbeat_fresh; }
    wait_for "the adaptalloc daemon's heartbeat" "$(log_file_of "$DAEMON_COMPONENT")" daemon_up
    log "adaptalloc daemon up (pid $(running_pid "$DAEMON_COMPONENT")); log: $(log_file_of "$DAEMON_COMPONENT")"
fi

if ((${#CONFIG_CHANGED[@]})) && ((${#PRE_RUNNING[@]})); then
    warn "configuration changed (${CONFIG_CHANGED[*]}) while some daemons were running; run deploy/local/down.sh && deploy/local/up.sh to apply it"
fi

T_END=$SECONDS
if ((${#STARTED[@]} == 0)); then
    log "already up and healthy: nothing started ($NODE_COUNT nodes idle, Redis and slurmdbd answer; $((T_END - T_START))s)"
else
    log "up: started ${#STARTED[@]} component(s) in $((T_END - T_INSTALLED))s (package install: $((T_INSTALLED - T_START))s); $NODE_COUNT nodes idle"
fi
log "env: source $ENV_FILE"
