#!/usr/bin/env bash
# clinfo sees the same device through fedcl as through PoCL directly: every property equal, except
# the differences clinfo_allowed_differences.txt lists with their reasons.
#
#   tests/realprog/clinfo_compare.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/fedcl_env.sh"
realprog_init "${1:-}"

# clinfo --raw prints one property per line with its symbolic name; a hang fails the run.
realprog_pocl_env timeout 60 clinfo --raw >"$REALPROG_TMP/pocl.raw" 2>&1 || realprog_fail "clinfo on PoCL failed"
realprog_fedcl_env timeout 60 clinfo --raw >"$REALPROG_TMP/fedcl.raw" 2>&1 || {
  cat "$REALPROG_TMP/fedcl.raw"
  realprog_fail "clinfo through fedcl failed"
}
realprog_daemon_alive || realprog_fail "fedcld died during clinfo"
/usr/bin/python3 "$here/clinfo_compare.py" "$REALPROG_TMP/pocl.raw" "$REALPROG_TMP/fedcl.raw" \
  "$here/clinfo_allowed_differences.txt"
