#!/usr/bin/env bash
# An SMTP sink on 127.0.0.1:2525 (aiosmtpd from Debian) that keeps every message it receives
# in the Maildir $SHARED/mail (/var/lib/bilet/mail), where tests read them.
source "$(dirname "$0")/../lib.sh"

PORT=${SMTP_SINK_PORT:-2525}
MAILDIR="$SHARED/mail"
mkdir -p "$MAILDIR"/{cur,new,tmp}
if port_open 127.0.0.1 "$PORT"; then
    log "SMTP sink answers on $PORT"
    exit 0
fi
apt_install python3-aiosmtpd
log "starting the SMTP sink on $PORT (Maildir $MAILDIR)"
nohup /usr/bin/python3 -m aiosmtpd -n -l "127.0.0.1:$PORT" \
    -c aiosmtpd.handlers.Mailbox "$MAILDIR" >"$SHARED/smtp.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
wait_port 127.0.0.1 "$PORT" "SMTP sink"
