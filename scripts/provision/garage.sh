#!/usr/bin/env bash
# Garage, the S3-compatible store, on 127.0.0.1:3900 with one bucket and one key. The binary
# is built once with `cargo install` into $BILET_CACHE (about 10 minutes on 2 cores) and
# reused by every later run. Writes the STORAGE_* settings to $SHARED/garage/env.
source "$(dirname "$0")/../lib.sh"

GARAGE="$CACHE/garage/bin/garage"
DIR="$SHARED/garage"
CONF="$DIR/garage.toml"
BUCKET=${STORAGE_BUCKET:-bilet-media}
# Fixed test credentials: Garage imports them, so every run knows them without parsing.
KEY_ID=GK0b11e7000000000000000001
KEY_SECRET=0b11e70000000000000000000000000000000000000000000000000000000001
# The S3 fault test stops Garage with pkill and starts it again with this script.
apt_install procps

if [ ! -x "$GARAGE" ]; then
    log "building Garage into $CACHE/garage (once; about 10 minutes)"
    apt_install pkg-config build-essential
    mkdir -p "$CACHE"
    CARGO_TARGET_DIR="$CACHE/garage-target" cargo install garage --locked --root "$CACHE/garage" >"$CACHE/garage-install.log" 2>&1 \
        || die "cargo install garage failed, see $CACHE/garage-install.log"
fi

mkdir -p "$DIR/meta" "$DIR/data"
if [ ! -f "$CONF" ]; then
    cat >"$CONF" <<CONF
metadata_dir = "$DIR/meta"
data_dir = "$DIR/data"
db_engine = "sqlite"
replication_factor = 1
rpc_bind_addr = "127.0.0.1:3901"
rpc_public_addr = "127.0.0.1:3901"
rpc_secret = "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"

[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:3900"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "127.0.0.1:3903"
CONF
    chmod 600 "$CONF"
fi
g() { "$GARAGE" -c "$CONF" "$@"; }

if ! port_open 127.0.0.1 3900; then
    log "starting Garage"
    # Descriptors above 2 are closed: a daemon must not keep a caller's lock file open (a
    # test run under `flock` that restarts Garage would otherwise hold the lock forever).
    nohup "$GARAGE" -c "$CONF" server >"$DIR/server.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
    wait_port 127.0.0.1 3900 Garage
    for _ in $(seq 1 60); do g status >/dev/null 2>&1 && break; sleep 0.5; done
fi

if g status 2>/dev/null | grep -q "NO ROLE ASSIGNED"; then
    node=$(g node id -q 2>/dev/null | cut -d@ -f1)
    g layout assign -z dc1 -c 1G "$node" >/dev/null
    g layout apply --version "$(( $(g layout show 2>/dev/null | sed -n 's/.*Current cluster layout version: \([0-9]*\).*/\1/p' | head -1) + 1 ))" >/dev/null
fi
g key info "$KEY_ID" >/dev/null 2>&1 || g key import --yes -n bilet "$KEY_ID" "$KEY_SECRET" >/dev/null
g bucket info "$BUCKET" >/dev/null 2>&1 || g bucket create "$BUCKET" >/dev/null
g bucket allow --read --write --owner "$BUCKET" --key "$KEY_ID" >/dev/null

cat >"$DIR/env" <<ENV
STORAGE_ENDPOINT=http://127.0.0.1:3900
STORAGE_ACCESS_KEY=$KEY_ID
STORAGE_SECRET_KEY=$KEY_SECRET
STORAGE_BUCKET=$BUCKET
STORAGE_REGION=garage
ENV
log "Garage ready: bucket $BUCKET"
