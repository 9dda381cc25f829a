#!/usr/bin/env bash
# clpeak completes on a fedcl device: it exits 0, prints no error, and reports a positive number for
# every measure of every test asked for.
#
#   tests/realprog/clpeak_run.sh BUILD_DIR [CLPEAK_TEST_OPTION...]
#
# The default tests, every commit's, cover kernels (global bandwidth, launch latency) in about 15 s on
# two quiet cores. realprog_clpeak_full (label long) adds every host transfer path (read, write,
# blocking or not, map, unmap: --transfer-bandwidth, 75 s of wall time and 95 s of CPU through fedcl
# on two cores, 8 s on PoCL directly; the e2e tests and PyOpenCL's cover the same paths with less
# data) and the compute tests (one launch each, then the device computes).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/fedcl_env.sh"
realprog_init "${1:-}"
shift
tests=("$@")
((${#tests[@]})) || tests=(--global-bandwidth --kernel-latency)

# fedcl is the only platform the loader sees, so it is platform 0.
status=0
realprog_fedcl_env timeout 900 clpeak -p 0 -d 0 "${tests[@]}" --enable-xml-dump -f "$REALPROG_TMP/clpeak.xml" \
  >"$REALPROG_TMP/clpeak.out" 2>&1 || status=$?
cat "$REALPROG_TMP/clpeak.out"
((status == 0)) || realprog_fail "clpeak exited with status $status"
# clpeak reports an OpenCL error as a line with the failing call and its code, then skips the test.
# A device without half precision is reported as skipped too (--compute-sp), which is no error.
if grep -inE 'error|skipped|\(-[0-9]+\)' "$REALPROG_TMP/clpeak.out" | grep -v 'No half precision support'; then
  realprog_fail "clpeak reported errors"
fi
realprog_daemon_alive || realprog_fail "fedcld died during clpeak"
[ -s "$REALPROG_TMP/clpeak.xml" ] || realprog_fail "clpeak wrote no results"
/usr/bin/python3 "$here/clpeak_check.py" "$REALPROG_TMP/clpeak.xml" "${tests[@]}" || realprog_fail "clpeak results incomplete"
echo "PASS: clpeak completed through fedcl"
