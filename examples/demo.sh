#!/usr/bin/env bash
# `make demo`: copy the example memdir to a scratch directory and show memdir's main job on it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
memdir="${MEMDIR_BIN:-$here/../.venv/bin/memdir}"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r "$here/memdir" "$scratch/memory"
export MEMDIR="$scratch/memory" MEMDIR_NOW=2026-11-22T09:00:00Z
run() { printf '\n$ %s\n' "$*"; "$@"; }
run "$memdir" list
run "$memdir" index
run "$memdir" search "Lisbon"
run "$memdir" similar "who in my family works in healthcare?" --k 3
run "$memdir" recall "when should I schedule meetings with Sam?" --explain
