#!/bin/bash
# redis-server under valgrind's callgrind, instructions collected only inside script calls
# (`evalGenericCommand`: EVAL and EVALSHA, the commands they run included). For
# `REDIS_BIN=test/bench/redis-callgrind.sh CALLGRIND=1 node test/bench/script-replay.ts` and
# `node test/bench/register-cost.ts` (round 34, `seq-path`); `CG_OUT` names the output file.
exec valgrind --tool=callgrind --toggle-collect=evalGenericCommand \
  --callgrind-out-file="${CG_OUT:-/tmp/callgrind.out.%p}" redis-server "$@"
