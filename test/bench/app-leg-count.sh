#!/usr/bin/env bash
# Instructions a request of each way of app-leg-count.ts: callgrind's total with N=$N minus with
# N=0, over N. Counted: no bench lock needed. V8 single-threaded so the counts repeat.
# Usage: [WAYS="post raw"] [APP_HTTP=<a0565cd2's app-http.ts>] bash scripts/toolchain.sh bash test/bench/app-leg-count.sh [N]
set -euo pipefail
N=${1:-2000}
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
for way in ${WAYS:-post raw raw-onread}; do
  per_op "$way" test/bench/app-leg-count.ts "$N" WAY "$way"
done
