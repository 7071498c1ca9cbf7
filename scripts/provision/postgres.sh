#!/usr/bin/env bash
# PostgreSQL: uses the server at DATABASE_URL when one answers; otherwise starts a private
# cluster under .bilet/pg with Debian's PostgreSQL (installed if missing), trust auth on
# 127.0.0.1 only.
source "$(dirname "$0")/../lib.sh"

DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/bilet}
read -r host port < <(url_host_port "$DATABASE_URL" 5432)

if port_open "$host" "$port"; then
    log "PostgreSQL answers at $host:$port"
    exit 0
fi
case "$host" in 127.0.0.1|::1) ;; *) die "no PostgreSQL at $host:$port and it is not local";; esac

apt_install postgresql
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGDIR="$STATE/pg"
# The server runs as the postgres user, who must be able to reach the data directory; when
# the checkout lives somewhere private (e.g. /root), keep the cluster in /var/lib instead.
mkdir -p "$STATE"
if ! run_as postgres test -x "$STATE" 2>/dev/null; then
    mkdir -p /var/lib/bilet/pg
    chown postgres:postgres /var/lib/bilet/pg
    [ -L "$PGDIR" ] || { rm -rf "$PGDIR"; ln -s /var/lib/bilet/pg "$PGDIR"; }
fi
mkdir -p "$PGDIR"
chown postgres:postgres "$PGDIR"
if [ ! -f "$PGDIR/data/PG_VERSION" ]; then
    log "initialising a private PostgreSQL cluster in $PGDIR"
    run_as postgres "$PGBIN/initdb" -D "$PGDIR/data" -A trust -U postgres -E UTF8 >/dev/null
fi
log "starting PostgreSQL on $host:$port"
run_as postgres "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w \
    -o "-p $port -c listen_addresses=127.0.0.1 -k /tmp -c max_connections=300 -c shared_buffers=256MB" start >/dev/null
wait_port "$host" "$port" PostgreSQL
