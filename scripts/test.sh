#!/usr/bin/env bash
# Installs and builds fedcl (scripts/setup.sh), then runs the whole test suite (not the tests
# labelled `long`: ctest -L long runs them). The tests start their own daemons on loopback. The unit,
# end-to-end, TLS and tool tests and the fuzz corpora's replays run in a tree built with
# AddressSanitizer and UndefinedBehaviorSanitizer (scripts/sanitize.sh, build-asan/), the unit and
# end-to-end tests once more in a third built with ThreadSanitizer (build-tsan/), failing on any
# sanitizer report; the others (real programs, examples, federation, MPI, packages, operations, load)
# in build/. Exits non-zero when any test fails.
set -euo pipefail

scripts=$(cd "$(dirname "$0")" && pwd)
build=${FEDCL_BUILD_DIR:-$(dirname "$scripts")/build}
bash "$scripts/setup.sh"

# The two sanitized trees build at the lowest priority while the suite runs: its tests wait more than
# they compute (daemons' time limits, killed peers, stalled links), and the builds take the cycles
# they leave. Each build's output waits in a file until the suite is done.
declare -A builders
for mode in address thread; do
  nice -n 19 bash "$scripts/sanitize.sh" "$mode" build >"$build/sanitize-$mode-build.out" 2>&1 &
  builders[$mode]=$!
done

status=0
echo "==> running the tests"
start=$SECONDS
# Tests at once: as in sanitize.sh (FEDCL_TEST_JOBS overrides).
jobs=${FEDCL_TEST_JOBS:-$(($(nproc) * 3 > 8 ? 8 : $(nproc) * 3))}
# The unit, end-to-end, TLS and tool tests run in the sanitized trees below (all of them under ASan
# and UBSan, unit and e2e under TSan): here, the rest.
ctest --test-dir "$build" -j"$jobs" --output-on-failure --timeout 120 --no-tests=error \
  --label-exclude '^(long|unit|e2e|tls|tools|fuzz)$' || status=1
echo "==> the tests took $((SECONDS - start)) s"

for mode in address thread; do
  start=$SECONDS
  built=0
  wait "${builders[$mode]}" && built=1
  cat "$build/sanitize-$mode-build.out"
  echo "==> waited $((SECONDS - start)) s more for the $mode build"
  if ((!built)); then
    status=1
    continue
  fi
  start=$SECONDS
  bash "$scripts/sanitize.sh" "$mode" test || status=1
  echo "==> the $mode sanitizer's tests took $((SECONDS - start)) s"
done
exit "$status"
