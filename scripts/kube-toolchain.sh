#!/usr/bin/env bash
# Builds the Kubernetes control plane the kube tests run against (test/kube/): kube-apiserver
# and kube-controller-manager from Debian bookworm's `kubernetes` source package, and etcd from
# bookworm's etcd-server .deb (extracted, its service never started). Everything lands in a
# cache OUTSIDE the repository and is reused when present; no binary is ever committed.
#
#   scripts/kube-toolchain.sh            build when missing, print the bin directory on stdout
#   scripts/kube-toolchain.sh --check    print the bin directory when it is complete, else exit 3
#
# Cache: ${ISLET_KUBE_CACHE:-/var/cache/islet-kube}/<source version>/bin. The first build takes
# roughly 20 minutes of two idle cores (it runs under `nice -n 19`); later runs return at once.
# Exit codes: 0 ready, 3 not built (--check), 4 impossible here (not root, no apt, not amd64/arm64).
set -euo pipefail

KUBE_SRC_VERSION="1.20.5+really1.20.2"
KUBE_GIT_VERSION="v1.20.2"
ETCD_VERSION_PREFIX="3.4."
CACHE_ROOT="${ISLET_KUBE_CACHE:-/var/cache/islet-kube}"
DIR="$CACHE_ROOT/$KUBE_SRC_VERSION"
BIN="$DIR/bin"
log() { printf '[islet kube-toolchain] %s\n' "$*" >&2; }

complete() { [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ] && [ -x "$BIN/etcd" ]; }

if complete; then echo "$BIN"; exit 0; fi
if [ "${1:-}" = "--check" ]; then exit 3; fi

if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  log "impossible here: building the control plane needs root and apt-get (Debian bookworm)"
  exit 4
fi
case "$(dpkg --print-architecture 2>/dev/null || echo none)" in
  amd64 | arm64) ;;
  *) log "impossible here: no bookworm Go toolchain for this architecture"; exit 4 ;;
esac

mkdir -p "$DIR"
# One builder at a time: CI and several test files may ask at once.
exec 9>"$CACHE_ROOT/.lock"
flock 9
if complete; then echo "$BIN"; exit 0; fi

export DEBIAN_FRONTEND=noninteractive
need=()
[ -x /usr/lib/go-1.19/bin/go ] || need+=(golang-1.19-go)
[ -d /usr/share/gocode/src/github.com/modern-go/reflect2 ] || need+=(golang-github-modern-go-reflect2-dev)
command -v dpkg-source >/dev/null 2>&1 || need+=(dpkg-dev)
command -v make >/dev/null 2>&1 || need+=(make)
command -v rsync >/dev/null 2>&1 || need+=(rsync)
if [ "${#need[@]}" -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

# 1. etcd from the etcd-server .deb, unpacked only (its systemd unit is never installed).
if [ ! -x "$BIN/etcd" ]; then
  work="$DIR/etcd-deb"
  rm -rf "$work" && mkdir -p "$work"
  (cd "$work" && apt-get download etcd-server >&2)
  deb="$(ls "$work"/etcd-server_*.deb)"
  case "$(basename "$deb")" in
    etcd-server_"$ETCD_VERSION_PREFIX"*) ;;
    *) log "unexpected etcd-server package $(basename "$deb")"; exit 1 ;;
  esac
  dpkg-deb -x "$deb" "$work/root"
  mkdir -p "$BIN"
  install -m 0755 "$work/root/usr/bin/etcd" "$BIN/etcd"
  rm -rf "$work"
fi

# 2. The kubernetes source package, from a private deb-src list derived from the machine's own
# apt sources (the machine's apt configuration is left untouched).
APT="$DIR/apt"
if [ ! -f "$DIR/src/.unpacked" ]; then
  mkdir -p "$APT/sources.list.d" "$APT/lists/partial" "$APT/archives/partial"
  : >"$APT/sources.list.d/deb-src.sources"
  found=0
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    grep -q 'debian' "$f" || continue
    sed -e 's/^Types:.*$/Types: deb-src/' "$f" >>"$APT/sources.list.d/deb-src.sources"
    printf '\n' >>"$APT/sources.list.d/deb-src.sources"
    found=1
  done
  if [ "$found" = 0 ] && [ -f /etc/apt/sources.list ]; then
    grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' >"$APT/sources.list.d/deb-src.list"
  fi
  aptp=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$APT/sources.list.d"
    -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache::Archives=$APT/archives" -o "APT::Sandbox::User=root")
  log "fetching the kubernetes source package ($KUBE_SRC_VERSION)"
  apt-get "${aptp[@]}" update -qq >&2
  rm -rf "$DIR/src" "$DIR/pkg" && mkdir -p "$DIR/pkg"
  (cd "$DIR/pkg" && apt-get "${aptp[@]}" source -qq kubernetes >&2)
  tree="$DIR/pkg/kubernetes-$KUBE_SRC_VERSION"
  [ -d "$tree/vendor" ] || { log "no kubernetes-$KUBE_SRC_VERSION tree with vendor/ (bookworm's package changed?)"; exit 1; }
  mv "$tree" "$DIR/src"
  rm -rf "$DIR/pkg"
  touch "$DIR/src/.unpacked"
fi

# 3. reflect2 1.0.1 (vendored) breaks at run time on Go >= 1.18 (it reads runtime internals that
# moved); 1.0.2 from Debian's Go package is API-compatible and fixes it.
rsync -a --delete --exclude '.git' /usr/share/gocode/src/github.com/modern-go/reflect2/ \
  "$DIR/src/vendor/github.com/modern-go/reflect2/"

# 4. Build. Version stamps come from the environment because the tree is not a git checkout.
export PATH="/usr/lib/go-1.19/bin:$PATH"
# kube's build scripts lift `-tags=` out of GOFLAGS and append it to their own tag list, so GOFLAGS
# must hold a -tags= (anything else there breaks that list); providerless leaves the cloud
# providers out, which the tests never use. go.mod's `go 1.15` plus vendor/ already means -mod=vendor.
export GOCACHE="$DIR/gocache" GOPATH="$DIR/gopath" GOFLAGS="-buildvcs=false -tags=providerless"
export GO111MODULE=on GOTOOLCHAIN=local
export KUBE_GIT_VERSION KUBE_GIT_COMMIT="debian-$KUBE_SRC_VERSION" KUBE_GIT_TREE_STATE=clean
export KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20
export KUBE_BUILD_PLATFORMS="linux/$(dpkg --print-architecture)"
start=$(date +%s)
for what in cmd/kube-apiserver cmd/kube-controller-manager; do
  name="$(basename "$what")"
  [ -x "$BIN/$name" ] && continue
  log "building $what (nice -n 19; this is the long part)"
  (cd "$DIR/src" && nice -n 19 make WHAT="$what" >&2)
  out="$(find "$DIR/src/_output" -type f -name "$name" -path '*/bin/*' | head -n1)"
  [ -n "$out" ] || { log "make produced no $name"; exit 1; }
  install -m 0755 "$out" "$BIN/$name"
done
log "control plane ready in $BIN (build took $(($(date +%s) - start)) s)"
complete || { log "incomplete: $(ls "$BIN")"; exit 1; }
echo "$BIN"
