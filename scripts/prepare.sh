# Sourced by dev.sh, test.sh and .ci/run: puts the pinned Bun first on PATH (installing it from npm
# when missing) and installs the locked dependencies.
BUN=$(sh scripts/ensure-bun.sh)
PATH="$(dirname "$BUN"):$PATH"
export PATH
bun install --frozen-lockfile
