#!/usr/bin/env bash
# Schemathesis against /api/v1/openapi.json through the gateway of a fresh node: every
# operation with generated valid and invalid input, signed in as an organization owner, with
# every check (no 5xx, every status and header documented, responses as the
# schema says, invalid input refused, valid input accepted, auth not ignored, deleted things
# gone) and the stateful phase, which chains calls through the document's links. Settings
# and the few documented exceptions are in tests/abuse/schemathesis.toml.
source "$(dirname "$0")/../../scripts/lib.sh"
cd "$ROOT"

bash scripts/provision/schemathesis.sh
ST="$CACHE/schemathesis-venv/bin/schemathesis"
cargo build -q --bin bilet
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/bilet"

ADMIN_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
DB_URL="${ADMIN_URL%/*}/bilet_abuse"
psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS bilet_abuse WITH (FORCE)" >/dev/null
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
DIR=$(mktemp -d /tmp/bilet-abuse-XXXXXX)
{
    echo "data_dir = \"$DIR\""
    echo "[database]"; echo "url = \"$DB_URL\""
    echo "[auth]"; echo "jwt_secret = \"abuse-secret-abuse-secret-abuse-secret\""; echo "bcrypt_cost = 4"
    # The bot is configured (its API is unreachable: nothing is sent) so messenger sign-in
    # answers for its input rather than 503 for a missing token.
    echo "[messenger]"; echo "bot_token = \"1:ABUSE\""; echo "api_url = \"http://127.0.0.1:9\""
    # The payment webhook is configured, so unsigned calls get 401 rather than 503.
    echo "[payments]"; echo "webhook_secret = \"abuse-webhook-secret\""
    # Organizations may store their own provider keys, so setting them answers for the input.
    echo "credentials_key = \"abuse-credentials-key-abuse-credentials-key\""
    echo "[gateway]"; echo "public_per_minute = 1000000"; echo "user_per_minute = 1000000"; echo "upload_per_minute = 1000000"
    echo "[services.gateway]"; echo "listen = \"127.0.0.1:$PORT\""; echo "url = \"http://127.0.0.1:$PORT\""
    for s in identity events notifications media analytics; do
        p=$(free_port)
        echo "[services.$s]"; echo "listen = \"127.0.0.1:$p\""; echo "url = \"http://127.0.0.1:$p\""
    done
} >"$DIR/cluster.toml"
env -u DATABASE_URL -u BROKER_URL -u CLICKHOUSE_URL -u REDIS_URL -u SMTP_URL -u STORAGE_ENDPOINT \
    RUST_LOG=error "$BIN" --config "$DIR/cluster.toml" serve >"$DIR/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
BASE="http://127.0.0.1:$PORT"
for _ in $(seq 1 120); do
    curl -sf "$BASE/health/ready" >/dev/null && break
    sleep 0.5
done
curl -sf "$BASE/health/ready" >/dev/null || die "the node did not start: $(tail -5 "$DIR/server.log")"

# An organizer with an organization (approved by an administrator), and a token inside it.
json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
post() { curl -s -X POST "$BASE$1" -H 'content-type: application/json' ${3:+-H "authorization: Bearer $3"} -d "$2"; }
signup() {
    post /api/v1/auth/register "{\"email\":\"$1\",\"password\":\"correct-horse-1\",\"firstName\":\"St\",\"lastName\":\"Fuzz\"}" >/dev/null
    post /api/v1/auth/login "{\"email\":\"$1\",\"password\":\"correct-horse-1\"}" | json "['accessToken']"
}
OWNER=$(signup owner@abuse.test)
signup admin@abuse.test >/dev/null
env -u DATABASE_URL "$BIN" --config "$DIR/cluster.toml" admin grant admin@abuse.test >/dev/null
ADMIN=$(post /api/v1/auth/login '{"email":"admin@abuse.test","password":"correct-horse-1"}' | json "['accessToken']")
REQUEST=$(post /api/v1/organization-requests '{"name":"Fuzz","slug":"fuzz-org"}' "$OWNER" | json "['id']")
post "/api/v1/organization-requests/$REQUEST/approve" '' "$ADMIN" >/dev/null
ORG=$(post /api/v1/organizations '' "$OWNER" | json "['id']")
TOKEN=$(post "/api/v1/organizations/$ORG/switch" '' "$OWNER" | json "['accessToken']")
[ -n "$TOKEN" ] || die "could not sign in as an organizer"

log "schemathesis against $BASE/api/v1/openapi.json"
# Logging out and ending a session (whose id the stateful phase reads from the session list)
# end the very token the run uses; tests/it covers their refusals. A waiting room's stream is
# open for 25 seconds by design, past the run's request timeout; tests/it reads it.
# Every check runs (schemathesis 4 enables them all by default). They are not named on the
# command line, where `--checks all` would override the per-operation exceptions of the file.
# One worker: with two threads, Python 3.11's `ast` module (which Hypothesis calls to describe
# its filters) now and then fails with "AST constructor recursion depth mismatch".
"$ST" --config-file tests/abuse/schemathesis.toml run "$BASE/api/v1/openapi.json" \
    --header "Authorization: Bearer $TOKEN" \
    --max-examples "${SCHEMATHESIS_EXAMPLES:-50}" \
    --phases examples,coverage,fuzzing,stateful \
    --workers 1 \
    --request-timeout 10 \
    --suppress-health-check all \
    --exclude-path /api/v1/auth/logout \
    --exclude-path '/api/v1/users/me/sessions/{id}' \
    --exclude-path '/api/v1/events/{id}/queue/events' \
    --no-color
