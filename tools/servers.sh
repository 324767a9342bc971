#!/usr/bin/env bash
# Private MQTT, PostgreSQL and MariaDB servers (Debian's own builds), for the tests that
# hold the generated MQTT 5, PostgreSQL v3 and MySQL/MariaDB codecs against real servers.
#
#   tools/servers.sh install [NAME...]  install the missing Debian packages (apt-get, root)
#   tools/servers.sh start [NAME...]    install when missing, then start each server from
#                                       .servers/NAME/ (git-ignored), loopback only; wait
#                                       until it answers; a no-op for one already answering
#   tools/servers.sh stop [NAME...]     stop each by its PID and wait until it has exited
#   tools/servers.sh status [NAME...]   say which run (exit 1 when one does not answer)
#
# NAME is mosquitto, postgresql, mariadb or all (the default). Every wait has an end:
# SERVERS_START_TIMEOUT (60 s) for a start, SERVERS_STOP_TIMEOUT (30 s) before a stop
# turns to SIGKILL. Ports and folder can be overridden (the same variables for `stop`):
# SERVERS_DIR, MOSQUITTO_PORT, MOSQUITTO_ANON_PORT, POSTGRESQL_PORT, MARIADB_PORT. Commands
# take turns on the folder (flock on .servers/.lock, SERVERS_LOCK_TIMEOUT 600 s). With
# SERVERS_NO_INSTALL=1 (the test fixtures), a missing package is an error (exit 3)
# instead of an install: installs belong to `make servers-installed`.
#
# mosquitto (Debian 12: 2.0.11)  127.0.0.1:18830  user wsuser / password wspass, anonymous
#   refused (password_file made with mosquitto_passwd -b); 127.0.0.1:18831 a second listener
#   that takes anonymous clients (per_listener_settings), for tests that need no login.
#   Persistence off. Each server logs to .servers/NAME/server.log.
# postgresql (15)  127.0.0.1:15432, database wstest; pg_hba.conf gives each user one method:
#   ws_trust (trust: no password asked), ws_md5 (md5, password md5pass: stored as an md5
#   hash, else md5 would turn into SCRAM), ws_scram (scram-sha-256, password scrampass);
#   any other user over TCP is rejected. The superuser postgres logs in over the Unix
#   socket in .servers/postgresql/sock only. The server refuses to run as root: as root,
#   initdb and postgres run as the `postgres` system user, which owns the folder.
# mariadb (10.11)  127.0.0.1:13306, database wstest, user wsuser / password wspass
#   (mysql_native_password, MariaDB's default plugin), as 'wsuser'@'127.0.0.1' (TCP;
#   skip-name-resolve) and 'wsuser'@'localhost' (the socket .servers/mariadb/mariadb.sock).
#   TLS is off (skip-ssl): the server does not offer it, so nothing can force it. It runs
#   from its own my.cnf only (--defaults-file: Debian's /etc/mysql is not read); as root
#   it drops to the `mysql` system user. root@localhost logs in over the socket only.
#
# Why this shape: there is no init system here, so a package's post-install cannot start
# its service (a policy-rc.d that answers 101 tells it not to try; one is put in place for
# the install when the system has none); each server runs in the foreground of a
# background job, so the PID we keep is the server's own.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
S="${SERVERS_DIR:-$ROOT/.servers}"
case "$S" in /*) ;; *) S="$ROOT/$S" ;; esac
MQTT_PORT="${MOSQUITTO_PORT:-18830}"
MQTT_ANON_PORT="${MOSQUITTO_ANON_PORT:-18831}"
PG_PORT="${POSTGRESQL_PORT:-15432}"
MARIADB_PORT="${MARIADB_PORT:-13306}"
START_TIMEOUT="${SERVERS_START_TIMEOUT:-60}"
STOP_TIMEOUT="${SERVERS_STOP_TIMEOUT:-30}"
ALL=(mosquitto postgresql mariadb)

PG_BIN=/usr/lib/postgresql/15/bin
MQTT_USER=wsuser MQTT_PASSWORD=wspass
MARIADB_USER=wsuser MARIADB_PASSWORD=wspass
DATABASE=wstest

say() { echo "servers: $*"; }
die() { echo "servers: $*" >&2; exit 1; }
is_root() { [ "$(id -u)" = 0 ]; }

listening() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

port_of() {
  case "$1" in
    mosquitto) echo "$MQTT_PORT" ;;
    postgresql) echo "$PG_PORT" ;;
    mariadb) echo "$MARIADB_PORT" ;;
  esac
}

# --- installing ---------------------------------------------------------------------------

installed() {
  case "$1" in
    mosquitto) [ -x /usr/sbin/mosquitto ] && command -v mosquitto_passwd >/dev/null ;;
    postgresql) [ -x "$PG_BIN/postgres" ] && [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/psql" ] ;;
    mariadb) command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null &&
      command -v mariadb >/dev/null ;;
  esac
}

package_of() {
  case "$1" in
    mosquitto) echo mosquitto ;;
    postgresql) echo "postgresql-15 postgresql-client-15" ;;
    mariadb) echo "mariadb-server mariadb-client" ;;
  esac
}

install() {
  local name packages=()
  for name in "$@"; do
    # shellcheck disable=SC2207
    if ! installed "$name"; then packages+=($(package_of "$name")); fi
  done
  if [ "${#packages[@]}" = 0 ]; then return 0; fi
  if [ "${SERVERS_NO_INSTALL:-}" = 1 ]; then
    echo "servers: ${packages[*]} missing; install them first: make servers-installed" >&2
    exit 3
  fi
  if ! is_root; then
    echo "servers: ${packages[*]} missing; install them as root: tools/servers.sh install" >&2
    exit 3
  fi
  say "installing ${packages[*]} (apt-get; log in $S/apt.log)"
  local policy=/usr/sbin/policy-rc.d placed=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# tools/servers.sh: no service starts during its installs\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    placed=1
  fi
  local rc=0
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        "${packages[@]}"
  } > "$S/apt.log" 2>&1 || rc=$?
  if [ "$placed" = 1 ]; then rm -f "$policy"; fi
  if [ "$rc" != 0 ]; then
    tail -20 "$S/apt.log" >&2
    die "apt-get install ${packages[*]} failed ($rc)"
  fi
  for name in "$@"; do installed "$name" || die "$name: still missing after apt-get install"; done
}

# --- processes ----------------------------------------------------------------------------

# The PIDs of processes of NAME's binary whose command line names its folder: what a
# start left running, even when it failed before writing the PID file.
stray_pids() {
  local dir="$S/$1" binary cmdline pid
  case "$1" in
    mosquitto) binary=mosquitto ;;
    postgresql) binary=postgres ;;
    mariadb) binary=mariadbd ;;
  esac
  local argv=()
  for cmdline in /proc/[0-9]*/cmdline; do
    pid="${cmdline#/proc/}"
    pid="${pid%/cmdline}"
    [ "$pid" = "$$" ] && continue
    # (a process may end while we look: no complaint about its vanished cmdline)
    mapfile -d '' argv 2>/dev/null < "$cmdline" || continue
    [ "${#argv[@]}" -gt 0 ] || continue
    case "${argv[0]}" in "$binary" | */"$binary") ;; *) continue ;; esac
    case " ${argv[*]}" in *"$dir/"*) echo "$pid" ;; esac
  done
}

