#!/usr/bin/env bash
# Runs a command against fedclds started here on loopback, then stops them:
#
#   scripts/with-fedcld.sh [--daemons N] COMMAND [ARGS...]
#
# The command sees fedcl as its only OpenCL platform (OCL_ICD_VENDORS=<build>/vendors) and the N
# daemons (default 1: N "nodes" of one machine) in FEDCL_HOSTS; each daemon serves the machine's own
# OpenCL platforms. When the command fails, the daemons' logs follow its output. Uses the build in
# build/ unless FEDCL_BUILD_DIR names another; FEDCLD_ARGS: more options for every daemon, where {d}
# stands for the daemon's number (e.g. "--devices {d}": a GPU each).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FEDCL_BUILD_DIR:-$repo/build}
daemon=$build/bridge-daemon/fedcld
count=1
if [[ ${1:-} == --daemons ]]; then count=$2; shift 2; fi
(($#)) || { echo "usage: with-fedcld.sh [--daemons N] COMMAND [ARGS...]" >&2; exit 2; }
for need in "$daemon" "$build/vendors/fedcl.icd"; do
  [[ -e $need ]] || { echo "with-fedcld.sh: $need is missing; run scripts/setup.sh first" >&2; exit 2; }
done

work=$(mktemp -d)
pids=()
stop_daemons() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap stop_daemons EXIT
trap 'exit 143' TERM INT

show_logs() {
  local d
  for ((d = 0; d < count; d++)); do
    echo "with-fedcld.sh: $1; the log of fedcld $d:" >&2
    if [[ -s $work/fedcld$d.log ]]; then sed 's/^/  /' "$work/fedcld$d.log" >&2; else echo "  (empty)" >&2; fi
  done
}

# --config /dev/null: the daemons ignore this machine's /etc/fedcl/fedcld.conf.
for ((d = 0; d < count; d++)); do
  names=()
  ((count > 1)) && names=(--name "node$d")  # the devices then say which daemon holds them
  args=${FEDCLD_ARGS:-}
  # shellcheck disable=SC2086  # FEDCLD_ARGS: more daemon options, split at spaces
  "$daemon" --config /dev/null --listen 127.0.0.1:0 --port-file "$work/port$d" "${names[@]}" --log-level warn \
    ${args//\{d\}/$d} 2>"$work/fedcld$d.log" &
  pids+=($!)
done
hosts=()
for ((d = 0; d < count; d++)); do
  for _ in $(seq 100); do
    [[ -s $work/port$d ]] && break
    kill -0 "${pids[d]}" 2>/dev/null || { show_logs "fedcld $d exited"; exit 1; }
    sleep 0.1
  done
  [[ -s $work/port$d ]] || { show_logs "fedcld $d did not listen within 10 s"; exit 1; }
  hosts+=("127.0.0.1:$(<"$work/port$d")")
done

status=0
OCL_ICD_VENDORS=$build/vendors FEDCL_HOSTS=$(IFS=,; echo "${hosts[*]}") "$@" || status=$?
((status == 0)) || show_logs "'$1' failed with status $status"
exit "$status"
