#!/usr/bin/env bash
# Pins every base image (and the `# syntax=` frontend) of docker/*.Dockerfile to the digest of its
# image index (the multi-platform manifest list), keeping the tag for readers: FROM node:X-bookworm-slim@sha256:<index digest>.
# Run it after changing a base tag (e.g. Node in scripts/toolchain.sh) or to take a rebuilt base
# (Debian security updates keep the tag and change the digest). Needs a registry to ask:
#   bash docker/pin-bases.sh            resolve with `docker buildx imagetools inspect`
# Without one, take the digest from the public record of official images,
# github.com/docker-library/repo-info repos/<image>/remote/<tag>.md (the first `docker pull
# <image>@sha256:…` line, Manifest MIME ….image.index…), and write it into every FROM by hand.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

docker buildx version >/dev/null 2>&1 || { echo "docker/pin-bases.sh: docker buildx is missing" >&2; exit 2; }

resolve() {
  local digest
  digest="$(docker buildx imagetools inspect "$1" | awk '/^Digest:/ { print $2; exit }')"
  [[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "docker/pin-bases.sh: no digest for $1" >&2; exit 1; }
  echo "$1@$digest" >&2
  printf '%s' "$digest"
}
quote() { printf '%s' "$1" | sed 's/[.[\*^$/]/\\&/g'; }

# External bases have a tag; stage references (FROM deps) have none. '|' is sed's delimiter:
# image names have slashes (registry.example/team/base:tag).
for base in $(grep -hoE '^FROM +[^ ]+' docker/*.Dockerfile | awk '{print $2}' | sed 's/@sha256:.*//' | grep ':' | sort -u); do
  digest="$(resolve "$base")"
  sed -i -E "s|^FROM +$(quote "$base")(@sha256:[0-9a-f]{64})?( .*)?\$|FROM ${base}@${digest}\\2|" docker/*.Dockerfile
done
# The Dockerfile frontend (# syntax=…) is an image BuildKit runs too.
for frontend in $(sed -nE 's/^# *syntax=([^ @]+).*/\1/p' docker/*.Dockerfile | sort -u); do
  digest="$(resolve "$frontend")"
  sed -i -E "s|^# *syntax=$(quote "$frontend")(@sha256:[0-9a-f]{64})?\$|# syntax=${frontend}@${digest}|" docker/*.Dockerfile
done
