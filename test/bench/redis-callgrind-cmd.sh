#!/bin/bash
# As redis-callgrind.sh, but collecting a command's whole handling from its read on: the request's
# parse (`processInputBuffer`: every argument made an object), the call, the arguments freed. For
# `REDIS_BIN=test/bench/redis-callgrind-cmd.sh CALLGRIND=1 node test/bench/script-replay.ts`: its
# instructions a call include the restores' commands after each (the same on both sides of an A/B),
# so only a difference between two sides is read from it (round 43, `submit-floor`).
exec valgrind --tool=callgrind --toggle-collect=processInputBuffer \
  --callgrind-out-file="${CG_OUT:-/tmp/callgrind.out.%p}" redis-server "$@"
