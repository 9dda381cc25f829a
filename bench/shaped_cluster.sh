#!/usr/bin/env bash
# Runs benchmark jobs on a small cluster of fedclds on this machine whose links are shaped, as nodes
# on a network slower than their memory (scripts/netns-cluster.sh: a namespace per node):
#
#   bench/shaped_cluster.sh BUILD NODES RATE,DELAY [--probe] -- JOB [--- JOB]...
#
# --probe first measures the TCP link between the first two nodes (measure_peer_link's lines, the
# bound the jobs are held to). A JOB is a command run in the client's namespace with fedcl as its
# platform and every daemon in FEDCL_HOSTS; a JOB that starts with the word `mpi` runs the rest under
# mpirun, a rank per node in that node's namespace with its own daemon (bench/netns_rank.sh), host
# MPI's bytes crossing the same shaped links over Open MPI's TCP.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
if [[ ${1:-} == --inside ]]; then
  shift
  build=$1 probe=$2
  shift 2
  # shellcheck source=bench/report_common.sh
  source "$repo/bench/report_common.sh"
  IFS=, read -ra namespaces <<<"$FEDCL_TEST_NODE_NETNS"
  IFS=, read -ra hosts <<<"$FEDCL_HOSTS"
  [[ $FEDCL_TEST_MODE == netns ]] || { echo "shaped_cluster.sh: no network namespaces here (root needed)" >&2; exit 1; }
  if [[ $probe == probe ]]; then measure_peer_link "$build" "${namespaces[0]}" "${namespaces[1]}" "${hosts[1]%:*}"; fi
  while (($#)); do
    job=()
    while (($#)) && [[ $1 != --- ]]; do job+=("$1"); shift; done
    (($#)) && shift
    if [[ ${job[0]} == mpi ]]; then
      mpirun -np "${#hosts[@]}" --oversubscribe --allow-run-as-root --mca btl tcp,self --mca btl_tcp_if_include uplink \
        "$repo/bench/netns_rank.sh" "${job[@]:1}"
    else
      "${job[@]}"
    fi
  done
  exit 0
fi

[[ $# -ge 5 ]] || { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
build=$1 nodes=$2 shape=$3 probe=no
shift 3
if [[ $1 == --probe ]]; then probe=probe; shift; fi
[[ $1 == -- ]] || { echo "shaped_cluster.sh: -- and the jobs expected, not '$1'" >&2; exit 2; }
shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OCL_ICD_VENDORS=$build/vendors exec "$repo/scripts/netns-cluster.sh" --nodes "$nodes" --fedcld "$build/bridge-daemon/fedcld" \
  --shape "$shape" -- "$0" --inside "$build" "$probe" "$@"
