#!/bin/bash
# A submit's script call split by Redis's functions (round 49 `submit-lean`): submit-lean-counts.sh
# run with a redis-server that has its symbols (`REDIS_SRC`, default /tmp/sc-redis/src: 7.0.15 from
# its tag, `make OPTIMIZATION=-O2 CFLAGS="-g -fno-omit-frame-pointer"`), then each callgrind file's
# inclusive and self instructions of the functions below, divided by the script calls in the file
# (N and the probe's own 4 first calls, as round 48 `submit-closures` divided). Counts: no lock.
#   N=200 bash test/bench/submit-lean-split.sh
#   bash test/bench/ab.sh 33923ae1 1 "N=200 bash test/bench/submit-lean-split.sh"
set -u
cd "$(dirname "$0")/../.."
n=${N:-200}
out=$(PATH="${REDIS_SRC:-/tmp/sc-redis/src}:$PATH" N=$n bash test/bench/submit-lean-counts.sh 2>&1)
echo "$out" | grep -E 'instructions|arguments'
fns='luaV_execute luaS_newlstr luaC_step luaF_newLclosure luaF_findupval luaF_close luaH_new luaH_resize luaM_realloc_ luaV_concat luaRedisGenericCommand luaRedisCallCommand json_encode json_decode mp_unpack mp_pack luaD_precall'
for side in handed queued; do
  dir=$(echo "$out" | grep "^$side: arguments" | sed -E 's/.*\((.*)\)$/\1/')
  cg=$(ls "$dir"/cg-eval.* | head -1)
  echo "$side, a call (inclusive / self), $((n + 4)) calls in $cg:"
  incl=$(callgrind_annotate --inclusive=yes --threshold=100 "$cg" 2>/dev/null)
  self=$(callgrind_annotate --inclusive=no --threshold=100 "$cg" 2>/dev/null)
  for f in $fns; do
    i=$(echo "$incl" | grep -E "[:]$f( |$)" | head -1 | awk '{gsub(",","",$1); print $1}')
    s=$(echo "$self" | grep -E "[:]$f( |$)" | head -1 | awk '{gsub(",","",$1); print $1}')
    printf '  %-24s %10.0f %10.0f\n' "$f" "$(echo "${i:-0} / ($n + 4)" | bc -l)" "$(echo "${s:-0} / ($n + 4)" | bc -l)"
  done
done
