#!/usr/bin/env bash
# `npm test`. The tools the integration tests need (Temporal's CLI and OPA) are found in the cache or,
# on a machine's first run, built from Go modules: found, they are there within seconds, and one jest
# run serves the unit and integration tests side by side; being built (minutes), the unit tests run
# meanwhile and the integration tests after. Then the noisy-neighbour test on its own (Temporal at a
# lower CPU priority, as `flightdeck start` runs it).
# Arguments go to one plain jest run instead: `npm test -- test/unit/gates.test.ts`.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ $# -gt 0 ]; then exec npx jest "$@"; fi

# Three tests read Ctrlplane's OpenAPI document, kept beside the repository. Where it is missing they
# fail saying so; outside CI, on a machine without a copy, they are skipped instead, and this says so.
if [ -z "${CI:-}" ] && [ -z "${FLIGHTDECK_CTRLPLANE_REFERENCE:-}" ] &&
  ! npx tsx -e "process.exit(require('./test/helpers/ctrlplaneReference').referenceAvailable() ? 0 : 1)" 2>/dev/null; then
  echo "npm test: Ctrlplane's reference document is not beside this checkout: the 3 tests that read it are skipped (FLIGHTDECK_CTRLPLANE_REFERENCE=<path> runs them)" >&2
  export FLIGHTDECK_CTRLPLANE_REFERENCE=none
fi

noisy=/test/integration/security/noisyNeighbour
tools_status=$(mktemp)
trap 'rm -f "$tools_status"' EXIT
{
  npx tsx cli/main.ts temporal ensure && npx tsx cli/main.ts opa ensure
  echo $? >"$tools_status"
} 2>&1 | sed -u 's/^/[tools] /' &
tools=$!

tools_known() { [ -s "$tools_status" ]; }
tools_got() {
  wait "$tools"
  [ "$(cat "$tools_status")" = 0 ] && return 0
  echo "npm test: the Temporal CLI or OPA could not be got (see [tools] above)" >&2
  exit 1
}

for _ in $(seq 30); do
  tools_known && break
  sleep 1
done
failed=0
if tools_known; then
  tools_got
  npx jest --testPathIgnorePatterns "$noisy" || failed=1
else
  npx jest --selectProjects unit || failed=1
  tools_got
  npx jest --testPathIgnorePatterns "$noisy" --selectProjects integration || failed=1
fi
# The path before --selectProjects, which would take it for a project name.
FLIGHTDECK_TEST_BACKGROUND_NICENESS=10 npx jest "$noisy" --selectProjects integration || failed=1
exit "$failed"
