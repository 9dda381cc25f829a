#!/usr/bin/env bash
# Installs and builds fedcl (scripts/setup.sh), then runs the whole test suite (not the tests
# labelled `long`: ctest -L long runs them). The tests start their own daemons on loopback. The unit,
# end-to-end, TLS and tool tests and the fuzz corpora's replays run in a tree built with
# AddressSanitizer and UndefinedBehaviorSanitizer (scripts/sanitize.sh, build-asan/), the unit and
# end-to-end tests once more in a third built with ThreadSanitizer (build-tsan/), failing on any
# sanitizer report; the others (real programs, examples, federation, MPI, packages, operations, load,
# stress, isolation) in build/, which has only those (FEDCL_TESTS=release). Exits non-zero when any
# test fails.
set -euo pipefail

scripts=$(cd "$(dirname "$0")" && pwd)
build=${FEDCL_BUILD_DIR:-$(dirname "$scripts")/build}
bash "$scripts/setup.sh" --tests release

# The two sanitized trees build at the lowest priority while the suite runs: its tests wait more than
# they compute (daemons' time limits, killed peers, stalled links), and the builds take the cycles
# they leave. One after the other, so that the first is ready for its tests as early as can be (side
# by side, each took twice as long); the second builds on beside them. Each build's output waits in
# a file until the suite is done; a file beside it says the build passed.
for mode in address thread; do
  rm -f "$build/sanitize-$mode-build.ok"
done
(
  for mode in address thread; do
    nice -n 19 bash "$scripts/sanitize.sh" "$mode" build >"$build/sanitize-$mode-build.out" 2>&1 &&
      touch "$build/sanitize-$mode-build.ok"
  done
) &
builders=$!

status=0
echo "==> running the tests"
start=$SECONDS
# Tests at once: as in sanitize.sh (FEDCL_TEST_JOBS overrides).
jobs=${FEDCL_TEST_JOBS:-$(($(nproc) * 3 > 8 ? 8 : $(nproc) * 3))}
ctest --test-dir "$build" -j"$jobs" --output-on-failure --timeout 120 --no-tests=error \
  --label-exclude '^long$' || status=1
echo "==> the tests took $((SECONDS - start)) s"

for mode in address thread; do
  start=$SECONDS
  while [[ ! -e $build/sanitize-$mode-build.ok ]] && kill -0 "$builders" 2>/dev/null; do sleep 1; done
  cat "$build/sanitize-$mode-build.out"
  echo "==> waited $((SECONDS - start)) s more for the $mode build"
  if [[ ! -e $build/sanitize-$mode-build.ok ]]; then
    status=1
    continue
  fi
  start=$SECONDS
  bash "$scripts/sanitize.sh" "$mode" test || status=1
  echo "==> the $mode sanitizer's tests took $((SECONDS - start)) s"
done
exit "$status"
