#!/usr/bin/env bash
# `npm test`: the checks, then the suite. The type check only reads, so it runs beside the suite, whose start
# (servers booting, files importing) leaves a core partly idle; proto lint and the gen/ check run first, because
# `buf generate` rewrites gen/ while the suite would import from it. Extra arguments go to vitest.
set -u
buf lint && npm run --silent gen:verify || exit 1
typecheck_log=$(mktemp)
tsc --noEmit >"$typecheck_log" 2>&1 &
typecheck=$!
vitest run --config test/vitest.config.ts "$@"
tests=$?
wait "$typecheck"
typed=$?
if [ "$typed" -ne 0 ]; then
  echo "tsc --noEmit failed:" >&2
  cat "$typecheck_log" >&2
fi
rm -f "$typecheck_log"
[ "$tests" -ne 0 ] && exit "$tests"
exit "$typed"
