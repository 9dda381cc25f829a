#!/usr/bin/env bash
# clinfo sees the same device through fedcl as through PoCL directly: every property equal, except
# the differences clinfo_allowed_differences.txt lists with their reasons.
#
#   tests/realprog/clinfo_compare.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/fedcl_env.sh"
realprog_init "${1:-}"

# clinfo --raw prints one property per line with its symbolic name; the default output adds what
# the loader does with a NULL platform. A hang fails the run.
for format in raw txt; do
  option=$([ "$format" = raw ] && echo --raw)
  realprog_pocl_env timeout 60 clinfo $option >"$REALPROG_TMP/pocl.$format" 2>&1 || realprog_fail "clinfo on PoCL failed"
  realprog_fedcl_env timeout 60 clinfo $option >"$REALPROG_TMP/fedcl.$format" 2>&1 || {
    cat "$REALPROG_TMP/fedcl.$format"
    realprog_fail "clinfo through fedcl failed"
  }
done
realprog_daemon_alive || realprog_fail "fedcld died during clinfo"
/usr/bin/python3 "$here/clinfo_compare.py" "$REALPROG_TMP/pocl.raw" "$REALPROG_TMP/fedcl.raw" \
  "$here/clinfo_allowed_differences.txt" "$REALPROG_TMP/pocl.txt" "$REALPROG_TMP/fedcl.txt"
