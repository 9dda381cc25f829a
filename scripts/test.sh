#!/usr/bin/env bash
# Installs and builds fedcl (scripts/setup.sh), then runs the whole test suite. The tests start their
# own daemons on loopback (not those labelled `long`: ctest -L long runs them). Exits non-zero when any
# test fails.
set -euo pipefail

scripts=$(cd "$(dirname "$0")" && pwd)
build=${FEDCL_BUILD_DIR:-$(dirname "$scripts")/build}
bash "$scripts/setup.sh"

echo "==> running the tests"
ctest --test-dir "$build" -j2 --output-on-failure --timeout 120 --no-tests=error --label-exclude long
