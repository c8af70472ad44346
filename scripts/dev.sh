#!/bin/sh
# Development mode on a machine with only Node.js and npm: installs the pinned Bun and the
# dependencies, then starts the service on the embedded SQLite database (see scripts/dev.ts).
set -eu
cd "$(dirname "$0")/.."
. scripts/prepare.sh
exec bun run scripts/dev.ts "$@"
