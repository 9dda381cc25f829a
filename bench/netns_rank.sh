#!/usr/bin/env bash
# Runs one MPI rank inside the network namespace of "its" node of a scripts/netns-cluster.sh cluster,
# so that host MPI's bytes between ranks cross the same shaped links as fedcl's peer links:
#
#   mpirun -np N --mca btl tcp,self --mca btl_tcp_if_include uplink bench/netns_rank.sh PROGRAM [ARGS...]
#
# Rank r runs in the r-th namespace of FEDCL_TEST_NODE_NETNS with FEDCL_HOSTS set to the r-th daemon
# of FEDCL_HOSTS (its own node's). mpirun's PMIx server listens on the loopback of mpirun's
# namespace; bench/loopback_relay.py carries the rank's connection there through a unix socket.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rank=${OMPI_COMM_WORLD_RANK:?netns_rank.sh runs under mpirun}
IFS=, read -ra namespaces <<<"${FEDCL_TEST_NODE_NETNS:?netns_rank.sh runs in scripts/netns-cluster.sh}"
IFS=, read -ra hosts <<<"$FEDCL_HOSTS"
ns=${namespaces[$rank]:?no namespace for rank $rank}
uri=${PMIX_SERVER_URI4:-${PMIX_SERVER_URI3:-${PMIX_SERVER_URI2:?no PMIx server in the environment}}}
[[ $uri =~ tcp4://127\.0\.0\.1:([0-9]+) ]] || { echo "netns_rank.sh: PMIx server at '$uri', not on loopback" >&2; exit 1; }
port=${BASH_REMATCH[1]}

work=$(mktemp -d)
relays=()
cleanup() {
  for pid in "${relays[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

wait_ready() {
  for _ in $(seq 100); do [[ -e $1 ]] && return 0; sleep 0.05; done
  echo "netns_rank.sh: relay for rank $rank did not start" >&2
  exit 1
}
python3 "$here/loopback_relay.py" unix-to-tcp "$work/pmix" "$port" &
relays+=($!)
wait_ready "$work/pmix.ready"
ip netns exec "$ns" python3 "$here/loopback_relay.py" tcp-to-unix "$port" "$work/pmix" &
relays+=($!)
wait_ready "$work/pmix.ready-tcp"
ip netns exec "$ns" env FEDCL_HOSTS="${hosts[$rank]}" "$@"
