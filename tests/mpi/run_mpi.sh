#!/usr/bin/env bash
# Runs an MPI program under `mpirun -np N`, every rank against a fedcld of its own on loopback:
#
#   tests/mpi/run_mpi.sh BUILD_DIR N PROGRAM [ARGS...]
#
# Starts N daemons (port 0, port files), gives rank r FEDCL_HOSTS=<daemon r> and the fedcl-only
# vendors folder, and stops the daemons at exit. As root (CI), Open MPI wants --allow-run-as-root;
# --oversubscribe lets N exceed the cores.
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
  env -u OCL_ICD_VENDORS "$build/bridge-daemon/fedcld" --config /dev/null --listen 127.0.0.1:0 --port-file "$work/port$r" \
    --name "rank$r" --log-level "${FEDCLD_LOG_LEVEL:-warn}" 2>"$work/fedcld$r.log" &
  pids+=($!)
done
for ((r = 0; r < ranks; r++)); do
  for _ in $(seq 100); do [[ -s $work/port$r ]] && break; sleep 0.1; done
  [[ -s $work/port$r ]] || { echo "run_mpi.sh: fedcld $r did not start" >&2; cat "$work/fedcld$r.log" >&2; exit 1; }
  hosts+=("127.0.0.1:$(cat "$work/port$r")")
done

root=()
[[ $(id -u) == 0 ]] && root=(--allow-run-as-root)
status=0
FEDCL_RANK_HOSTS=$(IFS=,; echo "${hosts[*]}") OCL_ICD_VENDORS="$build/vendors" \
  timeout "${FEDCL_MPI_TIMEOUT:-100}" mpirun "${root[@]}" --oversubscribe -np "$ranks" \
  bash -c 'IFS=, read -ra hosts <<<"$FEDCL_RANK_HOSTS"; export FEDCL_HOSTS=${hosts[$OMPI_COMM_WORLD_RANK]}; exec "$@"' \
  rank "$@" || status=$?
if ((status != 0)); then
  for ((r = 0; r < ranks; r++)); do echo "--- fedcld of rank $r:" >&2; cat "$work/fedcld$r.log" >&2; done
fi
exit "$status"
