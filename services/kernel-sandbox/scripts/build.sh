#!/usr/bin/env bash
# Builds islet-jail (the kernel sandbox launcher) and islet-probe (the test probe) into build/.
# Incremental: does nothing when both binaries are newer than every source and profile, so
# scripts/toolchain.sh can run it on each invocation. Needs gcc, python3 and libseccomp-dev.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$HERE/build"
SOURCES=("$HERE/native/islet-jail.c" "$HERE/native/islet-probe.c" "$HERE/scripts/gen-header.py" "$HERE/scripts/build.sh" "$HERE"/profiles/*.json)

fresh=1
for bin in "$OUT/islet-jail" "$OUT/islet-probe"; do
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
gcc "${CFLAGS[@]}" -o "$tmp/islet-probe" "$HERE/native/islet-probe.c"
mv -f "$tmp/islet-jail" "$OUT/islet-jail"
mv -f "$tmp/islet-probe" "$OUT/islet-probe"
echo "[kernel-sandbox] built $OUT/islet-jail and islet-probe" >&2
