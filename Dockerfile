# syntax=docker/dockerfile:1
# Images of charts/tollgate. They run the production build (`npm run build`: one esbuild bundle
# per process in dist/, packages from node_modules) with plain `node`: no tsx at run time, which
# saves ~34 MiB of RSS per process (bench/memory).
#   docker build -t ghcr.io/tollgate/tollgate:0.1.0 .                    # service and operator
#   docker build --target sidecar -t ghcr.io/tollgate/sidecar:0.1.0 .    # the injected sidecar
# The chart runs every container as uid/gid 10001 with a read-only root filesystem: only /tmp
# and, for the service, /var/lib/tollgate (embedded PGlite) are writable.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json .node-version ./
# package.json's postinstall (a no-op on this Node.js 24 base: it only acts on older ones).
COPY scripts/node-lts.mjs ./scripts/node-lts.mjs
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# esbuild comes with tsx, a runtime dependency: the production dependencies are enough to build.
FROM deps AS build
COPY tsconfig.json ./
COPY scripts/build.mjs ./scripts/build.mjs
COPY src ./src
COPY operator ./operator
COPY sidecar ./sidecar
RUN npm run build

FROM node:24-bookworm-slim AS base
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
# Files the bundles read at run time, at their source paths (scripts/build.mjs keeps
# import.meta.url lookups pointing at the source tree): gRPC protos, SQL migrations.
COPY proto ./proto
COPY src/service/db/migrations ./src/service/db/migrations
USER 10001:10001

FROM base AS sidecar
# The V8 flags the admission webhook injects (SIDECAR_NODE_OPTIONS in operator/webhook/patch.ts),
# also for a sidecar started from this image by other means.
ENV NODE_OPTIONS="--max-semi-space-size=1 --max-old-space-size=128"
EXPOSE 50051 9090
CMD ["node", "dist/sidecar.js"]

FROM base AS tollgate
ENV HOST=0.0.0.0
EXPOSE 8000
CMD ["node", "dist/service.js"]
