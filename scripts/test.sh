#!/bin/sh
# The whole test suite: once on the embedded SQLite database, then again on MySQL when a server is
# reachable (TEST_MYSQL_HOST/PORT/USER/PASSWORD, default root@127.0.0.1:3306). TEST_MYSQL=1 or
# REQUIRE_MYSQL=1 makes an unreachable MySQL fail the run instead of skipping that pass.
set -eu
cd "$(dirname "$0")/.."
. scripts/prepare.sh
# test/browser.test.ts drives Debian's chromium; install it when missing (nothing is skipped).
sh scripts/ensure-chromium.sh

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0

echo "== tests on SQLite"
# test/*.test.ts need no database of their own dialect (config, CLI, executable); test/mysql needs
# both servers and runs in the MySQL pass.
TEST_DB=sqlite bun test ./src ./test/db test/*.test.ts 2>&1 | tee -a "$log" || status=1
# `tee` hides bun's exit code in plain sh; the fail count below catches a failing pass too.

if bun run scripts/mysql-ping.ts; then
  echo "== tests on MySQL"
  TEST_DB=mysql bun test ./src ./test/db ./test/mysql 2>&1 | tee -a "$log" || status=1
elif [ "${REQUIRE_MYSQL:-}" = "1" ] || [ "${TEST_MYSQL:-}" = "1" ]; then
  echo "MySQL is not reachable and REQUIRE_MYSQL/TEST_MYSQL is set: failing" >&2
  status=1
else
  echo "== MySQL not reachable: MySQL pass skipped (set REQUIRE_MYSQL=1 to fail instead)"
fi

passed=$(sed -n 's/^ *\([0-9][0-9]*\) pass$/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(sed -n 's/^ *\([0-9][0-9]*\) fail$/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
errors=$(grep -c '^error: \|^# Unhandled error' "$log" || true)
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ] && [ "$errors" -eq 0 ] || status=1
echo "$passed passed, $failed failed"
exit $status
