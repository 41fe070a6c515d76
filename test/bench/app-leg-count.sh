#!/usr/bin/env bash
# Instructions a request of each way of app-leg-count.ts: callgrind's total with N=$N minus with
# N=0, over N. Counted: no bench lock needed. V8 single-threaded so the counts repeat.
# Usage: [WAYS="post raw"] [APP_HTTP=<a0565cd2's app-http.ts>] bash scripts/toolchain.sh bash test/bench/app-leg-count.sh [N]
set -euo pipefail
N=${1:-2000}
cd "$(dirname "$0")/../.."
count() {
  WAY="$1" N="$2" valgrind --tool=callgrind --callgrind-out-file=/dev/null --smc-check=all-non-file \
    node --single-threaded test/bench/app-leg-count.ts 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for way in ${WAYS:-post raw raw-onread}; do
  zero=$(count "$way" 0)
  many=$(count "$way" "$N")
  echo "$way: $(( (many - zero) / N )) instructions a request (N=$N: $many, N=0: $zero)"
done
