#!/usr/bin/env bash
# Bench only (round 38, `gw-memory`): run a command as if its memory cgroup's limit were <bytes>,
# the way Node sizes its heap in a pod with `resources.limits.memory`: libuv's
# uv_get_constrained_memory() reads the own cgroup's limit file (v1 memory.limit_in_bytes, v2
# memory.max), and Node hands that to V8's ConfigureDefaults (old generation = half of it on
# 64-bit). A private mount namespace bind-mounts a file holding <bytes> over that path: nothing
# outside the command sees it, no cgroup is made or changed, and no memory is actually limited
# (the figures are what V8 decides, not what the kernel would enforce). Needs root (unshare -m).
# Usage: test/bench/in-memory-limit.sh 536870912 bash scripts/toolchain.sh node test/bench/gw-memory.ts
set -euo pipefail
bytes="$1"
shift
v1="$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' /proc/self/cgroup)"
if [[ -n "$v1" && -e "/sys/fs/cgroup/memory$v1/memory.limit_in_bytes" ]]; then
  target="/sys/fs/cgroup/memory$v1/memory.limit_in_bytes"
else
  v2="$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup)"
  target="/sys/fs/cgroup$v2/memory.max"
fi
file="$(mktemp)"
echo "$bytes" >"$file"
trap 'rm -f "$file"' EXIT
unshare -m bash -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' _ "$file" "$target" "$@"
