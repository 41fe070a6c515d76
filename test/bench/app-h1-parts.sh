#!/usr/bin/env bash
# Instructions a part of app-h1-parts.ts (the gateway's own App client's pieces, no socket):
# callgrind's total with N=$N minus with N=0, over N. Counted: no bench lock needed.
# Usage: [PARTS="request answer-chunked answer-length deadline deadline-shared"] [H1_DIR=<e8feb7a0's files>] \
#   bash scripts/toolchain.sh bash test/bench/app-h1-parts.sh [N]
set -euo pipefail
N=${1:-4000}
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
for part in ${PARTS:-request answer-chunked answer-length deadline}; do
  per_op "$part" test/bench/app-h1-parts.ts "$N" PART "$part"
done
