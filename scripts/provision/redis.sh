#!/usr/bin/env bash
# Redis on 127.0.0.1:6379, for the gateway's shared rate limits; from Debian, started if it
# does not answer.
source "$(dirname "$0")/../lib.sh"

if port_open 127.0.0.1 6379; then
    log "Redis answers on 6379"
    exit 0
fi
apt_install redis-server
log "starting Redis"
redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
wait_port 127.0.0.1 6379 Redis
