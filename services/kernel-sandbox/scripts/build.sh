#!/usr/bin/env bash
# Builds islet-jail (the kernel sandbox launcher), islet-files (the workspace file helper),
# islet-probe (the test probe) and islet-harden.node (prctl for Node: non-dumpable, no_new_privs)
# into build/.
# Incremental: does nothing when both binaries are newer than every source and profile, so
# scripts/toolchain.sh can run it on each invocation. Needs gcc, python3 and libseccomp-dev.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$HERE/build"
SOURCES=("$HERE/native/islet-jail.c" "$HERE/native/supervise.h" "$HERE/native/workspace-budget.h" "$HERE/native/islet-files.c" "$HERE/native/islet-probe.c" "$HERE/scripts/gen-header.py" "$HERE/scripts/build.sh" "$HERE"/profiles/*.json)

# islet-harden.node: a Node-API addon against the running Node's headers (ABI-stable across Node
# versions). Skipped with a note when the headers are missing; services then say they are dumpable.
harden_src="$HERE/native/islet-harden.c"
harden_out="$HERE/build/islet-harden.node"
if [ ! -f "$harden_out" ] || [ "$harden_src" -nt "$harden_out" ] || [ "$HERE/scripts/build.sh" -nt "$harden_out" ]; then
  node_inc="$(node -p 'require("node:path").resolve(process.execPath, "../../include/node")' 2>/dev/null || true)"
  if [ -f "$node_inc/node_api.h" ]; then
    mkdir -p "$HERE/build"
    gcc -O2 -Wall -Wextra -Werror -std=gnu11 -shared -fPIC -fstack-protector-strong -Wl,-z,relro,-z,now \
      -DNODE_GYP_MODULE_NAME=islet_harden -DNAPI_VERSION=8 -I"$node_inc" \
      -o "$harden_out.tmp" "$harden_src" && mv -f "$harden_out.tmp" "$harden_out"
    echo "[kernel-sandbox] built $harden_out" >&2
  else
    echo "[kernel-sandbox] no Node headers at $node_inc; islet-harden.node not built" >&2
  fi
fi

fresh=1
for bin in "$OUT/islet-jail" "$OUT/islet-files" "$OUT/islet-probe"; do
  [ -x "$bin" ] || { fresh=0; break; }
  for src in "${SOURCES[@]}"; do
    [ "$src" -nt "$bin" ] && { fresh=0; break 2; }
  done
done
[ "$fresh" = 1 ] && exit 0

mkdir -p "$OUT"
tmp="$(mktemp -d "$OUT/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
python3 "$HERE/scripts/gen-header.py" "$HERE" "$tmp/profiles.h"
CFLAGS=(-O2 -Wall -Wextra -Werror -std=gnu11 -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE -pie -Wl,-z,relro,-z,now)
# libseccomp linked statically: the runtime image needs no libseccomp2 package.
gcc "${CFLAGS[@]}" -I"$tmp" -o "$tmp/islet-jail" "$HERE/native/islet-jail.c" -Wl,-Bstatic -lseccomp -Wl,-Bdynamic
gcc "${CFLAGS[@]}" -o "$tmp/islet-files" "$HERE/native/islet-files.c"
gcc "${CFLAGS[@]}" -o "$tmp/islet-probe" "$HERE/native/islet-probe.c"
mv -f "$tmp/islet-jail" "$OUT/islet-jail"
mv -f "$tmp/islet-files" "$OUT/islet-files"
mv -f "$tmp/islet-probe" "$OUT/islet-probe"
echo "[kernel-sandbox] built $OUT/islet-jail, islet-files and islet-probe" >&2
