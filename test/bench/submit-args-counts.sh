#!/bin/bash
# Redis's instructions a submit, two ways, with the submit's recorded arguments (round 43,
# `submit-floor`): `script-replay.ts` under callgrind collecting inside the script call only
# (redis-callgrind.sh), then from the request's read on (redis-callgrind-cmd.sh: the parse and
# free of its arguments too, and the restores after each call). For ab.sh:
#   bash test/bench/ab.sh a0565cd2 1 "bash test/bench/submit-args-counts.sh"
# Each side's recording (its sources, its `submit-args.txt`: one argument a line) goes under
# /tmp/submit-args-counts/<time>.
set -u
cd "$(dirname "$0")/../.."
d=/tmp/submit-args-counts/$(date +%H%M%S)
mkdir -p "$d"
env SOURCES_TO="$d" CG_OUT="$d/cg-eval.%p" REDIS_BIN="$PWD/test/bench/redis-callgrind.sh" CALLGRIND=1 \
  ONLY=submit N="${N:-200}" ROUNDS=1 node test/bench/script-replay.ts 2>&1 | grep -E '^submit: usec'
env CG_OUT="$d/cg-cmd.%p" REDIS_BIN="$PWD/test/bench/redis-callgrind-cmd.sh" CALLGRIND=1 \
  ONLY=submit N="${N:-200}" ROUNDS=1 node test/bench/script-replay.ts 2>&1 | grep -E '^submit: usec' |
  sed 's/^/from the request: /'
# The call's arguments (KEYS and ARGV; the file's first line is the key count).
echo "arguments (KEYS + ARGV): $(($(grep -c '' "$d/submit-args.txt") - 1)) ($d)"
