#!/usr/bin/env bash
# RabbitMQ on 127.0.0.1:5672 (guest/guest), from Debian, started if it does not answer.
source "$(dirname "$0")/../lib.sh"

if port_open 127.0.0.1 5672; then
    log "RabbitMQ answers on 5672"
    exit 0
fi
apt_install rabbitmq-server
log "starting RabbitMQ"
if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    systemctl start rabbitmq-server
else
    rabbitmq-server -detached >/dev/null 2>&1 || true
fi
wait_port 127.0.0.1 5672 RabbitMQ 120
# The port opens before the broker accepts logins; wait until it is really up.
for _ in $(seq 1 60); do
    rabbitmqctl -q await_startup >/dev/null 2>&1 && break
    sleep 1
done
