#!/usr/bin/env bash
# Writes the sandbox host as plain JavaScript (src/host.ts and its imports with the types erased →
# dist/host/*.js, see src/host-build.ts). A .js host does not load Node's TypeScript stripper, which
# costs each host process about 16 MB of resident memory and part of its start-up CPU. Incremental
# (nothing to do when dist/ is current), so scripts/toolchain.sh runs it on each invocation; an
# image must run it too. Without it (or when stale) the engine starts src/host.ts as before.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
node "$HERE/src/host-build.ts"
