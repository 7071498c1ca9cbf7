#!/usr/bin/env bash
# The outside burst in one command: installs wrk, builds `bilet` and the benchmark in release,
# and runs bench/outside with the environment given (EVENTS, REQUESTS, SEATS, HISTORY, ...;
# bench/README.md lists them). PostgreSQL must answer on DATABASE_URL (default 127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/provision/wrk.sh
cargo build --release -p bilet --bin bilet -p bench --bin outside
exec target/release/outside "$@"
