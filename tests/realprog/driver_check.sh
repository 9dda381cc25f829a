#!/usr/bin/env bash
# fedcl behaves exactly as the node's driver: driver_check's conformance-style checks (long names,
# builds, out-of-order queues, images, rectangles, kernel printf, launch errors, host access flags,
# property queries, queue properties, a sweep of error conditions) print the same lines through
# fedcl as on the backend used directly, kernel printf output included.
#
#   tests/realprog/driver_check.sh BUILD_DIR
# The backend is the system's PoCL, or the library FEDCL_BACKEND_LIBRARY names (NVIDIA's on a GPU node).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/fedcl_env.sh"
realprog_init "${1:-}"
check="$1/tests/realprog/driver_check"
[ -x "$check" ] || realprog_fail "no driver_check at $check (build first)"

realprog_pocl_env timeout 300 "$check" "" >"$REALPROG_TMP/backend.out" 2>"$REALPROG_TMP/backend.err"
backend_status=$?
realprog_fedcl_env timeout 300 "$check" fedcl >"$REALPROG_TMP/fedcl.out" 2>"$REALPROG_TMP/fedcl.err"
fedcl_status=$?
realprog_daemon_alive || realprog_fail "fedcld died during driver_check"
# The daemon still serves a new program afterwards.
DRIVER_CHECK_ONLY=rect realprog_fedcl_env timeout 60 "$check" fedcl >"$REALPROG_TMP/after.out" 2>&1 &&
  grep -q '^end: all sections ran$' "$REALPROG_TMP/after.out" ||
  { cat "$REALPROG_TMP/after.out"; realprog_fail "fedcld serves no new program after driver_check"; }
grep -q '^end: all sections ran$' "$REALPROG_TMP/backend.out" ||
  { cat "$REALPROG_TMP/backend.err"; tail -5 "$REALPROG_TMP/backend.out"; realprog_fail "driver_check on the backend did not finish ($backend_status)"; }
# Equal line by line, but for the deliberate differences listed (each with its reason).
if ! python3 "$here/driver_check_compare.py" "$REALPROG_TMP/backend.out" "$REALPROG_TMP/fedcl.out" \
    "$here/driver_check_allowed_differences.txt"; then
  echo "--- fedcl's stderr:"; cat "$REALPROG_TMP/fedcl.err"
  echo "--- fedcld's log:"; tail -50 "$REALPROG_TMP/fedcld.log"
  realprog_fail "driver_check differs through fedcl (exit $fedcl_status)"
fi
echo "driver_check: the backend's lines and fedcl's agree"
