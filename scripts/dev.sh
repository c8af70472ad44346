#!/bin/sh
# Development mode on a machine with only Node.js and npm: installs the pinned Bun and the
# dependencies, then starts the service on the embedded SQLite database (see scripts/dev.ts).
set -eu
cd "$(dirname "$0")/.."
BUN=$(sh scripts/ensure-bun.sh)
PATH="$(dirname "$BUN"):$PATH"
export PATH
bun install --frozen-lockfile
exec bun run scripts/dev.ts "$@"
