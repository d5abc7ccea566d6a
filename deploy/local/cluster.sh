#!/usr/bin/env bash
# Opt-in: a Redis Cluster of three masters (no replicas) on 127.0.0.1, for the store's
# cluster tests (tests/integration/test_store_cluster.py), under STATE_DIR/cluster. The
# password is the testbed's Redis password when a testbed is there, else one made for the
# cluster alone (so the store tests need no Slurm). The testbed's own Redis is left alone.
#
#   deploy/local/cluster.sh up   [--state-dir DIR]   start it (idempotent), write DIR/cluster/env
#   deploy/local/cluster.sh down [--state-dir DIR]   stop it, keep nothing
#
# DIR/cluster/env exports CLUSTER_URL (redis+cluster://:PASSWORD@127.0.0.1:P1,...) and
# CLUSTER_PORTS. Ports: the testbed's Redis port + 111, + 112, + 113 (each node's cluster
# bus on its port + 10000).

SCRIPT_NAME=cluster.sh
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

parse_common_args "$@"
ACTION="${REST_ARGS[0]:-}"
DIR="$STATE_DIR/cluster"
PORTS=("$((REDIS_PORT + 111))" "$((REDIS_PORT + 112))" "$((REDIS_PORT + 113))")

pid_of() { cat "$DIR/$1.pid" 2>/dev/null || true; }
alive() { local pid; pid="$(pid_of "$1")"; [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; }

cli() {  # cli PORT ARGS...: redis-cli against one node, the password from the environment
    local port="$1"; shift
    REDISCLI_AUTH="$PASSWORD" timeout 10 redis-cli -h 127.0.0.1 -p "$port" --no-auth-warning "$@"
}

wait_for() {  # wait_for DESCRIPTION COMMAND...: until COMMAND succeeds or WAIT_TIMEOUT passes
    local what="$1" deadline=$((SECONDS + WAIT_TIMEOUT)); shift
    until "$@"; do
        ((SECONDS < deadline)) || die "$what; see $DIR/*.log"
        sleep 0.2
    done
}

pings() { cli "$1" ping 2>/dev/null | grep -q PONG; }
cluster_ok() { cli "$1" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; }

node_conf() {  # node_conf PORT
    cat <<CONF
bind 127.0.0.1
port $1
protected-mode yes
requirepass $PASSWORD
masterauth $PASSWORD
daemonize yes
pidfile $DIR/node-$1.pid
logfile $DIR/node-$1.log
dir $DIR/node-$1
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout 2000
save ""
appendonly no
CONF
}

password() {
    if [[ -s "$SECRET_DIR/redis.password" ]]; then
        redis_password
    else
        [[ -s "$DIR/password" ]] || (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/password")
        cat "$DIR/password"
    fi
}

up() {
    command -v redis-server >/dev/null || die "redis-server is missing: run deploy/setup.sh"
    mkdir -p "$DIR"
    chmod 700 "$DIR"
    PASSWORD="$(password)"
    local port
    for port in "${PORTS[@]}"; do
        alive "node-$port" && continue
        ! port_in_use "$port" || die "port $port is taken"
        ! port_in_use "$((port + 10000))" || die "port $((port + 10000)) (cluster bus) is taken"
        mkdir -p "$DIR/node-$port"
        (umask 077; node_conf "$port" >"$DIR/node-$port.conf")
        redis-server "$DIR/node-$port.conf"
    done
    for port in "${PORTS[@]}"; do
        wait_for "nothing answers on 127.0.0.1:$port" pings "$port"
    done
    if ! cluster_ok "${PORTS[0]}"; then
        # A node that already knows others was part of an earlier, half-made cluster:
        # start it over (the nodes hold no data yet; `save ""`, no AOF).
        for port in "${PORTS[@]}"; do
            cli "$port" flushall >/dev/null
            cli "$port" cluster reset hard >/dev/null
        done
        cli "${PORTS[0]}" --cluster create "${PORTS[@]/#/127.0.0.1:}" --cluster-replicas 0 \
            --cluster-yes >"$DIR/create.log" 2>&1 || die "redis-cli --cluster create failed; see $DIR/create.log"
    fi
    for port in "${PORTS[@]}"; do
        wait_for "the cluster is not ok on 127.0.0.1:$port" cluster_ok "$port"
    done
    local hosts
    hosts="$(printf '127.0.0.1:%s,' "${PORTS[@]}")"
    {
        printf 'export CLUSTER_URL=%q\n' "redis+cluster://:$PASSWORD@${hosts%,}"
        printf 'export CLUSTER_PORTS=%q\n' "${PORTS[*]}"
    } >"$DIR/env"
    chmod 600 "$DIR/env"
    log "Redis Cluster up: masters 127.0.0.1:${PORTS[*]// /, :}; env in $DIR/env"
}

down() {
    local port pid
    for port in "${PORTS[@]}"; do
        pid="$(pid_of "node-$port")"
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid"
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        fi
    done
    rm -rf "$DIR"
    log "Redis Cluster stopped"
}

case "$ACTION" in
    up) up ;;
    down) down ;;
    *) usage; exit 2 ;;
esac
