# Sourced by the counting scripts (app-leg-count.sh, par-cpu-parts.sh, seal-floor-parts.sh): the
# instructions one operation of a probe costs, counted, not timed (no bench lock needed). V8 runs
# single-threaded (its compiler and GC on the main thread), so the counts repeat.
#
# per_op LABEL SCRIPT N VAR LABEL_VALUE: runs `node --single-threaded SCRIPT` under callgrind with
# VAR=LABEL_VALUE and N=0, then N=$N (the caller's other variables, e.g. WARM, in its environment),
# and prints callgrind's difference over N. CG_OUT keeps callgrind's output (default /dev/null).
callgrind_total() {
  valgrind --tool=callgrind --callgrind-out-file="${CG_OUT:-/dev/null}" --smc-check=all-non-file \
    node --single-threaded "$1" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per_op() {
  local label=$1 script=$2 n=$3 var=$4 value=$5 zero many
  zero=$(export "$var=$value" N=0; callgrind_total "$script")
  many=$(export "$var=$value" N="$n"; callgrind_total "$script")
  echo "$label: $(( (many - zero) / n )) instructions a call (N=$n: $many, N=0: $zero)"
}
