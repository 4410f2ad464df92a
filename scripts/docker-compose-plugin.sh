#!/usr/bin/env bash
# Prints a DOCKER_CONFIG directory whose cli-plugins/ holds the docker compose plugin, so that
# `DOCKER_CONFIG=<dir> docker compose config` can check docker-compose.yml on machines whose docker
# client lacks the plugin (Debian's docker.io has none). The plugin is a Go program: it is built
# from Go modules once per machine into the user cache (about 3 minutes on 2 cores), as the Temporal
# CLI is. Only `config` is ever run with it; no Docker engine is needed for that.
set -euo pipefail

VERSION=v2.29.7
cache="${XDG_CACHE_HOME:-$HOME/.cache}/flightdeck"
dir="$cache/docker-compose-$VERSION"

if [ ! -x "$dir/cli-plugins/docker-compose" ]; then
  command -v go >/dev/null || { echo "go is needed to build the docker compose plugin" >&2; exit 1; }
  mkdir -p "$cache"
  build=$(mktemp -d "$dir.build-XXXXXX")
  trap 'rm -rf "$build"' EXIT
  echo "Building docker compose $VERSION from Go modules (first run only)..." >&2
  CGO_ENABLED=0 GOBIN="$build/bin" GOFLAGS=-mod=mod \
    go install "github.com/docker/compose/v2/cmd@$VERSION"
  mkdir -p "$build/cli-plugins"
  mv "$build/bin/cmd" "$build/cli-plugins/docker-compose"
  rm -rf "$build/bin"
  # One rename: a concurrent or interrupted build never leaves a half-filled directory behind.
  mv -T "$build" "$dir" 2>/dev/null || true
fi
echo "$dir"
