#!/usr/bin/env bash
# `npm test`: the checks beside the suite. They only read the tree — proto lint, gen/ against what `buf generate`
# makes of proto/ (generated into a directory of its own, so gen/, which the suite imports, is never rewritten under
# it) and the type check — so they run while the suite's start (servers booting, files importing) leaves a core
# partly idle, instead of before it. The run fails if any of them fails, each reported with its output. Extra
# arguments go to vitest.
set -u
checks_dir=$(mktemp -d)
trap 'rm -rf "$checks_dir"' EXIT

# gen/ as committed is what `buf generate` makes of proto/ (npm run gen:verify checks the same by regenerating in place).
gen_check() {
  buf generate --output "$checks_dir/generated" || return 1
  if ! diff -r gen "$checks_dir/generated/gen" >/dev/null || [ -n "$(git status --porcelain -- gen/)" ]; then
    echo "gen/ is not what buf generate makes of proto/: run npm run gen and commit" >&2
    return 1
  fi
}

buf lint >"$checks_dir/lint.log" 2>&1 &
lint=$!
gen_check >"$checks_dir/gen.log" 2>&1 &
gen=$!
tsc --noEmit >"$checks_dir/typecheck.log" 2>&1 &
typecheck=$!

vitest run --config test/vitest.config.ts "$@"
status=$?

report() { # name pid log
  wait "$2" && return 0
  echo "$1 failed:" >&2
  cat "$3" >&2
  return 1
}
failed=0
report "buf lint" "$lint" "$checks_dir/lint.log" || failed=1
report "the gen/ check" "$gen" "$checks_dir/gen.log" || failed=1
report "tsc --noEmit" "$typecheck" "$checks_dir/typecheck.log" || failed=1
[ "$status" -ne 0 ] && exit "$status"
exit "$failed"
