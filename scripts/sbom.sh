#!/usr/bin/env bash
# CycloneDX SBOM of the production dependencies (what `npm ci --omit=dev` installs in the images),
# written by npm's own `npm sbom` from package-lock.json and node_modules.
#   bash scripts/toolchain.sh bash scripts/sbom.sh [out.json]    default: standard output
#   bash scripts/toolchain.sh npm run sbom -- out.json
# The images carry their own SBOM too (docker/build.sh: BuildKit --sbom=true scans the image,
# Debian packages included); this one is the npm view, reviewable without building an image.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# npm names the root component after the checkout's directory; the package's name is meant.
sbom() {
  npm sbom --sbom-format cyclonedx --sbom-type application --omit dev |
    node -e '
      let s = "";
      process.stdin.on("data", (d) => (s += d)).on("end", () => {
        const bom = JSON.parse(s);
        bom.metadata.component.name = require("./package.json").name;
        process.stdout.write(`${JSON.stringify(bom, null, 2)}\n`);
      });'
}
if [ $# -ge 1 ]; then
  mkdir -p "$(dirname "$1")"
  sbom >"$1.partial" || { rm -f "$1.partial"; exit 1; }
  mv "$1.partial" "$1"
else
  sbom
fi
