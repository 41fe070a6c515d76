# syntax=docker/dockerfile:1.7@sha256:a57df69d0ea827fb7266491f2813635de6f17269be881f696fbfdf2d83dda33e
# Islet runner image: the broker (BullMQ worker) and the sandbox host processes it starts under
# the islet-jail kernel launcher (no_new_privs + seccomp + Landlock + rlimits). python3 and bash
# are here because the run_code skill runs python and bash programs. Build from the repo root:
#   docker build -f docker/runner.Dockerfile -t islet/runner:dev .
# Releases: `bash docker/build.sh runner` (provenance and SBOM attestations, islet_build_info's revision).
# Bases: image:tag@sha256:<image-index digest>, written by docker/pin-bases.sh (docker/README.md).

# ---- jail: the native launcher, compiled against libseccomp with the profiles compiled in.
FROM node:24.21.0-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS jail
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev libseccomp-dev python3 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY services/kernel-sandbox/native ./services/kernel-sandbox/native
COPY services/kernel-sandbox/profiles ./services/kernel-sandbox/profiles
COPY services/kernel-sandbox/scripts ./services/kernel-sandbox/scripts
# build.sh also makes islet-harden.node (prctl: non-dumpable, no_new_privs) against this Node's headers.
RUN bash services/kernel-sandbox/scripts/build.sh \
 && install -m 0755 services/kernel-sandbox/build/islet-jail /out-islet-jail \
 && install -m 0755 services/kernel-sandbox/build/islet-files /out-islet-files \
 && install -m 0755 services/kernel-sandbox/build/islet-harden.node /out-islet-harden.node

# ---- deps: production dependencies (isolated-vm ships its Node 24 binary in the npm package).
FROM node:24.21.0-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY services ./services
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# ---- runtime
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
    ISLET_RUNNER_METRICS_PORT=9464 \
    ISLET_SANDBOX_JAIL=on \
    ISLET_JAIL_PATH=/usr/local/bin/islet-jail \
    ISLET_FILES_HELPER_PATH=/usr/local/bin/islet-files \
    ISLET_WORKSPACE_ROOT=/workspace
# libseccomp2 for the launcher; python3 (and bash, already in the base) for the run_code skill;
# tini as PID 1 (forwards SIGTERM to node, reaps the zombies sandbox processes may leave).
RUN apt-get update \
 && apt-get install -y --no-install-recommends libseccomp2 python3 tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 islet \
 && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin islet \
 && mkdir -p /workspace && chown 10001:10001 /workspace
COPY --from=jail /out-islet-jail /usr/local/bin/islet-jail
# The workspace file helper (openat2 beneath the workspace): the files binding and skill accounting.
COPY --from=jail /out-islet-files /usr/local/bin/islet-files
WORKDIR /app
COPY --from=deps --chown=0:0 /app/node_modules ./node_modules
COPY --chown=0:0 package.json ./
COPY --chown=0:0 services ./services
COPY --from=jail --chown=0:0 /out-islet-harden.node ./services/kernel-sandbox/build/islet-harden.node
# The sandbox host as plain JavaScript (services/engine/dist/host: types erased, hash-checked against
# the sources; ~16 MB less per host process than starting host.ts). Then no package manager at run
# time (bash and python3 stay: the skill runs them, under the jail).
RUN node services/engine/src/host-build.ts \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* /usr/local/bin/yarn* \
      /usr/bin/apt* /usr/bin/dpkg* /var/lib/apt /var/cache/apt \
 && rm -rf /app/services/devstack /app/services/testkit /app/services/*/test \
      /app/node_modules/@islet/devstack /app/node_modules/@islet/testkit
USER 10001:10001
# Writable places (emptyDirs in Kubernetes); the root file system is mounted read-only.
VOLUME ["/tmp", "/workspace"]
EXPOSE 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.ISLET_RUNNER_METRICS_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=16", "services/runner/src/main.ts"]
