#!/bin/bash
# Redis's instructions a submit's script call (round 47 `submit-lean`), handed and unhanded, at
# default settings: `script-replay.ts` under callgrind collecting inside the script call only
# (redis-callgrind.sh); one live trivial run recorded after WARM warm ones (handed to the idle
# worker), its submit replayed N times as recorded (`handed`) and with the idle registration left
# out of its state (`queued`: UNHANDED=1, the job stays in the wait list). `FROM_REQUEST=1`: each
# side again from the request's read on (redis-callgrind-cmd.sh: the arguments' parse and free too,
# and the restores after each call: read only as a difference between two sides). Counts: no lock.
#   bash test/bench/submit-lean-counts.sh [handed|queued ...]   (default: handed queued)
#   bash test/bench/ab.sh 6b60376a 1 "FROM_REQUEST=1 bash test/bench/submit-lean-counts.sh"
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
  if [ -n "${FROM_REQUEST:-}" ]; then
    env "${un[@]}" CG_OUT="$d/cg-cmd.%p" \
      REDIS_BIN="$PWD/test/bench/redis-callgrind-cmd.sh" CALLGRIND=1 ONLY=submit N="${N:-200}" ROUNDS=1 \
      node test/bench/script-replay.ts 2>&1 | grep -E '^submit: usec' | sed "s/^/$side from the request: /"
  fi
  echo "$side: arguments (KEYS + ARGV) $(($(grep -c '' "$d/submit-args.txt") - 1)), pushed answer $(wc -c < "$d/handed.bin") B ($d)"
done
