#!/usr/bin/env bash
# Instructions a call of each part of par-cpu-parts.ts, before (d92635a's form) and after (the
# head's): callgrind's total with N=$N minus with N=0, over N. Counted: no bench lock needed.
# V8 runs single-threaded (its compiler and GC on the main thread), so the counts repeat.
# Usage: [PARTS="hmac sig opid"] bash scripts/toolchain.sh bash test/bench/par-cpu-parts.sh [N]
set -euo pipefail
N=${1:-2000}
cd "$(dirname "$0")/../.."
count() {
  PART="$1" N="$2" valgrind --tool=callgrind --callgrind-out-file=/dev/null --smc-check=all-non-file \
    node --single-threaded test/bench/par-cpu-parts.ts 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for part in ${PARTS:-hmac sig opid}; do
  for form in before after; do
    zero=$(count "$part-$form" 0)
    many=$(count "$part-$form" "$N")
    echo "$part-$form: $(( (many - zero) / N )) instructions a call (N=$N: $many, N=0: $zero)"
  done
done
