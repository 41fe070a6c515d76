#!/usr/bin/env bash
# Builds the images from docker/<component>.Dockerfile with BuildKit attestations: SLSA provenance
# (mode=max: build arguments, sources and the base images' digests) and an SBOM of the image, and
# islet_build_info's revision (the checked-out commit) and version as build arguments.
#
#   bash docker/build.sh [component ...]    default: every docker/*.Dockerfile
#
# ISLET_IMAGE_PREFIX  repository prefix (default islet → islet/<component>)
# ISLET_IMAGE_TAG     tag (default dev)
# ISLET_VERSION       islet_build_info's version (default: git describe --tags --always)
# ISLET_PUSH=1        push to the registry (the attestations are stored beside the image there)
# ISLET_OCI_DIR=dir   write dir/<component>.oci.tar, an OCI layout holding the attestations too
#                     (needs a docker-container builder: ISLET_BUILDER)
# ISLET_BUILDER       the buildx builder to use (default: the current one)
#                     With neither ISLET_PUSH nor ISLET_OCI_DIR the image is --load-ed into the
#                     engine, which keeps attestations only with the containerd image store.
# ISLET_BUILD_DRY_RUN=1  print the build commands, build nothing (needs no engine)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

die() { echo "docker/build.sh: $*" >&2; exit 2; }

if [ $# -eq 0 ]; then
  set --
  for f in docker/*.Dockerfile; do set -- "$@" "$(basename "$f" .Dockerfile)"; done
fi
for c in "$@"; do [ -f "docker/$c.Dockerfile" ] || die "no docker/$c.Dockerfile"; done

revision="$(git rev-parse HEAD)" || die "not a git checkout: islet_build_info needs the revision"
version="${ISLET_VERSION:-$(git describe --tags --always)}"
prefix="${ISLET_IMAGE_PREFIX:-islet}"
tag="${ISLET_IMAGE_TAG:-dev}"
builder=()
[ -n "${ISLET_BUILDER:-}" ] && builder=(--builder "$ISLET_BUILDER")
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "docker/build.sh: warning: the work tree has uncommitted changes; the images say $revision" >&2
fi

dry="${ISLET_BUILD_DRY_RUN:-}"
if [ "$dry" != 1 ]; then
  docker info >/dev/null 2>&1 || die "no container engine (docker info failed); nothing built"
  docker buildx version >/dev/null 2>&1 || die "docker buildx is missing; nothing built"
fi

for c in "$@"; do
  if [ "${ISLET_PUSH:-}" = 1 ]; then output=(--push)
  elif [ -n "${ISLET_OCI_DIR:-}" ]; then output=(--output "type=oci,dest=$ISLET_OCI_DIR/$c.oci.tar")
  else output=(--load); fi
  cmd=(docker buildx build "${builder[@]}"
    --file "docker/$c.Dockerfile"
    --tag "$prefix/$c:$tag"
    --provenance=mode=max
    --sbom=true
    --build-arg "ISLET_REVISION=$revision"
    --build-arg "ISLET_VERSION=$version"
    "${output[@]}"
    .)
  if [ "$dry" = 1 ]; then echo "${cmd[*]}"; else "${cmd[@]}"; fi
done
