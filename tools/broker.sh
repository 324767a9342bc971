#!/usr/bin/env bash
# A private RabbitMQ 3.10 node with the stream plugin, for the broker tests and demos.
#
#   tools/broker.sh start   install Debian's rabbitmq-server when missing (needs root),
#                           start a node from .broker/ (git-ignored), loopback only,
#                           stream port 5552, AMQP 5672; wait until 5552 answers
#   tools/broker.sh stop    stop that node and the Erlang port mapper it started
#
# Why this shape (shared/notes/peers.md): the package's post-install cannot start a
# service here (no init system); the start script drops privileges to `rabbitmq`, so
# the node's folders must belong to that user; epmd keeps running after the node stops.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
B="$ROOT/.broker"
PORT=5552

env_file() {
  cat > "$B/env.sh" <<ENV
export RABBITMQ_CONFIG_FILE=$B/rabbitmq RABBITMQ_ENABLED_PLUGINS_FILE=$B/enabled_plugins
export RABBITMQ_MNESIA_BASE=$B/mnesia RABBITMQ_LOG_BASE=$B/log RABBITMQ_NODENAME=ws@localhost
export RABBITMQ_FEATURE_FLAGS_FILE=$B/feature_flags ERL_EPMD_ADDRESS=127.0.0.1 RABBITMQ_DIST_PORT=25672
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
export RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
ENV
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

start() {
  if listening; then echo "broker: already listening on 127.0.0.1:$PORT"; return 0; fi
  if ! command -v rabbitmq-server >/dev/null; then
    if [ "$(id -u)" != 0 ]; then echo "broker: rabbitmq-server is missing; install it as root" >&2; exit 1; fi
    echo "broker: installing rabbitmq-server (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server >/dev/null
  fi
  mkdir -p "$B/mnesia" "$B/log"
  printf 'listeners.tcp.default = 127.0.0.1:5672\nstream.listeners.tcp.1 = 127.0.0.1:%s\nloopback_users = none\n' "$PORT" > "$B/rabbitmq.conf"
  echo '[rabbitmq_stream].' > "$B/enabled_plugins"
  env_file
  if id rabbitmq >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then chown -R rabbitmq:rabbitmq "$B"; fi
  # shellcheck disable=SC1091
  . "$B/env.sh"
  nohup rabbitmq-server > "$B/server.out" 2>&1 &
  for _ in $(seq 1 120); do
    if listening; then echo "broker: ready on 127.0.0.1:$PORT"; return 0; fi
    sleep 1
  done
  echo "broker: did not start in 120 s; see $B/server.out and $B/log" >&2
  tail -20 "$B/server.out" >&2 || true
  exit 1
}

stop() {
  if [ -f "$B/env.sh" ]; then
    # shellcheck disable=SC1091
    . "$B/env.sh"
    rabbitmqctl stop >/dev/null 2>&1 || true
  fi
  epmd -kill >/dev/null 2>&1 || true
  echo "broker: stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
