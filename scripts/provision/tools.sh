#!/usr/bin/env bash
# Command-line tools the tests read bilet's files with: pdftotext (poppler-utils) extracts the
# ticket PDF's text through its ToUnicode maps, openssl makes the wallet test's certificates
# and checks a pass's signature, unzip opens the pass. Installed from Debian once.
source "$(dirname "$0")/../lib.sh"

apt_install poppler-utils openssl unzip
log "poppler-utils, openssl and unzip are installed"
