#!/usr/bin/env bash
# Bench only (round 38, `gw-memory`): the chart pod's memory policy timed against an unconstrained
# heap. Each argument is a side, `none` or `limit` (e.g. `none limit limit none`): `young-gen.ts`
# (WARM=3000 RUNS=3000 SEQ_RUNS=2000 unless set) as is, or under `in-memory-limit.sh` with
# LIMIT_BYTES (default 536870912, the chart's 512Mi), where Node gives V8 an old space of half the
# limit and V8 caps its heap growing factor at 1.3. Run it under the bench lock:
#   flock /work/wt/bench.lock test/bench/limit-abba.sh none limit limit none
set -uo pipefail
cd "$(dirname "$0")/../.."
export WARM="${WARM:-3000}" RUNS="${RUNS:-3000}" SEQ_RUNS="${SEQ_RUNS:-2000}"
for side in "$@"; do
  echo "### side $side $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  if [[ $side == limit ]]; then
    test/bench/in-memory-limit.sh "${LIMIT_BYTES:-536870912}" bash scripts/toolchain.sh node test/bench/young-gen.ts
  else
    bash scripts/toolchain.sh node test/bench/young-gen.ts
  fi 2>&1 | grep -v '^\[' | grep -vi warn
done
