#!/usr/bin/env bash
# Runs Ctrlplane's own Playwright API tests (their e2e/tests/api) against Flightdeck and prints the
# pass/fail summary (docs/development.md, "Ctrlplane's API tests").
#   scripts/ctrlplane-e2e.sh [playwright args, e.g. tests/api/resources.spec.ts -g "upsert"]
# Ctrlplane's e2e/ comes from CTRLPLANE_GIT_DIR (a clone or bare mirror of ctrlplanedev/ctrlplane),
# else from a shallow clone of CTRLPLANE_GIT_URL. The stack is a fresh `flightdeck start` from dist/
# on free ports with its data in the run's directory, stopped at the end; FLIGHTDECK_E2E_URL (the
# API's origin, e.g. http://127.0.0.1:8080) with FLIGHTDECK_ADMIN_TOKEN reuses a running one instead.
# The run's directory (CTRLPLANE_E2E_DIR, else a new temporary one) keeps the report and the logs.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
ours="$repo/scripts/ctrlplane-e2e"
run_dir=${CTRLPLANE_E2E_DIR:-$(mktemp -d /tmp/flightdeck-ctrlplane-e2e.XXXXXX)}
e2e="$run_dir/e2e"
say() { printf '[ctrlplane-e2e] %s\n' "$*" >&2; }

# 1. Ctrlplane's e2e/ folder.
if [[ ! -d "$e2e/tests/api" ]]; then
  mkdir -p "$run_dir"
  git_dir=${CTRLPLANE_GIT_DIR:-}
  if [[ -z "$git_dir" ]]; then
    git_dir="$run_dir/ctrlplane.git"
    say "cloning ${CTRLPLANE_GIT_URL:=https://github.com/ctrlplanedev/ctrlplane} (shallow)"
    git clone --quiet --bare --depth 1 "$CTRLPLANE_GIT_URL" "$git_dir"
  fi
  git --git-dir="$git_dir" archive "${CTRLPLANE_REF:-HEAD}" e2e | tar -x -C "$run_dir"
  say "Ctrlplane's e2e/ at $(git --git-dir="$git_dir" rev-parse --short "${CTRLPLANE_REF:-HEAD}") in $e2e"
fi

# 2. What their API tests import. Their package.json names pnpm workspace packages npm cannot
# resolve, so it is set aside for one with only the registry packages. Their database package
# (@ctrlplane/db) is stood in for by ours (scripts/ctrlplane-e2e/ctrlplane-db/client.cjs says how).
if [[ ! -d "$e2e/node_modules/@playwright/test" ]]; then
  [[ -f "$e2e/package.ctrlplane.json" ]] || mv "$e2e/package.json" "$e2e/package.ctrlplane.json"
  printf '{ "name": "ctrlplane-e2e-on-flightdeck", "private": true }\n' >"$e2e/package.json"
  say "installing the tests' npm dependencies"
  (cd "$e2e" && npm install --no-audit --no-fund --loglevel=error \
    @playwright/test@^1.51.0 openapi-fetch@^0.13.8 @faker-js/faker@^9.6.0 js-yaml@^4.1.1 \
    mustache@^4.2.0 handlebars@^4.7.8 uuid@^10.0.0 lodash date-fns ms zod >&2)
fi
rm -rf "$e2e/node_modules/@ctrlplane/db"
mkdir -p "$e2e/node_modules/@ctrlplane"
cp -r "$ours/ctrlplane-db" "$e2e/node_modules/@ctrlplane/db"
cp "$ours/playwright.config.mjs" "$e2e/flightdeck.config.mjs"

# 3. A Flightdeck stack: the given one, or a fresh one.
stack_pid=''
stop_stack() {
  if [[ -n "$stack_pid" ]] && kill -0 "$stack_pid" 2>/dev/null; then
    say "stopping the stack (pid $stack_pid)"
    kill -INT "$stack_pid"
    wait "$stack_pid" || true
  fi
}
trap stop_stack EXIT
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

if [[ -n "${FLIGHTDECK_E2E_URL:-}" ]]; then
  : "${FLIGHTDECK_ADMIN_TOKEN:?FLIGHTDECK_E2E_URL needs the stack\'s FLIGHTDECK_ADMIN_TOKEN}"
else
  say "building Flightdeck"
  (cd "$repo" && npm run --silent build >&2)
  FLIGHTDECK_ADMIN_TOKEN=$(node -p 'require("crypto").randomBytes(24).toString("hex")')
  api_port=$(free_port)
  FLIGHTDECK_E2E_URL="http://127.0.0.1:$api_port"
  log="$run_dir/flightdeck/start.log"
  say "starting Flightdeck at $FLIGHTDECK_E2E_URL (data and log in $run_dir/flightdeck)"
  mkdir -p "$run_dir/flightdeck"
  (
    cd "$run_dir/flightdeck"
    FLIGHTDECK_DATA_DIR="$run_dir/flightdeck/data" FLIGHTDECK_PORT=$api_port \
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
fi
export FLIGHTDECK_E2E_URL FLIGHTDECK_ADMIN_TOKEN

# 4. The workspace and two API keys, made through our API, where their setup project signs up in
# Ctrlplane's web UI.
mkdir -p "$e2e/.state"
node "$ours/workspace.mjs" >"$e2e/.state/workspace.json"
say "workspace $(node -p "require('$e2e/.state/workspace.json').id")"

# 5. Their API tests, and the summary.
say "running their API tests"
status=0
(cd "$e2e" && npx playwright test -c flightdeck.config.mjs "$@") || status=$?
node "$ours/summary.mjs" "$e2e/results.json"
say "report and logs in $run_dir"
exit "$status"
