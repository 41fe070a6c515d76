#!/usr/bin/env bash
# Instructions an op of call-one-seal-parts.ts (round 44 `outcome-seal`): a binding call's seals on
# the gateway with its `call` event sealed (`sealed`, ISLET_CALL_ONE_SEAL off, the default) and in
# the one-seal form (`one`), and the event alone (`event-sealed`, `event-one`): callgrind's total
# with N=$N minus with N=0, over N. Counted: no bench lock needed.
# Usage: [PARTS="sealed one event-sealed event-one"] bash scripts/toolchain.sh bash test/bench/call-one-seal-parts.sh [N]
set -euo pipefail
N=${1:-2000}
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
for part in ${PARTS:-sealed one event-sealed event-one}; do  # also `default` (round 45)
  per_op "$part" test/bench/call-one-seal-parts.ts "$N" PART "$part"
done