pid_of() {
  local file="$S/$1/server.pid" pid
  [ -s "$file" ] || return 1
  pid="$(cat "$file")"
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

# Wait until PID exits; false after SECONDS.
gone() {
  local pid="$1" deadline=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null; do
    # a child of this shell stays a zombie until reaped
    if [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ]; then wait "$pid" 2>/dev/null || true; return 0; fi
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# Wait until NAME answers on its port; fail early when its process has exited.
wait_ready() {
  local name="$1" pid="$2" port
  port="$(port_of "$name")"
  local deadline=$((SECONDS + START_TIMEOUT))
  until listening "$port"; do
    if ! kill -0 "$pid" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ]; then
      echo "servers: $name exited while starting; the end of $S/$name/server.log:" >&2
      tail -20 "$S/$name/server.log" >&2 || true
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "servers: $name did not answer on 127.0.0.1:$port in $START_TIMEOUT s; see $S/$name/server.log" >&2
      return 1
    fi
    sleep 0.1
  done
}

# --- mosquitto ----------------------------------------------------------------------------

start_mosquitto() {
  local dir="$S/mosquitto"
  mkdir -p "$dir"
  rm -f "$dir/passwd"
  mosquitto_passwd -c -b "$dir/passwd" "$MQTT_USER" "$MQTT_PASSWORD"
  chmod 600 "$dir/passwd"
  local user_line=""
  if is_root; then
    id mosquitto >/dev/null 2>&1 || die "the mosquitto system user is missing"
    user_line="user mosquitto"
    chown -R mosquitto: "$dir"
  fi
  cat > "$dir/mosquitto.conf" <<CONF
# written by tools/servers.sh
$user_line
per_listener_settings true
persistence false
log_dest stderr
log_type error
log_type warning
log_type notice
log_type information
connection_messages true

listener $MQTT_PORT 127.0.0.1
allow_anonymous false
password_file $dir/passwd

listener $MQTT_ANON_PORT 127.0.0.1
allow_anonymous true
CONF
  nohup /usr/sbin/mosquitto -c "$dir/mosquitto.conf" > "$dir/server.log" 2>&1 9>&- &
  echo $! > "$dir/server.pid"
  wait_ready mosquitto $! || return 1
  listening "$MQTT_ANON_PORT" || { echo "servers: mosquitto: no anonymous listener on $MQTT_ANON_PORT" >&2; return 1; }
}

# --- postgresql ---------------------------------------------------------------------------

# Run a command as the server's owner: the postgres system user when we are root.
as_pg() {
  if is_root; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_setup_sql() {
  cat <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ws_trust') THEN CREATE ROLE ws_trust LOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ws_md5') THEN CREATE ROLE ws_md5 LOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ws_scram') THEN CREATE ROLE ws_scram LOGIN; END IF;
END \$\$;
SET password_encryption = 'md5';
ALTER ROLE ws_md5 PASSWORD 'md5pass';
SET password_encryption = 'scram-sha-256';
ALTER ROLE ws_scram PASSWORD 'scrampass';
SELECT 'CREATE DATABASE $DATABASE' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$DATABASE')
\gexec
GRANT ALL ON DATABASE $DATABASE TO ws_trust, ws_md5, ws_scram;
\connect $DATABASE
GRANT ALL ON SCHEMA public TO ws_trust, ws_md5, ws_scram;
SQL
}

start_postgresql() {
  local dir="$S/postgresql"
  local data="$dir/data" sock="$dir/sock"
  mkdir -p "$dir" "$sock"
  if is_root; then
    id postgres >/dev/null 2>&1 || die "the postgres system user is missing"
    chown postgres: "$dir" "$sock"
  fi
  if [ ! -s "$data/PG_VERSION" ]; then
    rm -rf "$data"
    as_pg "$PG_BIN/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
      > "$dir/initdb.log" 2>&1 || { tail -20 "$dir/initdb.log" >&2; return 1; }
  fi
  as_pg tee "$data/pg_hba.conf" > /dev/null <<HBA
# written by tools/servers.sh: one authentication method per test user
# TYPE  DATABASE  USER      ADDRESS       METHOD
local   all       all                     trust
host    all       ws_trust  127.0.0.1/32  trust
host    all       ws_md5    127.0.0.1/32  md5
host    all       ws_scram  127.0.0.1/32  scram-sha-256
host    all       all       127.0.0.1/32  reject
host    all       all       ::1/128       reject
HBA
  # as root, runuser would stay the parent: exec the server as postgres with setpriv instead
  local run=()
  if is_root; then run=(setpriv --reuid=postgres --regid=postgres --init-groups --); fi
  (cd / && exec nohup "${run[@]}" "$PG_BIN/postgres" -D "$data" -k "$sock" -h 127.0.0.1 -p "$PG_PORT" \
    -c password_encryption=scram-sha-256 -c ssl=off -c fsync=off -c synchronous_commit=off \
    -c full_page_writes=off > "$dir/server.log" 2>&1 9>&-) &
  local pid=$!
  echo "$pid" > "$dir/server.pid"
  wait_ready postgresql "$pid" || return 1
  local deadline=$((SECONDS + START_TIMEOUT))
  until as_pg "$PG_BIN/pg_isready" -q -h "$sock" -p "$PG_PORT" -t 2; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "servers: postgresql not ready in $START_TIMEOUT s" >&2; return 1; }
    sleep 0.1
  done
  pg_setup_sql | as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$sock" -p "$PG_PORT" -U postgres \
    -d postgres > "$dir/setup.log" 2>&1 || { cat "$dir/setup.log" >&2; return 1; }
}

