#!/bin/sh
# Makes the Bun version pinned in package.json available, installing it from the npm registry when
# missing, and prints the path of the binary to use. Needs only Node.js and npm.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
want=$(sed -n 's/.*"packageManager": *"bun@\([^"]*\)".*/\1/p' "$root/package.json")
local_bun="$root/.tools/node_modules/.bin/bun"

if command -v bun >/dev/null 2>&1 && [ "$(bun --version 2>/dev/null)" = "$want" ]; then
  command -v bun
  exit 0
fi
if [ -x "$local_bun" ] && [ "$("$local_bun" --version 2>/dev/null)" = "$want" ]; then
  echo "$local_bun"
  exit 0
fi
echo "ensure-bun: installing bun@$want from the npm registry" >&2
if npm install -g "bun@$want" >&2 && [ "$(bun --version 2>/dev/null)" = "$want" ]; then
  command -v bun
  exit 0
fi
# No rights for a global install (or another bun first on PATH): keep a private copy in .tools/.
npm install --no-save --prefix "$root/.tools" "bun@$want" >&2
echo "$local_bun"
