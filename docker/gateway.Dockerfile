# syntax=docker/dockerfile:1.7@sha256:a57df69d0ea827fb7266491f2813635de6f17269be881f696fbfdf2d83dda33e
# Islet gateway image. Build from the repository root:
#   docker build -f docker/gateway.Dockerfile -t islet/gateway:dev .
# TypeScript runs directly on Node 24 (type stripping): the image holds sources + production
# node_modules; the only build output is the web console's bundle (services/console/dist). Node's version matches scripts/toolchain.sh (NODE_VERSION).
# Releases: `bash docker/build.sh gateway` (provenance and SBOM attestations, islet_build_info's revision).
# Bases: image:tag@sha256:<image-index digest>, written by docker/pin-bases.sh (docker/README.md).

# ---- files: islet-files, the workspace file helper (every files-API operation resolves beneath the
# workspace with openat2 in it). Plain C, no libraries beyond libc.
FROM node:24.21.0-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS files
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
COPY services/kernel-sandbox/native/islet-files.c /src/islet-files.c
RUN gcc -O2 -Wall -Wextra -Werror -std=gnu11 -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE -pie \
      -Wl,-z,relro,-z,now -o /out-islet-files /src/islet-files.c

# ---- deps: production dependencies of every workspace, from the lock file exactly.
FROM node:24.21.0-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY services ./services
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

# ---- harden: islet-harden.node (prctl for Node: non-dumpable, no_new_privs), a Node-API addon.
FROM node:24.21.0-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS harden
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
COPY services/kernel-sandbox/native/islet-harden.c /src/islet-harden.c
RUN gcc -O2 -Wall -Wextra -Werror -std=gnu11 -shared -fPIC -fstack-protector-strong -Wl,-z,relro,-z,now \
      -DNODE_GYP_MODULE_NAME=islet_harden -DNAPI_VERSION=8 -I/usr/local/include/node \
      -o /out-islet-harden.node /src/islet-harden.c

# ---- console: the web console bundled by esbuild (a dev dependency of the console workspace
# only; its platform binary is an optional npm package, no install script needed).
FROM node:24.21.0-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS console
WORKDIR /app
COPY package.json package-lock.json ./
COPY services ./services
RUN npm ci --ignore-scripts --no-audit --no-fund -w @islet/console \
 && bash services/console/scripts/build.sh

# ---- runtime: no package manager, no shell; uid 10001; read-only root file system ready.
FROM node:24.21.0-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS runtime
# islet_build_info's version and revision (services/core build-info.ts):
#   --build-arg ISLET_REVISION="$(git rev-parse HEAD)" --build-arg ISLET_VERSION=<release>
ARG ISLET_VERSION=""
ARG ISLET_REVISION=unknown
LABEL org.opencontainers.image.revision="${ISLET_REVISION}" \
      org.opencontainers.image.version="${ISLET_VERSION}"
ENV NODE_ENV=production \
    ISLET_VERSION=${ISLET_VERSION} \
    ISLET_REVISION=${ISLET_REVISION} \
    ISLET_PORT=8080 \
    ISLET_HOST=0.0.0.0 \
    ISLET_FILES_HELPER_PATH=/usr/local/bin/islet-files
COPY --from=files /out-islet-files /usr/local/bin/islet-files
WORKDIR /app
COPY --from=deps --chown=0:0 /app/node_modules ./node_modules
COPY --chown=0:0 package.json ./
COPY --chown=0:0 services ./services
# The HTTP App contract, rendered into /docs by the gateway (openapi.ts).
COPY --chown=0:0 docs/apps.md ./docs/apps.md
COPY --from=harden --chown=0:0 /out-islet-harden.node ./services/kernel-sandbox/build/islet-harden.node
# The built console, served by the gateway at /console (no CDN: every asset is in the image).
COPY --from=console --chown=0:0 /app/services/console/dist ./services/console/dist
# The app files stay root-owned and read-only for the islet user. npm, npx, corepack, apt and the
# shells are not needed at run time: removed (this RUN is the last one that needs a shell).
# tini is PID 1: it forwards SIGTERM to node (which then drains) and reaps zombies. Test code
# (devstack, testkit, the fake Kubernetes API and other test doubles in services/*/test) is not shipped.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 islet \
 && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin islet \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* /usr/local/bin/yarn* \
      /usr/bin/apt* /usr/bin/dpkg* /var/lib/apt /var/cache/apt \
 && rm -rf /app/services/devstack /app/services/testkit /app/services/*/test \
      /app/node_modules/@islet/devstack /app/node_modules/@islet/testkit \
 && rm -f /bin/bash /bin/dash /bin/sh /usr/bin/sh
USER 10001:10001
# Writable only here (an emptyDir in Kubernetes); everything else may be mounted read-only.
VOLUME ["/tmp"]
EXPOSE 8080
# Kubernetes uses the chart's probes (/healthz, /readyz); this serves plain `docker run`.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.ISLET_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=16", "services/gateway/src/main.ts"]