# --- mariadb ------------------------------------------------------------------------------

start_mariadb() {
  local dir="$S/mariadb"
  local data="$dir/data" user_line=""
  mkdir -p "$dir"
  if is_root; then
    id mysql >/dev/null 2>&1 || die "the mysql system user is missing"
    user_line="user = mysql"
    chown mysql: "$dir"
  fi
  cat > "$dir/my.cnf" <<CNF
# written by tools/servers.sh: the only option file this server reads (--defaults-file)
[client]
socket = $dir/mariadb.sock

[mariadbd]
$user_line
datadir = $data
socket = $dir/mariadb.sock
pid-file = $dir/mariadbd.pid
port = $MARIADB_PORT
bind-address = 127.0.0.1
skip-name-resolve
skip-ssl
require-secure-transport = OFF
log-error = $dir/server.log
skip-log-bin
innodb-buffer-pool-size = 64M
innodb-flush-log-at-trx-commit = 0
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
CNF
  if [ ! -d "$data/mysql" ]; then
    rm -rf "$data"
    local as_user=()
    if is_root; then as_user=(--user=mysql); fi
    mariadb-install-db --defaults-file="$dir/my.cnf" "${as_user[@]}" --skip-test-db \
      --auth-root-authentication-method=socket > "$dir/install-db.log" 2>&1 || { tail -20 "$dir/install-db.log" >&2; return 1; }
  fi
  (cd / && exec nohup mariadbd --defaults-file="$dir/my.cnf" > "$dir/server.out" 2>&1 9>&-) &
  local pid=$!
  echo "$pid" > "$dir/server.pid"
  wait_ready mariadb "$pid" || return 1
  # the account of the OS user that ran mariadb-install-db: unix_socket authentication
  mariadb --defaults-file="$dir/my.cnf" -u "$(id -un)" > "$dir/setup.log" 2>&1 <<SQL || { cat "$dir/setup.log" >&2; return 1; }
CREATE DATABASE IF NOT EXISTS $DATABASE;
DELETE FROM mysql.global_priv WHERE User = '';
CREATE OR REPLACE USER '$MARIADB_USER'@'127.0.0.1'
  IDENTIFIED VIA mysql_native_password USING PASSWORD('$MARIADB_PASSWORD');
CREATE OR REPLACE USER '$MARIADB_USER'@'localhost'
  IDENTIFIED VIA mysql_native_password USING PASSWORD('$MARIADB_PASSWORD');
GRANT ALL ON $DATABASE.* TO '$MARIADB_USER'@'127.0.0.1', '$MARIADB_USER'@'localhost';
FLUSH PRIVILEGES;
SQL
}

