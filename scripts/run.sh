#!/usr/bin/env bash
# `make run`: the whole platform on embedded defaults (gateway on :8080). Only PostgreSQL is
# needed; when none answers at DATABASE_URL a private cluster is started under .bilet/pg.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

command -v cargo >/dev/null || die "cargo is required (Rust toolchain)"
bash scripts/provision/postgres.sh
exec cargo run --bin bilet -- serve
