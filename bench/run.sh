#!/usr/bin/env bash
# Runs fedcl_bench: the backend (PoCL) directly and through a fedcld started here on loopback, in one
# process. Writes the output and a description of the machine to bench/results/<date>-<host>.txt
# (or to the folder FEDCL_BENCH_RESULTS names).
#
#   bench/run.sh [BUILD_DIR] [-- fedcl_bench options, e.g. --quick]
#
# BUILD_DIR defaults to build-bench (configure it with -DCMAKE_BUILD_TYPE=Release).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-bench}
[[ $# -gt 0 ]] && shift
[[ ${1:-} == -- ]] && shift
[[ $build = /* ]] || build=$repo/$build
bench=$build/bench/fedcl_bench
daemon=$build/bridge-daemon/fedcld
backend_icd=${FEDCL_BENCH_BACKEND_ICD:-/etc/OpenCL/vendors/pocl.icd}
for need in "$bench" "$daemon" "$build/vendors/fedcl.icd" "$backend_icd"; do
  [[ -e $need ]] || { echo "run.sh: $need is missing (build with -DFEDCL_BUILD_BENCH=ON)" >&2; exit 2; }
done

work=$(mktemp -d)
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Only the two platforms compared: the backend and fedcl.
mkdir "$work/vendors"
cp "$backend_icd" "$work/vendors/"
cp "$build/vendors/fedcl.icd" "$work/vendors/"

"$daemon" --listen 127.0.0.1:0 --port-file "$work/port" --log-level warn 2>"$work/fedcld.log" &
daemon_pid=$!
for _ in $(seq 100); do
  [[ -s $work/port ]] && break
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/fedcld.log" >&2; exit 1; }
  sleep 0.1
done
[[ -s $work/port ]] || { echo "run.sh: fedcld did not start" >&2; exit 1; }

results=${FEDCL_BENCH_RESULTS:-$repo/bench/results}
mkdir -p "$results"
out=$results/$(date +%Y-%m-%dT%H%M%S)-$(hostname -s).txt
{
  echo "# fedcl_bench $(date -Iseconds)"
  echo "# commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "# host: $(hostname)"
  echo "# cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores online"
  echo "# memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "# kernel: $(uname -sr)"
  echo "# pocl: $(dpkg-query -W -f '${Version}' libpocl2 2>/dev/null || echo unknown)"
  echo "# build: $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")"
  echo "# fedcld: 127.0.0.1:$(cat "$work/port") (loopback TCP)"
  echo "# options: ${*:-(none)}"
} >"$out"

status=0
OCL_ICD_VENDORS=$work/vendors FEDCL_HOSTS=127.0.0.1:$(cat "$work/port") "$bench" "$@" | tee -a "$out" || status=$?
if [[ -s $work/fedcld.log ]]; then sed 's/^/# fedcld: /' "$work/fedcld.log" >>"$out"; fi
echo "results: $out"
exit "$status"
