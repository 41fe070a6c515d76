#!/usr/bin/env bash
# Instructions an encoding of each real command shape (resp-count.ts), a0565cd2's OneCopyCommand
# against the head's, warmed: callgrind's total with N=$N minus with N=$N/4, over 3N/4 (the first
# quarter takes V8's tiering up, which N=0 would leave in the difference). Counted: no bench lock.
# V8 single-threaded (its compiler and GC on the main thread), as par-cpu-parts.sh.
# Usage: [SHAPES="79 30 13 all"] bash scripts/toolchain.sh bash test/bench/resp-count.sh [N]
set -euo pipefail
N=${1:-2000}
cd "$(dirname "$0")/../.."
git show a0565cd2:services/core/src/lua-script.ts > test/bench/resp-base.generated.ts
trap 'rm -f test/bench/resp-base.generated.ts' EXIT
count() {
  FORM="$1" SHAPE="$2" N="$3" valgrind --tool=callgrind --callgrind-out-file=/dev/null --smc-check=all-non-file \
    node --single-threaded test/bench/resp-count.ts 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for shape in ${SHAPES:-79 41 30 13 all}; do
  for form in base head; do
    few=$(count "$form" "$shape" $((N / 4)))
    many=$(count "$form" "$shape" "$N")
    echo "shape $shape, $form: $(( (many - few) / (N - N / 4) )) instructions an encoding (N=$N: $many, N=$((N / 4)): $few)"
  done
done
