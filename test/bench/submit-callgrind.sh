#!/usr/bin/env bash
# The gateway's instructions a submit (round 44 `submit-peek`): `submit-cost.ts` (the real app in
# its own process on its own Redis, a keep-alive HTTP client in another process, the runs left
# queued) under callgrind with N=$N submits and with N=0, both after WARM (default 1000), the
# difference over N. Only the gateway's process is counted (callgrind does not follow the client
# or redis-server). Counted, not timed: no bench lock. Compare heads with ab.sh:
#   bash scripts/toolchain.sh bash test/bench/ab.sh e8feb7a0 1 "bash test/bench/submit-callgrind.sh 1000"
set -euo pipefail
N=${1:-1000}
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
export WARM=${WARM:-1000} ROUNDS=1 CLIENTS=1
per_op submit test/bench/submit-cost.ts "$N" HTTP 1
