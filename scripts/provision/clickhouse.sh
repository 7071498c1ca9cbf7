#!/usr/bin/env bash
# ClickHouse (Debian's clickhouse-server 18.16) on 127.0.0.1:8123, started if it does not
# answer.
source "$(dirname "$0")/../lib.sh"

if curl -fsS http://127.0.0.1:8123/ping >/dev/null 2>&1; then
    log "ClickHouse answers on 8123"
    exit 0
fi
apt_install clickhouse-server clickhouse-client curl
log "starting ClickHouse"
mkdir -p /var/lib/clickhouse /var/log/clickhouse-server /var/run/clickhouse-server
chown -R clickhouse:clickhouse /var/lib/clickhouse /var/log/clickhouse-server /var/run/clickhouse-server 2>/dev/null || true
run_as clickhouse clickhouse-server --daemon \
    --config-file=/etc/clickhouse-server/config.xml \
    --pid-file=/var/run/clickhouse-server/clickhouse-server.pid >/dev/null 2>&1 || true
for _ in $(seq 1 120); do
    curl -fsS http://127.0.0.1:8123/ping >/dev/null 2>&1 && exit 0
    sleep 0.5
done
die "ClickHouse did not answer on 8123"
