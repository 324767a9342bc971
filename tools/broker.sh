#!/usr/bin/env bash
# A private RabbitMQ 3.10 node with the stream plugin, for the broker tests and demos.
#
#   tools/broker.sh install install Debian's rabbitmq-server when missing (apt-get, needs
#                           root; nothing happens when it is there)
#   tools/broker.sh start   install when missing (as `install`), then
#                           start a node from .broker/ (git-ignored), loopback only,
#                           stream port 5552, stream over TLS 5551, AMQP 5672; wait until
#                           5552 answers
#   tools/broker.sh stop    stop that node, and the Erlang port mapper it started when no
#                           other node is registered with it
#
# BROKER_NO_INSTALL=1 (the test session's fixture, tests/support/rabbitmq_broker.py): a missing
# rabbitmq-server is an error (exit 3) instead of an install: installs belong to
# `make broker-installed` (a prerequisite of `make pytest`).
#
# TLS (5551): `start` makes, once, a private CA, a server certificate for localhost /
# 127.0.0.1 and a client certificate with CN `wirestream-client` in .broker/tls/
# (openssl). The broker asks for a client certificate (verify_peer) without requiring
# one, and offers SASL EXTERNAL to a client that presented one: the certificate's
# common name is the user, so `start` also creates the user `wirestream-client` (no
# password) with full permissions on `/`.
#
# Another node next to the main one (e.g. to try changes to this script): override the
# folder, node name and ports, e.g.
#   BROKER_DIR=.broker/dev-node BROKER_NODE=wsdev@localhost BROKER_STREAM_PORT=5562 \
#   BROKER_TLS_PORT=5561 BROKER_AMQP_PORT=5682 BROKER_DIST_PORT=25682 tools/broker.sh start
# (the same variables for `stop`).
#
# Why this shape (shared/notes/peers.md): the package's post-install cannot start a
# service here (no init system); the start script drops privileges to `rabbitmq`, so
# the node's folders must belong to that user; epmd keeps running after the node stops.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
B="${BROKER_DIR:-$ROOT/.broker}"
case "$B" in /*) ;; *) B="$ROOT/$B" ;; esac
NODE="${BROKER_NODE:-ws@localhost}"
PORT="${BROKER_STREAM_PORT:-5552}"
TLS_PORT="${BROKER_TLS_PORT:-5551}"
AMQP_PORT="${BROKER_AMQP_PORT:-5672}"
DIST_PORT="${BROKER_DIST_PORT:-25672}"
TLS="$B/tls"
CLIENT_USER=wirestream-client # the CN of the client certificate: the EXTERNAL identity

env_file() {
  cat > "$B/env.sh" <<ENV
export RABBITMQ_CONFIG_FILE=$B/rabbitmq RABBITMQ_ENABLED_PLUGINS_FILE=$B/enabled_plugins
export RABBITMQ_MNESIA_BASE=$B/mnesia RABBITMQ_LOG_BASE=$B/log RABBITMQ_NODENAME=$NODE
export RABBITMQ_FEATURE_FLAGS_FILE=$B/feature_flags ERL_EPMD_ADDRESS=127.0.0.1 RABBITMQ_DIST_PORT=$DIST_PORT
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
export RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
ENV
}

config_file() {
  cat > "$B/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$AMQP_PORT
stream.listeners.tcp.1 = 127.0.0.1:$PORT
stream.listeners.ssl.1 = 127.0.0.1:$TLS_PORT
loopback_users = none
ssl_options.cacertfile = $TLS/ca_certificate.pem
ssl_options.certfile = $TLS/server_certificate.pem
ssl_options.keyfile = $TLS/server_key.pem
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = false
auth_mechanisms.1 = PLAIN
auth_mechanisms.2 = AMQPLAIN
auth_mechanisms.3 = EXTERNAL
ssl_cert_login_from = common_name
CONF
  echo '[rabbitmq_stream,rabbitmq_auth_mechanism_ssl].' > "$B/enabled_plugins"
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

own_folder() {
  if id rabbitmq >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then chown -R rabbitmq:rabbitmq "$B"; fi
}

# A private CA, the server certificate (SAN localhost, 127.0.0.1) and the client
# certificate (CN wirestream-client), each valid 10 years; made only when one is missing.
tls_files() {
  local name missing=0
  for name in ca_certificate ca_key server_certificate server_key client_certificate client_key; do
    [ -s "$TLS/$name.pem" ] || missing=1
  done
  if [ "$missing" = 0 ]; then return 0; fi
  if ! command -v openssl >/dev/null; then echo "broker: openssl is missing" >&2; exit 1; fi
  echo "broker: making a private CA, server and client certificates in $TLS"
  mkdir -p "$TLS"
  cat > "$TLS/openssl.cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
CNF
  (
    cd "$TLS"
    umask 077
    openssl req -x509 -new -newkey rsa:2048 -nodes -days 3650 -config openssl.cnf \
      -extensions ca -subj "/CN=wirestream test CA" \
      -keyout ca_key.pem -out ca_certificate.pem 2>/dev/null
    local leaf cn
    for leaf in server client; do
      if [ "$leaf" = server ]; then cn=localhost; else cn="$CLIENT_USER"; fi
      openssl req -new -newkey rsa:2048 -nodes -config openssl.cnf -subj "/CN=$cn" \
        -keyout "${leaf}_key.pem" -out "$leaf.csr" 2>/dev/null
      openssl x509 -req -in "$leaf.csr" -CA ca_certificate.pem -CAkey ca_key.pem \
        -CAcreateserial -CAserial ca_certificate.srl -days 3650 -sha256 \
        -extfile openssl.cnf -extensions "$leaf" -out "${leaf}_certificate.pem" 2>/dev/null
      rm -f "$leaf.csr"
    done
    chmod 644 ca_certificate.pem server_certificate.pem client_certificate.pem
  )
}

# The user a client certificate logs in as with EXTERNAL: no password (PLAIN cannot
# log in as it), full permissions on the default virtual host. Idempotent.
client_user() {
  # shellcheck disable=SC1091
  . "$B/env.sh"
  if ! rabbitmqctl list_users --silent 2>/dev/null | cut -f1 | grep -x "$CLIENT_USER" >/dev/null; then
    rabbitmqctl add_user "$CLIENT_USER" "$(openssl rand -hex 24)" >/dev/null
    rabbitmqctl clear_password "$CLIENT_USER" >/dev/null
  fi
  rabbitmqctl set_permissions -p / "$CLIENT_USER" ".*" ".*" ".*" >/dev/null
}

# Debian's rabbitmq-server (3.10 on Debian 12), when missing. Exit 3 when it is missing and
# cannot be installed here (not root, or BROKER_NO_INSTALL=1).
install() {
  if command -v rabbitmq-server >/dev/null; then return 0; fi
  if [ "${BROKER_NO_INSTALL:-}" = 1 ]; then
    echo "broker: rabbitmq-server is missing; install it first: make broker-installed (as root)" >&2
    exit 3
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "broker: rabbitmq-server is missing; install it as root: tools/broker.sh install" >&2
    exit 3
  fi
  echo "broker: installing rabbitmq-server (apt-get)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server >/dev/null
  command -v rabbitmq-server >/dev/null || { echo "broker: rabbitmq-server still missing after apt-get install" >&2; exit 1; }
}

start() {
  if listening "$PORT"; then
    echo "broker: already listening on 127.0.0.1:$PORT"
    if listening "$TLS_PORT"; then
      client_user || echo "broker: could not make sure the user $CLIENT_USER exists" >&2
    fi
    return 0
  fi
  install
  mkdir -p "$B/mnesia" "$B/log"
  tls_files
  config_file
  env_file
  own_folder
  # shellcheck disable=SC1091
  . "$B/env.sh"
  nohup rabbitmq-server > "$B/server.out" 2>&1 &
  for _ in $(seq 1 120); do
    if listening "$PORT"; then
      echo "broker: ready on 127.0.0.1:$PORT"
      for _ in $(seq 1 30); do
        if listening "$TLS_PORT"; then break; fi
        sleep 1
      done
      if ! listening "$TLS_PORT"; then
        echo "broker: no TLS listener on 127.0.0.1:$TLS_PORT; see $B/log" >&2
        exit 1
      fi
      client_user
      echo "broker: TLS on 127.0.0.1:$TLS_PORT (CA, client certificate of $CLIENT_USER in $TLS)"
      return 0
    fi
    sleep 1
  done
  echo "broker: did not start in 120 s; see $B/server.out and $B/log" >&2
  tail -20 "$B/server.out" >&2 || true
  exit 1
}

# The names registered with the Erlang port mapper ("name ws at port 25672" lines).
epmd_names() { epmd -names 2>/dev/null | sed -n 's/^name \([^ ]*\) at port .*/\1/p'; }

stop() {
  if [ -f "$B/env.sh" ]; then
    # shellcheck disable=SC1091
    . "$B/env.sh"
    rabbitmqctl stop >/dev/null 2>&1 || true
  fi
  # The node leaves epmd as it exits; other nodes (and CLI tools) may share epmd.
  for _ in $(seq 1 20); do
    if ! epmd_names | grep -x "${NODE%@*}" >/dev/null; then break; fi
    sleep 0.5
  done
  if [ -z "$(epmd_names)" ]; then epmd -kill >/dev/null 2>&1 || true; fi
  echo "broker: stopped"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac
