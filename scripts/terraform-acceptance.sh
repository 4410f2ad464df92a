#!/usr/bin/env bash
# Runs the acceptance tests of Ctrlplane's Terraform provider (ctrlplanedev/terraform-provider-ctrlplane,
# internal/provider's TestAcc*) with OpenTofu against Flightdeck and prints the pass/fail summary, then
# applies one of the provider's examples (gradual-rollout) and plans it again, which must show no
# changes (docs/development.md, "Ctrlplane's Terraform provider").
#   scripts/terraform-acceptance.sh [a go test -run pattern, e.g. 'TestAccPolicy']
# The provider's source comes from TFP_GIT_DIR (a clone or bare mirror), else a shallow clone of
# TFP_GIT_URL. OpenTofu (OPENTOFU_VERSION, from its Go module) and the provider (its binary and its
# compiled acceptance tests, by commit) are built once into ~/.cache/flightdeck/. The stack is the
# one scripts/lib/flightdeck-stack.sh starts (or names). TERRAFORM_EXAMPLE picks another example, or
# none when empty. The run's directory (TERRAFORM_ACC_DIR, else a new temporary one) keeps the logs.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
ours="$repo/scripts/terraform-acceptance"
run_dir=${TERRAFORM_ACC_DIR:-$(mktemp -d /tmp/flightdeck-terraform-acc.XXXXXX)}
cache="${XDG_CACHE_HOME:-$HOME/.cache}/flightdeck"
tofu_version=${OPENTOFU_VERSION:-v1.10.10}
example=${TERRAFORM_EXAMPLE-gradual-rollout}
say() { printf '[terraform-acceptance] %s\n' "$*" >&2; }
mkdir -p "$run_dir" "$cache"
# The Go builds share the machine: one package at a time.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-p=1"

# 1. OpenTofu, built from its Go module (go install refuses the module's replace directive).
tofu="$cache/opentofu-$tofu_version/tofu"
if [[ ! -x "$tofu" ]]; then
  say "building OpenTofu $tofu_version (minutes, once)"
  src=$(cd "$run_dir" && GOFLAGS=-mod=mod go mod download -json "github.com/opentofu/opentofu@$tofu_version" |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const m=JSON.parse(s);if(m.Error)throw new Error(m.Error);console.log(m.Dir)})')
  rm -rf "$run_dir/opentofu"
  cp -r "$src" "$run_dir/opentofu" && chmod -R u+w "$run_dir/opentofu"
  (cd "$run_dir/opentofu" && go build -o "$tofu.partial" ./cmd/tofu) && mv "$tofu.partial" "$tofu"
  rm -rf "$run_dir/opentofu"
fi
say "$("$tofu" version | head -n 1)"

# 2. The provider's source, its binary and its compiled acceptance tests.
git_dir=${TFP_GIT_DIR:-}
if [[ -z "$git_dir" ]]; then
  git_dir="$run_dir/provider.git"
  if [[ ! -d "$git_dir" ]]; then
    say "cloning ${TFP_GIT_URL:=https://github.com/ctrlplanedev/terraform-provider-ctrlplane} (shallow)"
    git clone --quiet --bare --depth 1 "$TFP_GIT_URL" "$git_dir"
  fi
fi
rev=$(git --git-dir="$git_dir" rev-parse --short "${TFP_REF:-HEAD}")
rm -rf "$run_dir/provider" && mkdir -p "$run_dir/provider"
git --git-dir="$git_dir" archive "$rev" | tar -x -C "$run_dir/provider"
bin_dir="$cache/terraform-provider-ctrlplane-$rev"
if [[ ! -x "$bin_dir/provider.test" ]]; then
  say "building the provider at $rev and its acceptance tests (minutes, once)"
  mkdir -p "$bin_dir"
  (cd "$run_dir/provider" && go build -o "$bin_dir/terraform-provider-ctrlplane" . &&
    go test -c -o "$bin_dir/provider.test.partial" ./internal/provider) &&
    mv "$bin_dir/provider.test.partial" "$bin_dir/provider.test"
fi
say "provider at $rev"

# 3. A Flightdeck stack, and a workspace with its API key made through our API.
source "$repo/scripts/lib/flightdeck-stack.sh"
start_stack "$run_dir/flightdeck"
workspace() { node "$repo/scripts/ctrlplane-e2e/workspace.mjs"; }
field() { node -p "JSON.parse(process.argv[1]).$2" "$1"; }

# 4. Their acceptance tests, unchanged: the provider in-process, OpenTofu as the CLI, the provider
# addressed as OpenTofu's registry names `ctrlplanedev/ctrlplane`.
tests_ws=$(workspace)
say "acceptance tests in workspace $(field "$tests_ws" slug)"
status=0
(
  cd "$run_dir/provider/internal/provider"
  TF_ACC=1 TF_ACC_TERRAFORM_PATH="$tofu" TF_ACC_PROVIDER_HOST=registry.opentofu.org \
    TF_ACC_PROVIDER_NAMESPACE=ctrlplanedev TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1 \
    CTRLPLANE_URL="$FLIGHTDECK_E2E_URL" CTRLPLANE_API_KEY=$(field "$tests_ws" apiKey) \
    CTRLPLANE_WORKSPACE=$(field "$tests_ws" slug) \
    go tool test2json -t "$bin_dir/provider.test" -test.v=test2json -test.timeout=30m \
    -test.run "${1:-TestAcc}"
) >"$run_dir/results.jsonl" 2>&1 || status=$?
node "$ours/summary.mjs" "$run_dir/results.jsonl" || status=1

# 5. The example: applied in a workspace of its own, then planned again.
if [[ -n "$example" ]]; then
  example_ws=$(workspace)
  dir="$run_dir/example-$example"
  rm -rf "$dir" && cp -r "$run_dir/provider/examples/$example" "$dir"
  cat >"$run_dir/tofurc" <<TOFURC
provider_installation {
  dev_overrides { "registry.opentofu.org/ctrlplanedev/ctrlplane" = "$bin_dir" }
  direct {}
}
TOFURC
  export TF_CLI_CONFIG_FILE="$run_dir/tofurc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
  export TF_VAR_url="$FLIGHTDECK_E2E_URL" TF_VAR_api_key=$(field "$example_ws" apiKey)
  export TF_VAR_workspace=$(field "$example_ws" slug)
  say "example $example: apply in workspace $TF_VAR_workspace"
  if "$tofu" -chdir="$dir" apply -auto-approve -input=false -no-color >"$run_dir/example-apply.log" 2>&1; then
    plan=0
    "$tofu" -chdir="$dir" plan -detailed-exitcode -input=false -no-color >"$run_dir/example-plan.log" 2>&1 ||
      plan=$?
    printf '\nExample %s, plan after apply: %s\n' "$example" \
      "$(grep -E '^(No changes\.|Plan: )' "$run_dir/example-plan.log" || tail -n 1 "$run_dir/example-plan.log")"
    if [[ $plan -ne 0 ]]; then
      status=1
      grep -E '^\s+[~+-] |must be replaced|Error' "$run_dir/example-plan.log" | head -n 40 || true
    fi
  else
    status=1
    printf '\nExample %s: apply failed\n' "$example"
    tail -n 30 "$run_dir/example-apply.log"
  fi
fi
say "logs in $run_dir"
exit "$status"
