#!/bin/bash
# Redis's instructions a submit and a registration's bytes with the runner's registrations in the
# full form (ISLET_HANDOFF_COMPACT_TERMS=off) and the compact one (on), in one build (round 44
# `handoff-terms`): `script-replay.ts` under callgrind collecting inside the script call only
# (redis-callgrind.sh), each side recording its own live submit (a trivial run after 60 warm ones,
# handed to the idle worker) and replaying it N times. Sides in the order given (default
# "off on on off"; `default`: the variable unset, the runner's default — round 45 `terms-on` runs
# `ab.sh 9ec25e04 1 "bash test/bench/handoff-terms-counts.sh default"`). Counts: no bench lock needed.
#   bash test/bench/handoff-terms-counts.sh [sides...]
set -u
cd "$(dirname "$0")/../.."
sides=("$@")
[ ${#sides[@]} -eq 0 ] && sides=(off on on off)
root=/tmp/handoff-terms-counts/$(date +%H%M%S)
for side in "${sides[@]}"; do
  d=$root/$side-$RANDOM
  mkdir -p "$d"
  flag=(ISLET_HANDOFF_COMPACT_TERMS="$side")
  [ "$side" = default ] && flag=(-u ISLET_HANDOFF_COMPACT_TERMS)
  env "${flag[@]}" SOURCES_TO="$d" CG_OUT="$d/cg-eval.%p" \
    REDIS_BIN="$PWD/test/bench/redis-callgrind.sh" CALLGRIND=1 ONLY=submit N="${N:-200}" ROUNDS=1 \
    node test/bench/script-replay.ts 2>&1 | grep -E '^submit: usec' | sed "s/^/$side: /"
  # The registration the submit read, as stored (one a line), and the pushed answer's bytes.
  echo "$side: registration $(head -c -1 "$d/terms.txt" | wc -c) B ($(head -c 1 "$d/terms.txt")...), pushed answer $(wc -c < "$d/handed.bin") B ($d)"
done
