# syntax=docker/dockerfile:1
# Images of charts/tollgate. The runtime is the repository itself run through tsx (a runtime
# dependency), exactly as `npm start`, `npm run demo` and bin/tollgate.mjs run it.
#   docker build -t ghcr.io/tollgate/tollgate:0.1.0 .                    # service and operator
#   docker build --target sidecar -t ghcr.io/tollgate/sidecar:0.1.0 .    # the injected sidecar
# The chart runs every container as uid/gid 10001 with a read-only root filesystem: only /tmp
# (tsx's transpile cache) and, for the service, /var/lib/tollgate (embedded PGlite) are writable.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:20-bookworm-slim AS base
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY operator ./operator
COPY sidecar ./sidecar
COPY proto ./proto
COPY crds ./crds
USER 10001:10001

FROM base AS sidecar
EXPOSE 50051 9090
CMD ["node", "--import", "tsx", "sidecar/main.ts"]

FROM base AS tollgate
ENV HOST=0.0.0.0
EXPOSE 8000
CMD ["node", "--import", "tsx", "src/service/main.ts"]
