#!/usr/bin/env bash
# Opt-in: a Redis Sentinel set beside the testbed, for the failover tests
# (tests/integration/test_ha_sentinel.py): a master, one replica and one sentinel
# (quorum 1) on 127.0.0.1, password-protected with the testbed's Redis password, under
# STATE_DIR/sentinel. The testbed's own Redis is left alone (the other tests use it).
#
#   deploy/local/sentinel.sh up   [--state-dir DIR]   start it (idempotent), write DIR/sentinel/env
#   deploy/local/sentinel.sh down [--state-dir DIR]   stop it, keep nothing
#
# DIR/sentinel/env exports SENTINEL_URL (redis+sentinel://:PASSWORD@127.0.0.1:PORT/adaptalloc)
# and the three ports. Ports: the testbed's Redis port + 101 (master), + 102 (replica),
# + 103 (sentinel); which server is the master changes with each failover.

SCRIPT_NAME=sentinel.sh
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

parse_common_args "$@"
ACTION="${REST_ARGS[0]:-}"
SERVICE=adaptalloc
DIR="$STATE_DIR/sentinel"
FIRST_PORT=$((REDIS_PORT + 101))
SECOND_PORT=$((REDIS_PORT + 102))
SENTINEL_PORT=$((REDIS_PORT + 103))

pid_of() { cat "$DIR/$1.pid" 2>/dev/null || true; }
alive() { local pid; pid="$(pid_of "$1")"; [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; }

ping_port() {
    REDISCLI_AUTH="$2" redis-cli -h 127.0.0.1 -p "$1" --no-auth-warning ping 2>/dev/null | grep -q PONG
}

wait_ping() {
    local port="$1" password="$2" deadline=$((SECONDS + WAIT_TIMEOUT))
    until ping_port "$port" "$password"; do
        ((SECONDS < deadline)) || die "nothing answers on 127.0.0.1:$port; see $DIR/*.log"
        sleep 0.2
    done
}

server_conf() {  # server_conf NAME PORT PASSWORD [REPLICAOF_PORT]
    cat <<CONF
bind 127.0.0.1
port $2
protected-mode yes
requirepass $3
masterauth $3
daemonize yes
pidfile $DIR/$1.pid
logfile $DIR/$1.log
dir $DIR/$1
save ""
appendonly no
CONF
    [[ -z "${4:-}" ]] || echo "replicaof 127.0.0.1 $4"
}

up() {
    command -v redis-sentinel >/dev/null || die "redis-sentinel is missing: run deploy/setup.sh (it installs Debian's redis-sentinel)"
    [[ -s "$SECRET_DIR/redis.password" ]] || die "no testbed here ($STATE_DIR): run deploy/local/up.sh first"
    local password
    password="$(redis_password)"
    mkdir -p "$DIR/first" "$DIR/second"
    chmod 700 "$DIR"
    if ! alive first; then
        ! port_in_use "$FIRST_PORT" || die "port $FIRST_PORT is taken"
        server_conf first "$FIRST_PORT" "$password" >"$DIR/first.conf"
        redis-server "$DIR/first.conf"
    fi
    if ! alive second; then
        ! port_in_use "$SECOND_PORT" || die "port $SECOND_PORT is taken"
        server_conf second "$SECOND_PORT" "$password" "$FIRST_PORT" >"$DIR/second.conf"
        redis-server "$DIR/second.conf"
    fi
    wait_ping "$FIRST_PORT" "$password"
    wait_ping "$SECOND_PORT" "$password"
    if ! alive sentinel; then
        ! port_in_use "$SENTINEL_PORT" || die "port $SENTINEL_PORT is taken"
        # Sentinel rewrites its file (it records the current master there).
        cat >"$DIR/sentinel.conf" <<CONF
bind 127.0.0.1
port $SENTINEL_PORT
daemonize yes
pidfile $DIR/sentinel.pid
logfile $DIR/sentinel.log
dir $DIR
sentinel monitor $SERVICE 127.0.0.1 $FIRST_PORT 1
sentinel auth-pass $SERVICE $password
sentinel down-after-milliseconds $SERVICE 1000
sentinel failover-timeout $SERVICE 5000
sentinel parallel-syncs $SERVICE 1
CONF
        chmod 600 "$DIR/sentinel.conf" "$DIR/first.conf" "$DIR/second.conf"
        redis-sentinel "$DIR/sentinel.conf"
    fi
    wait_ping "$SENTINEL_PORT" ""
    {
        printf 'export SENTINEL_URL=%q\n' "redis+sentinel://:$password@127.0.0.1:$SENTINEL_PORT/$SERVICE"
        printf 'export SENTINEL_PORT=%s SENTINEL_REDIS_PORTS=%q\n' "$SENTINEL_PORT" "$FIRST_PORT $SECOND_PORT"
    } >"$DIR/env"
    chmod 600 "$DIR/env"
    log "Sentinel set up: master 127.0.0.1:$FIRST_PORT (at start), replica :$SECOND_PORT, sentinel :$SENTINEL_PORT; env in $DIR/env"
}

down() {
    local name pid
    for name in sentinel second first; do
        pid="$(pid_of "$name")"
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid"
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        fi
    done
    rm -rf "$DIR"
    log "Sentinel set stopped"
}

case "$ACTION" in
    up) up ;;
    down) down ;;
    *) usage; exit 2 ;;
esac
