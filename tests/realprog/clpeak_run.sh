#!/usr/bin/env bash
# clpeak completes on a fedcl device: it exits 0, prints no error, and reports a positive number for
# every measure of every test asked for.
#
#   tests/realprog/clpeak_run.sh BUILD_DIR [CLPEAK_TEST_OPTION...]
#
# The default tests cover kernels (global bandwidth, launch latency) and every host transfer path
# (read, write, blocking or not, map, unmap) in about 20 s on two quiet cores. The compute tests add
# nothing fedcl does (one launch each, then the device computes; 15 s of both cores for
# --compute-sp): pass --all-tests for everything.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/fedcl_env.sh"
realprog_init "${1:-}"
shift
tests=("$@")
((${#tests[@]})) || tests=(--global-bandwidth --transfer-bandwidth --kernel-latency)

# fedcl is the only platform the loader sees, so it is platform 0.
status=0
realprog_fedcl_env timeout 900 clpeak -p 0 -d 0 "${tests[@]}" --enable-xml-dump -f "$REALPROG_TMP/clpeak.xml" \
  >"$REALPROG_TMP/clpeak.out" 2>&1 || status=$?
cat "$REALPROG_TMP/clpeak.out"
((status == 0)) || realprog_fail "clpeak exited with status $status"
# clpeak reports an OpenCL error as a line with the failing call and its code, then skips the test.
if grep -inE 'error|skipped|\(-[0-9]+\)' "$REALPROG_TMP/clpeak.out"; then
  realprog_fail "clpeak reported errors"
fi
realprog_daemon_alive || realprog_fail "fedcld died during clpeak"
[ -s "$REALPROG_TMP/clpeak.xml" ] || realprog_fail "clpeak wrote no results"
/usr/bin/python3 "$here/clpeak_check.py" "$REALPROG_TMP/clpeak.xml" "${tests[@]}" || realprog_fail "clpeak results incomplete"
echo "PASS: clpeak completed through fedcl"
