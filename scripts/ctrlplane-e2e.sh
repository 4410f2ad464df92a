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

# 3. A Flightdeck stack: the given one, or a fresh one (scripts/lib/flightdeck-stack.sh).
source "$repo/scripts/lib/flightdeck-stack.sh"
start_stack "$run_dir/flightdeck"

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
