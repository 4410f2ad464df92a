# Sourced by the harnesses that run another project's tests against Flightdeck (scripts/ctrlplane-e2e.sh,
# scripts/terraform-acceptance.sh): `start_stack <dir>` runs a fresh `flightdeck start` from dist/ on free
# ports with its data and its start.log in <dir>, and sets FLIGHTDECK_E2E_URL (the API's origin) and
# FLIGHTDECK_ADMIN_TOKEN; the stack stops when the script exits. With FLIGHTDECK_E2E_URL and
# FLIGHTDECK_ADMIN_TOKEN already set, the running stack they name is used instead. Needs `repo` and `say`.

stack_pid=''
stop_stack() {
  if [[ -n "$stack_pid" ]] && kill -0 "$stack_pid" 2>/dev/null; then
    say "stopping the stack (pid $stack_pid)"
    kill -INT "$stack_pid"
    wait "$stack_pid" || true
  fi
}
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

start_stack() {
  local dir=$1
  if [[ -n "${FLIGHTDECK_E2E_URL:-}" ]]; then
    : "${FLIGHTDECK_ADMIN_TOKEN:?FLIGHTDECK_E2E_URL needs the stack\'s FLIGHTDECK_ADMIN_TOKEN}"
    export FLIGHTDECK_E2E_URL FLIGHTDECK_ADMIN_TOKEN
    return
  fi
  trap stop_stack EXIT
  say "building Flightdeck"
  (cd "$repo" && npm run --silent build >&2)
  FLIGHTDECK_ADMIN_TOKEN=$(node -p 'require("crypto").randomBytes(24).toString("hex")')
  local api_port log="$dir/start.log"
  api_port=$(free_port)
  FLIGHTDECK_E2E_URL="http://127.0.0.1:$api_port"
  say "starting Flightdeck at $FLIGHTDECK_E2E_URL (data and log in $dir)"
  mkdir -p "$dir"
  (
    cd "$dir"
    FLIGHTDECK_DATA_DIR="$dir/data" FLIGHTDECK_PORT=$api_port \
      FLIGHTDECK_ADMIN_TOKEN=$FLIGHTDECK_ADMIN_TOKEN FLIGHTDECK_METRICS_PORT=off \
      FLIGHTDECK_EMBEDDED_PG_PORT=$(free_port) FLIGHTDECK_EMBEDDED_TEMPORAL_PORT=$(free_port) \
      FLIGHTDECK_EMBEDDED_TEMPORAL_UI_PORT=$(free_port) \
      exec node "$repo/dist/cli/main.js" start
  ) >"$log" 2>&1 &
  stack_pid=$!
  for _ in $(seq 1 180); do
    grep -q 'Flightdeck is running' "$log" && break
    if ! kill -0 "$stack_pid" 2>/dev/null; then
      tail -n 30 "$log" >&2
      say "flightdeck start exited before it was running"
      exit 1
    fi
    sleep 1
  done
  grep -q 'Flightdeck is running' "$log" || { say "no stack after 180 s (see $log)"; exit 1; }
  export FLIGHTDECK_E2E_URL FLIGHTDECK_ADMIN_TOKEN
}
