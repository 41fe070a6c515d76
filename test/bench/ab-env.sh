#!/usr/bin/env bash
# Interleaved before/after of a bench command on one build, alternating one setting (round 44
# `outcome-seal`: a writer behind a config flag that defaults off, which ab.sh's default settings
# would not turn on): the command with VAR=A, then B, B, A (ABBA, so a machine that drifts during
# the runs does not favour one side). The cluster's processes inherit VAR (devstack `inheritedEnv`).
#
#   bash test/bench/ab-env.sh <VAR> <A> <B> [cycles] [command]
#   bash test/bench/ab-env.sh ISLET_CALL_ONE_SEAL false true 1 "WARM=80 RUNS=150 node test/bench/par-cpu.ts"
set -euo pipefail
cd "$(dirname "$0")/../.."
VAR=${1:?setting}
A=${2:?first value}
B=${3:?second value}
CYCLES=${4:-1}
CMD=${5:-BENCH_SECONDS=3 node test/bench/cluster-bench.ts}
[ -d .toolchain/node/bin ] && export PATH="$PWD/.toolchain/node/bin:$PATH"
side() {
  echo "== $VAR=$1 $(git rev-parse --short HEAD) $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  env "$VAR=$1" bash -c "$CMD" 2>&1 | grep -v '^\[ioredis\]' || true
}
for _ in $(seq 1 "$CYCLES"); do side "$A"; side "$B"; side "$B"; side "$A"; done