# --- start / stop -------------------------------------------------------------------------

stop_one() {
  local name="$1" pid pids signal=TERM
  # postgres: SIGINT is its fast shutdown (SIGTERM would wait for every client to leave)
  [ "$name" = postgresql ] && signal=INT
  pids="$( (pid_of "$name" || true; stray_pids "$name") | sort -u)"
  for pid in $pids; do kill -s "$signal" "$pid" 2>/dev/null || true; done
  for pid in $pids; do
    if ! gone "$pid" "$STOP_TIMEOUT"; then
      echo "servers: $name (PID $pid) still running after $STOP_TIMEOUT s: SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      gone "$pid" 5 || echo "servers: $name (PID $pid) survived SIGKILL" >&2
    fi
  done
  # postgres backends outlive a killed postmaster for a moment; anything left of ours goes
  for pid in $(stray_pids "$name"); do
    kill -KILL "$pid" 2>/dev/null || true
    gone "$pid" 5 || true
  done
  rm -f "$S/$name/server.pid"
  if [ -n "$pids" ]; then say "$name stopped"; else say "$name was not running"; fi
}

start_one() {
  local name="$1" port
  port="$(port_of "$name")"
  if pid_of "$name" >/dev/null && listening "$port"; then
    say "$name already running on 127.0.0.1:$port"
    return 0
  fi
  if listening "$port"; then
    die "$name: 127.0.0.1:$port answers, but not a server of $S/$name (another one runs there?)"
  fi
  stop_one "$name" > /dev/null # what a failed start left behind
  local began=$SECONDS rc=0
  # in a subshell outside any `if`, so that set -e stops the start at its first failure
  set +e
  ( set -e; "start_$name" )
  rc=$?
  set -e
  if [ "$rc" != 0 ]; then
    echo "servers: $name failed to start; stopping what it left" >&2
    stop_one "$name" >&2 || true
    exit 1
  fi
  say "$name ready on 127.0.0.1:$port (PID $(cat "$S/$name/server.pid"), $((SECONDS - began)) s)"
}

