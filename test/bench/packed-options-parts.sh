#!/usr/bin/env bash
# Instructions a submit's packing of its job's options (packed-options-parts.ts): callgrind's total
# with N=$N minus with N=0, over N, for 9ec25e04's `packedOnce` and this tree's `runOptionsPacker`.
# Counted: no bench lock needed. Usage: bash scripts/toolchain.sh bash test/bench/packed-options-parts.sh [N]
set -euo pipefail
N=${1:-20000}
cd "$(dirname "$0")/../.."
. test/bench/callgrind-per-op.sh
old=$(mktemp -d)
trap 'rm -rf "$old"' EXIT
git show 9ec25e04:services/gateway/src/packed-options.ts > "$old/packed-options.ts"
export OLD_DIR=$old QUIET=1
for p in ${PACKERS:-old new new old}; do
  per_op "$p" test/bench/packed-options-parts.ts "$N" PACKER "$p"
done
