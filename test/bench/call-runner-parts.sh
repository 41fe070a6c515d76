#!/usr/bin/env bash
# Instructions a part of call-runner-parts.ts (the runner's pieces of a lone binding call, no
# socket): callgrind's total with N=$N minus with N=0, over N. Counted: no bench lock needed.
# Usage: [PARTS="answer request parse request-now parse-now settle"] [ENGINE_DIR=<a copy of the base's engine src in the tree>] [RUNNER_DIR=<the base's files>] bash scripts/toolchain.sh bash test/bench/call-runner-parts.sh [N]
set -euo pipefail
N=${1:-4000}
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
for part in ${PARTS:-answer}; do
  QUIET=1 per_op "$part" test/bench/call-runner-parts.ts "$N" PART "$part"
done
