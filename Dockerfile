# syntax=docker/dockerfile:1
# Build stage: compile TypeScript.
FROM node:24-bookworm-slim AS build
WORKDIR /app
# patches/: fixes to dependencies that npm ci's postinstall (patch-package) applies; see patches/README.md.
# .npmrc: onnxruntime-node's install script downloads no CUDA libraries (its CPU build is all we run).
COPY package.json package-lock.json .npmrc ./
COPY patches ./patches
RUN npm ci
# Everything the build compiles (src, adapters, examples, bench and the test helpers it uses).
COPY . .
RUN npm run build

# Runtime stage: production dependencies and the build only.
FROM node:24-bookworm-slim
# Listening beyond loopback: pass CONTROL_TOKEN and MEDIA_STREAM_TOKEN (or TWILIO_AUTH_TOKEN for a
# Twilio-only deployment) with `docker run -e`, or voxbridge refuses to start and says so. The Discord
# bot runs when DISCORD_TOKEN is passed the same way.
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY patches ./patches
# --ignore-scripts skips the project's postinstall too: the patches (patches/README.md) are applied here.
# onnxruntime-node (VAD on native ONNX Runtime) carries every platform's build: this one's is kept.
RUN npm ci --omit=dev --ignore-scripts && node_modules/.bin/patch-package --error-on-fail && npm cache clean --force \
  && find node_modules/onnxruntime-node/bin/napi-v6 -mindepth 2 -maxdepth 2 ! -path "*/linux/$(node -p process.arch)" -exec rm -rf {} +
COPY --from=build /app/dist ./dist
COPY config ./config
# The browser phone's page (its scripts are in dist/web).
COPY web/phone/index.html web/phone/style.css ./web/phone/
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/src/app/main.js"]
