#!/usr/bin/env bash
# Installs and builds fedcl (scripts/setup.sh), then runs the whole test suite. The tests start their
# own daemons on loopback (not those labelled `long`: ctest -L long runs them). Then builds a second
# tree with AddressSanitizer and UndefinedBehaviorSanitizer (scripts/sanitize.sh, build-asan/) and
# runs the unit, end-to-end, TLS and tool tests there again, and a third with ThreadSanitizer
# (build-tsan/) for the unit and end-to-end tests, failing on any sanitizer report. Exits non-zero
# when any test fails.
set -euo pipefail

scripts=$(cd "$(dirname "$0")" && pwd)
build=${FEDCL_BUILD_DIR:-$(dirname "$scripts")/build}
bash "$scripts/setup.sh"

status=0
echo "==> running the tests"
start=$SECONDS
ctest --test-dir "$build" -j2 --output-on-failure --timeout 120 --no-tests=error --label-exclude long || status=1
echo "==> the tests took $((SECONDS - start)) s"

start=$SECONDS
bash "$scripts/sanitize.sh" address || status=1
echo "==> the ASan+UBSan build and tests took $((SECONDS - start)) s"
start=$SECONDS
bash "$scripts/sanitize.sh" thread || status=1
echo "==> the ThreadSanitizer build and tests took $((SECONDS - start)) s"
exit "$status"
