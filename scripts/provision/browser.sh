#!/usr/bin/env bash
# What the browser tests need: Debian's chromium and chromedriver, and playwright-core and
# axe-core from npm (tests/browser/package-lock.json pins them; no browser is downloaded).
source "$(dirname "$0")/../lib.sh"

apt_install chromium chromium-driver
command -v npm >/dev/null || apt_install nodejs npm
DIR="$ROOT/tests/browser"
if [ ! -d "$DIR/node_modules/playwright-core" ] || [ ! -d "$DIR/node_modules/axe-core" ] \
    || [ "$DIR/package-lock.json" -nt "$DIR/node_modules/.package-lock.json" ]; then
    log "installing playwright-core and axe-core for the browser tests"
    (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
fi
