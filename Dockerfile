# Builds the single executable, then ships it alone on a slim glibc base (libstdc++ included).
FROM node:20-bookworm-slim AS build
WORKDIR /src
RUN npm install -g bun@1.4.5
COPY package.json bun.lock bunfig.toml tsconfig.json ./
RUN bun install --frozen-lockfile
COPY . .
ARG GIT_SHA=unknown
RUN bun run build

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/* \
  && useradd --system --home /var/lib/spaces-api --create-home spaces
COPY --from=build /src/dist/spaces-api /usr/local/bin/spaces-api
USER spaces
WORKDIR /var/lib/spaces-api
ENV NODE_ENV=production
# One pool thread per core would leave none free while an upload encodes (README, deployment).
ENV UV_THREADPOOL_SIZE=4
# PORT, DB_*, secrets and the rest come from the environment at run time (see README).
ENTRYPOINT ["/usr/local/bin/spaces-api"]
CMD ["serve"]
