#!/usr/bin/env bash
# Instructions a call of each part of par-cpu-parts.ts, before (d92635a's form) and after (the
# head's): callgrind's total with N=$N minus with N=0, over N. Counted: no bench lock needed.
# V8 runs single-threaded (its compiler and GC on the main thread), so the counts repeat.
# Usage: [PARTS="hmac sig opid"] bash scripts/toolchain.sh bash test/bench/par-cpu-parts.sh [N]
set -euo pipefail
N=${1:-2000}
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
for part in ${PARTS:-hmac sig opid}; do
  for form in before after; do
    per_op "$part-$form" test/bench/par-cpu-parts.ts "$N" PART "$part-$form"
  done
done
