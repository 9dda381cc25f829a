#!/usr/bin/env bash
# Runs fedcl_bench: the backend (PoCL) directly and through a fedcld started here on loopback, in one
# process. Writes the output and a description of the machine to bench/results/<date>-<host>.txt
# (or to the folder FEDCL_BENCH_RESULTS names).
#
#   bench/run.sh [BUILD_DIR] [--backend-library LIB] [-- fedcl_bench options, e.g. --quick]
#
#   --backend-library LIB  name the backend's library directly (OCL_ICD_FILENAMES), for loaders that
#                          read no vendors folder, e.g. NVIDIA's: /usr/local/nvidia/lib64/libnvidia-opencl.so.1
#                          (then pass --backend NVIDIA to fedcl_bench); otherwise the backend is the .icd
#                          file FEDCL_BENCH_BACKEND_ICD names (default PoCL's)
#
# BUILD_DIR defaults to build-bench (configure it with -DCMAKE_BUILD_TYPE=Release).
# FEDCL_BENCH_DAEMON_ARGS: more options for fedcld, e.g. "--resume-window 0".
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=build-bench
if [[ $# -gt 0 && $1 != -* ]]; then build=$1; shift; fi
[[ $build = /* ]] || build=$repo/$build
backend_icd=${FEDCL_BENCH_BACKEND_ICD:-/etc/OpenCL/vendors/pocl.icd} backend_library=
while [[ $# -gt 0 ]]; do
  case $1 in
    --backend-library) backend_library=${2:?--backend-library needs a library}; shift ;;
    --) shift; break ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done
bench=$build/bench/fedcl_bench
daemon=$build/bridge-daemon/fedcld
for need in "$bench" "$daemon" "$build/vendors/fedcl.icd"; do
  [[ -e $need ]] || { echo "run.sh: $need is missing (build with -DFEDCL_BUILD_BENCH=ON)" >&2; exit 2; }
done
# A library named without a folder is the loader's to find.
[[ -n $backend_library || -e $backend_icd ]] || { echo "run.sh: no backend .icd at $backend_icd" >&2; exit 2; }
[[ $backend_library != */* || -e $backend_library ]] || { echo "run.sh: $backend_library is missing" >&2; exit 2; }

work=$(mktemp -d)
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Which drivers each process's loader sees: fedcld the backend alone, fedcl_bench the backend and fedcl.
if [[ -n $backend_library ]]; then
  daemon_env=(env -u OCL_ICD_VENDORS OCL_ICD_FILENAMES="$backend_library")
  bench_env=(env -u OCL_ICD_VENDORS OCL_ICD_FILENAMES="$backend_library:$(head -1 "$build/vendors/fedcl.icd")")
else
  mkdir "$work/vendors-backend" "$work/vendors"
  cp "$backend_icd" "$work/vendors-backend/"
  cp "$backend_icd" "$build/vendors/fedcl.icd" "$work/vendors/"
  daemon_env=(env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$work/vendors-backend")
  bench_env=(env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$work/vendors")
fi

# shellcheck disable=SC2086 # FEDCL_BENCH_DAEMON_ARGS is a list of options
"${daemon_env[@]}" "$daemon" --listen 127.0.0.1:0 --port-file "$work/port" --log-level warn ${FEDCL_BENCH_DAEMON_ARGS:-} 2>"$work/fedcld.log" &
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
  echo "# fedcld options: ${FEDCL_BENCH_DAEMON_ARGS:-(defaults)}"
  echo "# cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores online"
  echo "# memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "# kernel: $(uname -sr)"
  echo "# backend: ${backend_library:-$backend_icd}"
  echo "# pocl: $(dpkg-query -W -f '${Version}' libpocl2 2>/dev/null || echo unknown)"
  if command -v nvidia-smi >/dev/null; then
    echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
  fi
  echo "# build: $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")"
  echo "# fedcld: 127.0.0.1:$(cat "$work/port") (loopback TCP)"
  echo "# options: ${*:-(none)}"
} >"$out"

status=0
"${bench_env[@]}" FEDCL_HOSTS=127.0.0.1:"$(cat "$work/port")" "$bench" "$@" | tee -a "$out" || status=$?
if [[ -s $work/fedcld.log ]]; then sed 's/^/# fedcld: /' "$work/fedcld.log" >>"$out"; fi
echo "results: $out"
exit "$status"
