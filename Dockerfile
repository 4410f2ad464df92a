# syntax=docker/dockerfile:1
# Flightdeck's image: one image for every role; the command picks it (`migrate`, `api`, `worker`,
# or any other `flightdeck` command). docker-compose.yml shows how the roles fit together.

ARG NODE_IMAGE=node:20-slim

# npm 11, as in development: it honours `allowScripts` in package.json, so only the approved
# install scripts run (npm 10, bundled with Node 20, would run them all).
FROM ${NODE_IMAGE} AS npm
ARG NPM_VERSION=11.19.1
RUN npm install --global --no-audit --no-fund npm@${NPM_VERSION}
WORKDIR /app
COPY package.json package-lock.json ./

# Every dependency, for the build. `npm install`, not `npm ci`: the lock file lists the optional
# native packages of the platform it was written on only, which `npm ci` refuses; `npm install`
# still takes every version the lock file names.
FROM npm AS deps
RUN npm install --no-audit --no-fund

# dist/: the compiled service and the prebuilt workflow bundle the worker loads.
FROM deps AS build
COPY . .
RUN npm run build

# Production dependencies only.
FROM npm AS prod-deps
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
# MALLOC_ARENA_MAX: fewer malloc arenas for the worker's native threads (ARCHITECTURE.md, "Worker tuning").
ENV NODE_ENV=production \
    FLIGHTDECK_HOST=0.0.0.0 \
    FLIGHTDECK_PORT=8080 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# flightdeck --version reads it.
COPY package.json ./
USER node
EXPOSE 8080
# Health checks differ per role, so they live in docker-compose.yml:
# `node dist/cli/healthcheck.js api` or `... worker`.
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["api"]
