#!/usr/bin/env bash
# Runs Ctrlplane's real CLI, ctrlc, against a running Flightdeck: `apply -f` of a Resource document
# and of a multi-document file (directly, then through a resource provider), `api get
# release-targets -f` (the preview), `api upsert version`, `api plan version` (a deployment plan),
# `api get resources`, then `ctrlc ui` (its terminal UI, in a detached tmux session): the resources,
# deployments, environments, versions and jobs views each drawn with this check's records and no
# error. Not part of CI (it builds ctrlc from a checkout of ctrlplanedev/cli; the UI needs tmux).
#
#   npm start                                      # in another terminal, or any running Flightdeck
#   CTRLC_SOURCE=/path/to/ctrlplanedev-cli scripts/ctrlc-check.sh
#
# CTRLC_SOURCE  a checkout of github.com/ctrlplanedev/cli (built once into $CTRLC_BIN), or
# CTRLC_BIN     a built ctrlc (default: .flightdeck/ctrlc/ctrlc)
# FLIGHTDECK_URL, FLIGHTDECK_API_KEY, FLIGHTDECK_WORKSPACE_ID
#               default: http://127.0.0.1:8080 and what `npm start` saved in .flightdeck/credentials.json
set -euo pipefail
cd "$(dirname "$0")/.."

credentials=.flightdeck/credentials.json
from_credentials() { node -p "require('./$credentials').$1" 2>/dev/null || true; }
url=${FLIGHTDECK_URL:-http://127.0.0.1:8080}
key=${FLIGHTDECK_API_KEY:-$(from_credentials apiKey)}
workspace=${FLIGHTDECK_WORKSPACE_ID:-$(from_credentials workspaceId)}
if [[ -z "$key" || -z "$workspace" ]]; then
  echo "Set FLIGHTDECK_API_KEY and FLIGHTDECK_WORKSPACE_ID, or run \`npm start\` here first." >&2
  exit 2
fi

bin=$(realpath -m "${CTRLC_BIN:-.flightdeck/ctrlc/ctrlc}")
if [[ ! -x "$bin" ]]; then
  if [[ -z "${CTRLC_SOURCE:-}" ]]; then
    echo "No ctrlc at $bin: set CTRLC_SOURCE to a checkout of github.com/ctrlplanedev/cli (or CTRLC_BIN)." >&2
    exit 2
  fi
  echo "== building ctrlc from $CTRLC_SOURCE (once; a few minutes)"
  mkdir -p "$(dirname "$bin")"
  (cd "$CTRLC_SOURCE" && CGO_ENABLED=0 go build -o "$bin" ./cmd/ctrlc)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# ctrlc writes its settings to ~/.ctrlc.yaml: keep them out of the real home.
export HOME=$work
ctrlc() { "$bin" --url "$url" --api-key "$key" --workspace "$workspace" "$@"; }

api() {
  curl -sf -H "x-api-key: $key" -H 'content-type: application/json' -X "$1" \
    "$url/v1/workspaces/$workspace$2" ${3:+-d "$3"}
}
id_of() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).id))'; }

suffix=$(date +%s)
echo "== records for the preview: a system, an environment for env=ctrlc, a deployment"
system=$(api POST /systems "{\"name\":\"ctrlc check $suffix\"}" | id_of)
environment=$(api POST /environments "{\"name\":\"ctrlc-$suffix\",\"resourceSelector\":\"resource.metadata['env'] == 'ctrlc-$suffix'\"}" | id_of)
deployment=$(api POST /deployments "{\"name\":\"ctrlc-$suffix\",\"slug\":\"ctrlc-$suffix\"}" | id_of)
api PUT "/systems/$system/environments/$environment" >/dev/null
api PUT "/systems/$system/deployments/$deployment" >/dev/null

cat >"$work/resource.yaml" <<YAML
type: Resource
name: ctrlc-node-$suffix
identifier: ctrlc/node-$suffix
kind: Server
version: ctrlplane.dev/v1
config: { ip: 10.0.0.1 }
metadata: { env: ctrlc-$suffix }
variables: { region: eu-west-1 }
YAML
cat >"$work/multi.yaml" <<YAML
type: Resource
name: ctrlc-a-$suffix
identifier: ctrlc/a-$suffix
kind: Server
version: ctrlplane.dev/v1
metadata: { env: ctrlc-$suffix }
---
type: Resource
name: ctrlc-b-$suffix
identifier: ctrlc/b-$suffix
kind: Database
version: ctrlplane.dev/v1
metadata: { env: other }
YAML

run() {
  echo
  echo "\$ ctrlc $*"
  ctrlc "$@"
}
run apply -f "$work/resource.yaml"
run apply -f "$work/multi.yaml"
run apply -f "$work/multi.yaml" --provider "ctrlc-check-$suffix"
run api get release-targets -f "$work/resource.yaml"
run api upsert version --workspace "$workspace" --deployment "$deployment" --tag "v$suffix"
run api plan version --workspace "$workspace" --deployment "$deployment" --tag "v$suffix-next"
run api get resources

# What the pane of the tmux session shows now.
screen() { tmux capture-pane -p -t "$session"; }
# Opens a view the way a user does (`:` then its name) and waits for a row that shows `expected`:
# its first 8 characters, as the UI cuts a long value to its column's width (a tag to 8).
ui_view() {
  local view=$1 expected=${2:0:8}
  tmux send-keys -t "$session" ':'
  sleep 0.5
  tmux send-keys -t "$session" "$view" Enter
  for _ in $(seq 1 40); do
    if screen | grep -qE 'Error:|panic:'; then
      echo "ctrlc ui, $view view:" >&2
      screen >&2
      return 1
    fi
    if screen | grep -qF -- "$expected"; then
      echo "ctrlc ui: the $view view shows $expected"
      return 0
    fi
    sleep 0.25
  done
  echo "ctrlc ui, $view view: no row with $expected after 10 s" >&2
  screen >&2
  return 1
}
echo
echo "\$ ctrlc ui"
session="ctrlc-ui-$suffix"
# The pane stays after ctrlc exits, so a panic's message can still be read.
tmux new-session -d -s "$session" -x 200 -y 50 \
  "HOME='$HOME' '$bin' ui --url '$url' --api-key '$key' --workspace '$workspace' --refresh 0; sleep 60"
trap 'tmux kill-session -t "$session" 2>/dev/null; rm -rf "$work"' EXIT
sleep 2
ui_view resources "ctrlc-a-$suffix"
ui_view deployments "ctrlc-$suffix"
ui_view environments "ctrlc-$suffix"
ui_view versions "v$suffix"
ui_view jobs "ctrlc-$suffix"
tmux send-keys -t "$session" q
echo
echo "== every command succeeded"
