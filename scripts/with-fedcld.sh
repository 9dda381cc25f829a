#!/usr/bin/env bash
# Runs a command against a fedcld started here on loopback, then stops the daemon:
#
#   scripts/with-fedcld.sh COMMAND [ARGS...]
#
# The command sees fedcl as its only OpenCL platform (OCL_ICD_VENDORS=<build>/vendors) and the daemon
# in FEDCL_HOSTS; the daemon serves the machine's own OpenCL platforms. When the command fails, the
# daemon's log follows its output. Uses the build in build/ unless FEDCL_BUILD_DIR names another.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FEDCL_BUILD_DIR:-$repo/build}
daemon=$build/bridge-daemon/fedcld
(($#)) || { echo "usage: with-fedcld.sh COMMAND [ARGS...]" >&2; exit 2; }
for need in "$daemon" "$build/vendors/fedcl.icd"; do
  [[ -e $need ]] || { echo "with-fedcld.sh: $need is missing; run scripts/setup.sh first" >&2; exit 2; }
done

work=$(mktemp -d)
daemon_pid=
stop_daemon() {
  if [[ -n $daemon_pid ]]; then
    kill "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap stop_daemon EXIT
trap 'exit 143' TERM INT

show_log() {
  echo "with-fedcld.sh: $1; fedcld's log:" >&2
  if [[ -s $work/fedcld.log ]]; then sed 's/^/  /' "$work/fedcld.log" >&2; else echo "  (empty)" >&2; fi
}

# --config /dev/null: the daemon ignores this machine's /etc/fedcl/fedcld.conf.
"$daemon" --config /dev/null --listen 127.0.0.1:0 --port-file "$work/port" --log-level warn 2>"$work/fedcld.log" &
daemon_pid=$!
for _ in $(seq 100); do
  [[ -s $work/port ]] && break
  kill -0 "$daemon_pid" 2>/dev/null || { show_log "fedcld exited"; exit 1; }
  sleep 0.1
done
[[ -s $work/port ]] || { show_log "fedcld did not listen within 10 s"; exit 1; }

status=0
OCL_ICD_VENDORS=$build/vendors FEDCL_HOSTS=127.0.0.1:$(<"$work/port") "$@" || status=$?
((status == 0)) || show_log "'$1' failed with status $status"
exit "$status"
