#!/bin/bash
# Redis's instructions a submit's script call (round 47 `submit-lean`), handed and unhanded, at
# default settings: `script-replay.ts` under callgrind collecting inside the script call only
# (redis-callgrind.sh); one live trivial run recorded after WARM warm ones (handed to the idle
# worker), its submit replayed N times as recorded (`handed`) and with the idle registration left
# out of its state (`queued`: UNHANDED=1, the job stays in the wait list). Counts: no bench lock.
#   bash test/bench/submit-lean-counts.sh [handed|queued ...]   (default: handed queued)
set -u
cd "$(dirname "$0")/../.."
sides=("$@")
[ ${#sides[@]} -eq 0 ] && sides=(handed queued)
root=/tmp/submit-lean-counts/$(date +%H%M%S)-$RANDOM
for side in "${sides[@]}"; do
  d=$root/$side
  mkdir -p "$d"
  un=()
  [ "$side" = queued ] && un=(UNHANDED=1)
  env "${un[@]}" SOURCES_TO="$d" CG_OUT="$d/cg-eval.%p" \
    REDIS_BIN="$PWD/test/bench/redis-callgrind.sh" CALLGRIND=1 ONLY=submit N="${N:-200}" ROUNDS=1 \
    node test/bench/script-replay.ts 2>&1 | grep -E '^(submit: usec|recorded)' | sed "s/^/$side: /"
  echo "$side: pushed answer $(wc -c < "$d/handed.bin") B; callgrind $(ls "$d"/cg-eval.* 2>/dev/null | head -1)"
done
