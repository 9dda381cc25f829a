#!/usr/bin/env bash
# Runs MPI jobs under `mpirun -np N`, every rank against a fedcld of its own on loopback:
#
#   tests/mpi/run_mpi.sh BUILD_DIR N [--must-fail] PROGRAM [ARGS...] [--- [--must-fail] PROGRAM [ARGS...]]...
#
# Starts N daemons (port 0, port files), runs the jobs one after the other against the same daemons,
# giving rank r FEDCL_HOSTS=<daemon r> and the fedcl-only vendors folder, and stops the daemons at
# exit. A job marked --must-fail must end with a failure of its own (a killed rank), not by the time
# limit (FEDCL_MPI_TIMEOUT seconds, default 100); any other job fails if fedcl reported a lost
# daemon on its standard error. After the jobs, every daemon must still be up. As
# root (CI), Open MPI wants --allow-run-as-root; --oversubscribe lets N exceed the cores. The daemons'
# logs (FEDCLD_LOG_LEVEL, default warn) are printed when something failed, or always with
# FEDCL_MPI_SHOW_LOGS=1. FEDCLD_ARGS: more options for every daemon.
set -euo pipefail

build=$1 ranks=$2
shift 2
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

hosts=()
for ((r = 0; r < ranks; r++)); do
  # shellcheck disable=SC2086  # FEDCLD_ARGS: more daemon options, split at spaces
  env -u OCL_ICD_VENDORS "$build/bridge-daemon/fedcld" --config /dev/null --listen 127.0.0.1:0 --port-file "$work/port$r" \
    --name "rank$r" --log-level "${FEDCLD_LOG_LEVEL:-warn}" ${FEDCLD_ARGS:-} 2>"$work/fedcld$r.log" &
  pids+=($!)
done
for ((r = 0; r < ranks; r++)); do
  for _ in $(seq 100); do [[ -s $work/port$r ]] && break; sleep 0.1; done
  [[ -s $work/port$r ]] || { echo "run_mpi.sh: fedcld $r did not start" >&2; cat "$work/fedcld$r.log" >&2; exit 1; }
  hosts+=("127.0.0.1:$(cat "$work/port$r")")
done

root=()
[[ $(id -u) == 0 ]] && root=(--allow-run-as-root)

show_logs() {
  for ((r = 0; r < ranks; r++)); do echo "--- fedcld of rank $r:" >&2; cat "$work/fedcld$r.log" >&2; done
}

# run_job [--must-fail] PROGRAM [ARGS...]
run_job() {
  local must_fail=0 status=0
  [[ $1 == --must-fail ]] && { must_fail=1; shift; }
  FEDCL_RANK_HOSTS=$(IFS=,; echo "${hosts[*]}") OCL_ICD_VENDORS="$build/vendors" \
    timeout "${FEDCL_MPI_TIMEOUT:-100}" mpirun "${root[@]}" --oversubscribe -np "$ranks" \
    bash -c 'IFS=, read -ra hosts <<<"$FEDCL_RANK_HOSTS"; export FEDCL_HOSTS=${hosts[$OMPI_COMM_WORLD_RANK]}; exec "$@"' \
    rank "$@" 2>"$work/stderr" || status=$?
  cat "$work/stderr" >&2
  # A job that ends normally ends its sessions with it: fedcl has nothing to report about them.
  if ((!must_fail && status == 0)) && grep -q "fedcl: lost daemon" "$work/stderr"; then
    echo "run_mpi.sh: '$*' ended normally but fedcl reported a lost daemon" >&2
    status=1
  fi
  if ((must_fail)); then
    if ((status == 0 || status == 124)); then
      echo "run_mpi.sh: '$*' should have failed on its own; it ended with status $status" >&2
      return 1
    fi
    echo "run_mpi.sh: '$*' failed as it should (status $status)"
    return 0
  fi
  return "$status"
}

status=0
job=()
for arg in "$@" ---; do
  if [[ $arg != --- ]]; then job+=("$arg"); continue; fi
  run_job "${job[@]}" || { status=$?; break; }
  job=()
done
for ((r = 0; r < ranks; r++)); do
  if ! kill -0 "${pids[r]}" 2>/dev/null; then
    echo "run_mpi.sh: fedcld of rank $r is gone" >&2
    status=1
  fi
done
((status == 0)) && [[ -z ${FEDCL_MPI_SHOW_LOGS:-} ]] || show_logs
exit "$status"
