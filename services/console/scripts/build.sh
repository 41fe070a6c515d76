#!/usr/bin/env bash
# Bundles the console (web/*.tsx → dist/) with esbuild. Incremental: does nothing when dist/ is
# newer than every source, so scripts/toolchain.sh can run it on each invocation. The Dockerfile of
# the gateway runs it too and ships dist/ in the image.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STAMP="$HERE/dist/.built"
if [ -f "$STAMP" ]; then
  newer="$(find "$HERE/web" "$HERE/src/build.ts" "$HERE/scripts/build.sh" "$HERE/../sdk/src/client.ts" "$HERE/package.json" -newer "$STAMP" -print -quit)"
  [ -z "$newer" ] && exit 0
fi
node "$HERE/src/build.ts"
touch "$STAMP"
echo "[console] built $HERE/dist" >&2
