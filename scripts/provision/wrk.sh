#!/usr/bin/env bash
# wrk (the outside load generator of bench/outside) and sysstat (pidstat, for CPU per process
# during a benchmark), from Debian.
source "$(dirname "$0")/../lib.sh"

command -v wrk >/dev/null && command -v pidstat >/dev/null && { log "wrk and pidstat are installed"; exit 0; }
apt_install wrk sysstat
