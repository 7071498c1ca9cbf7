#!/usr/bin/env bash
# Schemathesis (from PyPI) in its own virtual environment under $CACHE, installed once.
source "$(dirname "$0")/../lib.sh"

VENV="$CACHE/schemathesis-venv"
VERSION=${SCHEMATHESIS_VERSION:-4.32.5}
if [ -x "$VENV/bin/schemathesis" ] && "$VENV/bin/schemathesis" --version 2>/dev/null | grep -q "$VERSION"; then
    exit 0
fi
apt_install python3 python3-venv curl
log "installing schemathesis $VERSION into $VENV"
mkdir -p "$CACHE"
/usr/bin/python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check "schemathesis==$VERSION"
