#!/bin/bash
# One build, the runner's registration form alternated (ISLET_HANDOFF_COMPACT_TERMS off, on, on,
# off: ABBA; ab.sh compares commits at their defaults, and this flag defaults off): one client's
# trivial runs and their stages (sequential.ts, STAGES=1) per side. Under the bench lock:
#   flock /work/wt/bench.lock bash scripts/toolchain.sh bash test/bench/handoff-terms-abba.sh
set -u
cd "$(dirname "$0")/../.."
node services/engine/src/host-build.ts > /dev/null 2>&1
for side in ${SIDES:-off on on off}; do
  echo "== $side $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  env ISLET_HANDOFF_COMPACT_TERMS="$side" STAGES=1 RUNS="${RUNS:-1500}" node test/bench/sequential.ts 2>&1 |
    grep -v '^\[ioredis\]' || true
done
