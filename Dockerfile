# video-service-sim: the simulator as a container image.
#
#   docker build -t video-service-sim .
#   docker run --rm -p 127.0.0.1:8080:8080 -e SIM_SCENARIO=fast -e SIM_CLOCK=manual video-service-sim
#
# It listens on 0.0.0.0, so its control API (/_sim) needs a token: SIM_CONTROL_TOKEN, or the one
# it generates and prints at start (docker logs).
#
# Every flag of `sim` has an environment variable: PORT, SIM_HOST, SIM_SCENARIO, SIM_SEED,
# SIM_CLOCK, SIM_SPEED, SIM_BASE_URL, SIM_CDN_URL, SIM_RECORD, SIM_RECORD_MAX_BYTES, SIM_STATE, SIM_HEAP_GROWING_PERCENT,
# SIM_CONTROL_TOKEN, SIM_ALLOWED_HOSTS, SIM_CONTROL_ORIGINS, SIM_SCENARIOS_DIR, SIM_SHARD. Flags can also be passed as arguments
# (`docker run ... video-service-sim --scenario flaky`), and so can the subcommands
# (`docker run --rm video-service-sim scenarios`).

# ---- build: dev dependencies, TypeScript -> dist/ ---------------------------------------------
FROM node:24-bookworm-slim AS build
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before src/ is copied; the build runs below.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json openapi.yaml ./
COPY scripts ./scripts
COPY src ./src
# The build resolves the bundled scenarios into dist/scenarios/bundled.json, and bundles the
# page's handlers (video-service-sim/msw, with the clips of assets/), which the image leaves out.
COPY scenarios ./scenarios
COPY assets ./assets
# The build also compiles openapi.yaml's validators into dist/generated/ (the simulator never
# parses the YAML at run time). Source maps point at src/ and declarations serve the npm package:
# neither is needed at run time.
RUN npm run build && rm -rf dist/browser && find dist \( -name '*.map' -o -name '*.d.ts' \) -delete

# ---- runtime: production dependencies only, non-root, node as PID 1 -------------------------
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false \
    SIM_HOST=0.0.0.0 \
    PORT=8080
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force && rm -rf /root/.npm /tmp/*
COPY openapi.yaml ./
COPY scenarios ./scenarios
COPY assets ./assets
COPY --from=build /app/dist ./dist
# /data, the node user's: a volume mounted there (-v sim-state:/data -e SIM_STATE=/data/state.jsonl)
# keeps the state across container restarts.
# Node's compile cache, which the bin turns on, in a folder of the node user's, filled here (a
# --version compiles the whole command line): a container's first start compiles nothing of it.
ENV NODE_COMPILE_CACHE=/app/.node-compile-cache
RUN mkdir -p /data /app/.node-compile-cache && chown node:node /data /app/.node-compile-cache
USER node
RUN node dist/cli.js --version >/dev/null
EXPOSE 8080
# Node's own fetch (no curl in the image); PORT is the port the simulator listens on. No
# --start-period: the simulator is up in well under a second, and dockerfilelint 1.8 misreads
# hyphenated HEALTHCHECK options.
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/_sim/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Exec form: node is PID 1 and gets SIGTERM from `docker stop` directly (the CLI exits at once).
ENTRYPOINT ["node", "dist/cli.js"]
CMD []
