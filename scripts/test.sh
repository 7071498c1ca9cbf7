#!/usr/bin/env bash
# `make test`: provisions what the tests need (PostgreSQL, RabbitMQ, Redis, ClickHouse, Garage,
# an SMTP sink), then runs every test. Tests that stop shared services (tests named faults::)
# run afterwards, alone, so they cannot disturb the others.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

command -v cargo >/dev/null || die "cargo is required (Rust toolchain)"
bash scripts/provision/postgres.sh
bash scripts/provision/rabbitmq.sh
bash scripts/provision/redis.sh
bash scripts/provision/clickhouse.sh
bash scripts/provision/smtp.sh
bash scripts/provision/garage.sh
bash scripts/provision/browser.sh
bash scripts/provision/tools.sh

set -a
# shellcheck disable=SC1091
source "$SHARED/garage/env"
set +a
export TEST_DATABASE_URL=${TEST_DATABASE_URL:-${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}}
export TEST_REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379}
export TEST_AMQP_URL=${TEST_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/%2f}
export CLICKHOUSE_URL=${CLICKHOUSE_URL:-http://127.0.0.1:8123}
export SMTP_URL=${SMTP_URL:-smtp://127.0.0.1:${SMTP_SINK_PORT:-2525}}
export TEST_MAILDIR="$SHARED/mail"
export RUST_LOG=${RUST_LOG:-warn}

# The tests' databases are dropped before the run (those of a run that was cut short) and after
# it, pass or fail: a few hundred left behind made the machine's next benchmarks erratic.
drop_test_databases() {
    command -v psql >/dev/null || return 0
    { psql "$TEST_DATABASE_URL" -Atqc "SELECT datname FROM pg_database WHERE datname LIKE 'bilet_test_%'" 2>/dev/null || true; } \
        | while read -r db; do psql "$TEST_DATABASE_URL" -qc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 || true; done
    # Each test database had an application role of its own (bilet_app_<database>); with the
    # databases gone their roles hold nothing and would only pile up.
    psql "$TEST_DATABASE_URL" -qc "DO \$\$ DECLARE r text; BEGIN
        FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'bilet\_app\_bilet\_test\_%' LOOP
            BEGIN EXECUTE format('DROP ROLE %I', r); EXCEPTION WHEN others THEN NULL; END;
        END LOOP; END \$\$" >/dev/null 2>&1 || true
}
drop_test_databases
trap drop_test_databases EXIT

# Queues and exchanges the tests declared on earlier runs are removed in the background.
( rabbitmqctl -q list_queues name 2>/dev/null | grep -E '^bilet\.(events\.)?(test|flaky)-' \
    | xargs -r -n1 timeout 20 rabbitmqctl -q delete_queue >/dev/null 2>&1 ) &

# `scripts/test.sh faults` (make faults) runs only the fault tests.
ONLY_FAULTS=${1:-}
if cargo nextest --version >/dev/null 2>&1; then
    [ "$ONLY_FAULTS" = faults ] || cargo nextest run --workspace --no-fail-fast -E 'not test(/^faults::/)'
    cargo nextest run --workspace --no-fail-fast -E 'test(/^faults::/)' --test-threads 1 --no-capture
else
    log "cargo-nextest not found; using cargo test"
    [ "$ONLY_FAULTS" = faults ] || cargo test --workspace --no-fail-fast -- --skip faults::
    cargo test --test it --no-fail-fast -- faults:: --test-threads 1 --nocapture
fi

# The web front's own unit tests (its QR encoder, dictionaries, the event page's weight).
[ "$ONLY_FAULTS" = faults ] || node --test web/tests/

# Schemathesis through the gateway: no 5xx, no response outside the documented schema.
[ "$ONLY_FAULTS" = faults ] || bash tests/abuse/schemathesis.sh
