# syntax=docker/dockerfile:1.7@sha256:a57df69d0ea827fb7266491f2813635de6f17269be881f696fbfdf2d83dda33e
# Islet RunnerPool operator image (also runs the chart's seccomp-profile installer DaemonSet:
# `node services/operator/src/install-profiles.ts`). Build from the repository root:
#   docker build -f docker/operator.Dockerfile -t islet/operator:dev .
# Releases: `bash docker/build.sh operator` (provenance and SBOM attestations, islet_build_info's revision).
# Bases: image:tag@sha256:<image-index digest>, written by docker/pin-bases.sh (docker/README.md).

FROM node:24.21.0-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY services ./services
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

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
    ISLET_OPERATOR_METRICS_PORT=9090
WORKDIR /app
COPY --from=deps --chown=0:0 /app/node_modules ./node_modules
COPY --chown=0:0 package.json ./
COPY --chown=0:0 services ./services
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
VOLUME ["/tmp"]
EXPOSE 9090
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.ISLET_OPERATOR_METRICS_PORT||9090)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "services/operator/src/main.ts"]
