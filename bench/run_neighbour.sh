#!/usr/bin/env bash
# Whether one session's slow backend calls hold up another session of the same fedcld: starts a
# fedcld on loopback with the backend behind it and runs fedcl_neighbour_bench, which times
# enqueue + clFinish while a neighbour process builds large programs or creates contexts in a loop,
# on the backend directly and through the daemon, in one run (bench/README.md). Writes the report
# to bench/results/<date>-<host>-neighbour.txt (or the folder FEDCL_BENCH_RESULTS names).
#
#   bench/run_neighbour.sh [BUILD_DIR] [-- BENCH_OPTIONS...]
#
# The backend is PoCL (/etc/OpenCL/vendors/pocl.icd); FEDCL_BENCH_BACKEND names another vendor's
# library (on the GPU machine, /usr/local/nvidia/lib64/libnvidia-opencl.so.1), and then the bench
# needs `-- --backend NAME` (a part of its platform name). FEDCLD_ARGS: more daemon options.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=build
if [[ $# -gt 0 && $1 != -* ]]; then build=$1; shift; fi
[[ $build = /* ]] || build=$repo/$build
if [[ $# -gt 0 ]]; then
  [[ $1 == -- ]] || { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
  shift
fi
bench=$build/bench/fedcl_neighbour_bench daemon=$build/bridge-daemon/fedcld
for need in "$bench" "$daemon" "$build/vendors/fedcl.icd"; do
  [[ -e $need ]] || { echo "run_neighbour.sh: $need is missing" >&2; exit 2; }
done

work=$(mktemp -d)
daemon_pid=
cleanup() {
  [[ -n $daemon_pid ]] && { kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/vendors-backend" "$work/vendors"
if [[ -n ${FEDCL_BENCH_BACKEND:-} ]]; then
  echo "$FEDCL_BENCH_BACKEND" >"$work/vendors-backend/backend.icd"
  backend_name=$FEDCL_BENCH_BACKEND
else
  cp /etc/OpenCL/vendors/pocl.icd "$work/vendors-backend/"
  backend_name="PoCL $(dpkg-query -W -f '${Version}' libpocl2 2>/dev/null || echo unknown)"
fi
cp "$work/vendors-backend/"*.icd "$build/vendors/fedcl.icd" "$work/vendors/"

# shellcheck disable=SC2086  # FEDCLD_ARGS: more daemon options, split at spaces
env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$work/vendors-backend" "$daemon" --config /dev/null \
  --listen 127.0.0.1:0 --port-file "$work/port" --log-level warn ${FEDCLD_ARGS:-} 2>"$work/fedcld.log" &
daemon_pid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
[[ -s $work/port ]] || { echo "run_neighbour.sh: fedcld did not start" >&2; cat "$work/fedcld.log" >&2; exit 1; }

# shellcheck source=bench/report_common.sh
source "$repo/bench/report_common.sh"
out=$(report_file neighbour)
echo "# writing $out" >&2
{
  status=0
  report_header "fedcl_neighbour_bench" "$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)"
  echo "# backend: $backend_name, behind fedcld on loopback; cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
  env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$work/vendors" FEDCL_HOSTS="127.0.0.1:$(cat "$work/port")" \
    "$bench" "$@" || status=$?
  echo "# fedcld's log:"
  sed 's/^/#   /' "$work/fedcld.log"
  exit "$status"
} | tee "$out"
