#!/usr/bin/env bash
# One side of round 40 `bull-path`'s ABBA (run by ab.sh): the stamps of bull-path.patch applied,
# the pick-up's and the runner's end's rows printed, the stamps removed.
set -euo pipefail
git apply test/bench/bull-path.patch
out=$(mktemp)
KEEP=1 PERF=0 RUNS=${RUNS:-400} WARM=${WARM:-200} node test/bench/pickup-hop.ts > "$out" 2>&1 || { cat "$out"; exit 1; }
grep -E 'loopback|raw isolated|waited → takeHanded|Job.fromJSON  |fromJSON → BullMQ|processJob → processor|take → BullMQ processJob|all: runner `data` → processor|all: runner `data` → program' "$out" || true
dir=$(sed -n 's/^stamps kept in //p' "$out")
node test/bench/end-turn.ts "$dir" | sed -n '/the runner/,$p'
rm -rf "$dir" "$out"
