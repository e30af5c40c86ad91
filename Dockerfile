# syntax=docker/dockerfile:1
# acs in a container: built in one stage, run from the built files by `node` in the final one, which holds
# only the built server and CLI (dist/), the console (packages/console/dist) and the few packages the build
# leaves to Node (the root package.json's `dependencies`: PGlite and pg). See docs/operations.md.
#
#   docker build -t acs .
#   docker run -p 127.0.0.1:3000:3000 -e DATABASE_URL=postgres://… -e ACS_SECRETS_KEY=… acs
#
# Node 24 is the current LTS (Node 20 reached end of life in April 2026). NODE_COMPILE_CACHE lets V8 reuse the
# compiled code of dist/ across starts of the server and of `acs`.
ARG NODE_IMAGE=node:24-bookworm-slim
ARG PNPM=pnpm@10

FROM ${NODE_IMAGE} AS build
ARG PNPM
WORKDIR /app
ENV CI=true
# The manifests first: the dependency layer is rebuilt only when they change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY packages/cli/package.json packages/cli/
COPY packages/console/package.json packages/console/
COPY packages/domain/package.json packages/domain/
COPY packages/server/package.json packages/server/
COPY packages/upstream/package.json packages/upstream/
RUN npx --yes ${PNPM} install --frozen-lockfile
COPY . .
# dist/server.mjs, dist/cli.mjs (+ chunks and sourcemaps) and packages/console/dist.
RUN npx --yes ${PNPM} run build

FROM ${NODE_IMAGE} AS production-dependencies
ARG PNPM
WORKDIR /app
ENV CI=true
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY packages/cli/package.json packages/cli/
COPY packages/console/package.json packages/console/
COPY packages/domain/package.json packages/domain/
COPY packages/server/package.json packages/server/
COPY packages/upstream/package.json packages/upstream/
# Only the root package's production dependencies: everything else is inlined in dist/.
RUN npx --yes ${PNPM} install --prod --frozen-lockfile --filter acs

FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    ACS_DATA_DIR=/data \
    NODE_COMPILE_CACHE=/tmp/node-compile-cache
# The image's unprivileged `node` user (uid 1000) owns only the embedded database's directory.
RUN mkdir -p /data && chown node:node /data
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/package.json ./
COPY --from=build /app/dist ./dist
COPY --from=build /app/packages/console/dist ./packages/console/dist
RUN ln -s /app/dist/cli.mjs /usr/local/bin/acs
USER node
VOLUME ["/data"]
EXPOSE 3000
# /readyz: the database answers and the migrations are applied. A first start on an empty database also
# migrates and imports, hence the start period.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--enable-source-maps", "dist/server.mjs"]