status_one() {
  local name="$1" port pid
  port="$(port_of "$name")"
  if pid="$(pid_of "$name")" && listening "$port"; then
    say "$name running on 127.0.0.1:$port (PID $pid)"
  else
    say "$name not running"
    return 1
  fi
}

names() {
  local name
  if [ "$#" = 0 ]; then set -- all; fi
  for name in "$@"; do
    case "$name" in
      all) echo "${ALL[@]}" ;;
      mosquitto | postgresql | mariadb) echo "$name" ;;
      *) die "unknown server $name (mosquitto, postgresql, mariadb or all)" ;;
    esac
  done
}

usage() { echo "usage: $0 install|start|stop|status [mosquitto|postgresql|mariadb|all]..." >&2; exit 2; }

command="${1:-}"
[ "$#" -gt 0 ] && shift
# shellcheck disable=SC2207
selected=($(names "$@" | tr ' ' '\n' | awk '!seen[$0]++'))
# One command at a time on this folder (two test sessions starting the same server...);
# the servers do not inherit the lock (9>&- where they start).
mkdir -p "$S"
exec 9> "$S/.lock"
flock -w "${SERVERS_LOCK_TIMEOUT:-600}" 9 || die "$S/.lock: another servers.sh still busy"
case "$command" in
  install) install "${selected[@]}" ;;
  start)
    install "${selected[@]}"
    for name in "${selected[@]}"; do start_one "$name"; done
    ;;
  stop) for name in "${selected[@]}"; do stop_one "$name"; done ;;
  status)
    rc=0
    for name in "${selected[@]}"; do status_one "$name" || rc=1; done
    exit "$rc"
    ;;
  *) usage ;;
esac
