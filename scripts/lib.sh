# Shared helpers of the project scripts. Every provisioner is idempotent: it installs only
# what is missing and starts only what does not answer.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${BILET_STATE_DIR:-$ROOT/.bilet}"
CACHE="${BILET_CACHE:-/var/cache/bilet}"
# Services that outlive a checkout (the S3 server, the SMTP sink) keep their state here, so a
# second clone finds and reuses the daemons the first one started.
SHARED="${BILET_SHARED_DIR:-/var/lib/bilet}"
mkdir -p "$STATE" "$SHARED"

log() { printf '\033[1m[bilet]\033[0m %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# apt_install PKG... — installs the Debian packages that are missing.
apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || die "need root to install: ${missing[*]}"
    log "installing ${missing[*]}"
    if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ]; then
        apt-get update -qq
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# port_open HOST PORT — true when something accepts TCP connections there.
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# wait_port HOST PORT NAME [SECONDS]
wait_port() {
    local host=$1 port=$2 name=$3 limit=${4:-60}
    for _ in $(seq 1 $((limit * 4))); do
        port_open "$host" "$port" && return 0
        sleep 0.25
    done
    die "$name did not start listening on $host:$port within ${limit}s"
}

# url_host_port URL DEFAULT_PORT — prints "host port" of a URL.
url_host_port() {
    local rest=${1#*://}
    rest=${rest#*@}
    rest=${rest%%/*}
    rest=${rest%%\?*}
    local host=${rest%%:*} port=$2
    [ "$rest" != "$host" ] && port=${rest##*:}
    [ -z "$host" ] && host=127.0.0.1
    [ "$host" = localhost ] && host=127.0.0.1
    echo "$host $port"
}

# run_as USER CMD... — runs a command as a system user (daemons refuse root).
run_as() { local user=$1; shift; runuser -u "$user" -- "$@"; }
