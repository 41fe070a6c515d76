#!/usr/bin/env bash
# Interleaved before/after of a bench command on this machine: `services/` from BASE, then from the
# head, in the order base, head, head, base (ABBA, so a machine that drifts during the runs does
# not favour one side); `test/` stays the head's, so both sides run the same bench.
#
#   bash test/bench/ab.sh <base-rev> [cycles] [command]
#   bash test/bench/ab.sh f7f2d0d 1 "BENCH_SECONDS=3 node test/bench/cluster-bench.ts"
#
# It checks out files under services/ and puts the head's back at the end (also on Ctrl-C), so it
# refuses to start with uncommitted changes there. Each side's sandbox host is rebuilt
# (host-build.ts): a host whose build does not match its sources runs from TypeScript, slower.
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${1:?base revision}
CYCLES=${2:-1}
CMD=${3:-BENCH_SECONDS=3 node test/bench/cluster-bench.ts}
[ -d .toolchain/node/bin ] && export PATH="$PWD/.toolchain/node/bin:$PATH"
if [ -n "$(git status --porcelain -- services)" ]; then
  echo "ab.sh: services/ has uncommitted changes; commit or stash them first" >&2
  exit 2
fi
HEAD=$(git rev-parse --short HEAD)
restore() {
  git checkout -q "$HEAD" -- services
  # files only the base has (a script renamed since) were added by its checkout: drop them again
  git diff --cached --name-only --diff-filter=A "$HEAD" -- services | xargs -r git rm -qf
  node services/engine/src/host-build.ts > /dev/null 2>&1 || true
}
trap restore EXIT
side() {
  git checkout -q "$1" -- services
  node services/engine/src/host-build.ts > /dev/null 2>&1
  echo "== $1 $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  bash -c "$CMD" 2>&1 | grep -v '^\[ioredis\]' || true
}
for _ in $(seq 1 "$CYCLES"); do side "$BASE"; side "$HEAD"; side "$HEAD"; side "$BASE"; done
