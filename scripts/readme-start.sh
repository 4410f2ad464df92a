#!/usr/bin/env bash
# The README's start command as a new user runs it, in this checkout (in CI, a clean clone):
# `npm start` builds, prints its banner, serves the key it created, and Ctrl-C stops every process
# it started. Free ports and a data directory of its own, so it never meets another stack.
set -euo pipefail
cd "$(dirname "$0")/.."

data=$(mktemp -d /tmp/flightdeck-readme-start-XXXXXX)
# The embedded PostgreSQL runs as the postgres user when we are root: it must enter the directory.
chmod 755 "$data"
free_port() { node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
export FLIGHTDECK_DATA_DIR=$data
FLIGHTDECK_PORT=$(free_port)
export FLIGHTDECK_PORT FLIGHTDECK_METRICS_PORT=$(free_port) FLIGHTDECK_EMBEDDED_PG_PORT=$(free_port)
export FLIGHTDECK_EMBEDDED_TEMPORAL_PORT=$(free_port) FLIGHTDECK_EMBEDDED_TEMPORAL_UI_PORT=$(free_port)
unset DATABASE_URL TEMPORAL_ADDRESS
log=$data/start.log
fail() {
  echo "readme-start: $1" >&2
  echo "--- npm start output ---" >&2
  tail -n 40 "$log" >&2
  exit 1
}

# A process group of its own, so Ctrl-C can be sent as a terminal sends it: to the whole group.
setsid npm start >"$log" 2>&1 &
group=$!
trap 'kill -KILL -- "-$group" 2>/dev/null || true; rm -rf "$data"' EXIT

for _ in $(seq 600); do
  grep -q 'Press Ctrl-C to stop.' "$log" && break
  kill -0 "$group" 2>/dev/null || fail "npm start exited before its banner"
  sleep 0.5
done
grep -q 'Press Ctrl-C to stop.' "$log" || fail "no banner within 300 s"
grep -A6 'Flightdeck is running' "$log"

key=$(node -p "require('$data/credentials.json').apiKey")
workspace=$(node -p "require('$data/credentials.json').workspaceId")
api="http://127.0.0.1:$FLIGHTDECK_PORT/v1/workspaces/$workspace"
status() { curl -s -o /dev/null -w '%{http_code}' -H "x-api-key: $key" -H 'content-type: application/json' "$@"; }
[ "$(status "$api")" = 200 ] || fail "GET the default workspace with the banner's key did not answer 200"
[ "$(status -d '{"name":"Checkout","slug":"checkout"}' "$api/deployments")" = 202 ] ||
  fail "POST a deployment (the README's \"Try it\") did not answer 202"
echo "readme-start: the default workspace and a new deployment answered 200 and 202"

kill -INT -- "-$group"
for _ in $(seq 120); do
  pgrep -f "$data" >/dev/null || break
  sleep 0.5
done
if pgrep -af "$data"; then fail "processes left 60 s after Ctrl-C (listed above)"; fi
echo "readme-start: Ctrl-C stopped every process"
