#!/usr/bin/env bash
# The collective commands over 2, 3 and 4 daemons on loopback, in one run: one link's raw TCP rate
# (fedcl_linkprobe between two local processes, the path a peer link takes), then for each daemon
# count the collective commands (fedcl_collective_bench, one process over every daemon) and, where
# the build has MPI, host Open MPI's collectives plus broadcast and all-reduce staged by hand
# (fedcl_collective_mpi_bench, a rank per daemon). Ends with the issue's targets, from the lines
# above. Writes the report to
# bench/results/<date>-<host>-collectives.txt (or the folder FEDCL_BENCH_RESULTS names).
#
#   bench/run_collectives.sh [BUILD_DIR] [--quick] [--max-mib M] [--daemons "2 3 4"] [--only KIND,...]
#                         [--shape RATE,DELAY]
#
# --shape puts each daemon on a host of its own: a network namespace whose link to the others is
# shaped to RATE with DELAY each way (bench/shaped_cluster.sh), as nodes on a cluster network
# slower than their memory; the link's TCP rate between two nodes is then the bound. Host MPI's
# ranks run there too, each in its node's namespace (bench/netns_rank.sh), over Open MPI's TCP.
#
# BUILD_DIR defaults to build-bench (configure it with -DCMAKE_BUILD_TYPE=Release).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=build-bench
if [[ $# -gt 0 && $1 != -* ]]; then build=$1; shift; fi
[[ $build = /* ]] || build=$repo/$build
bench_args=() daemons="2 3 4" shape=
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) bench_args+=(--quick) ;;
    --max-mib) bench_args+=(--max-mib "$2"); shift ;;
    --only) bench_args+=(--only "$2"); shift ;;
    --daemons) daemons=$2; shift ;;
    --shape) shape=$2; shift ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done
for need in bench/fedcl_collective_bench bench/fedcl_linkprobe; do  # MPI's side is optional
  [[ -e $build/$need ]] || { echo "run_collectives.sh: $build/$need is missing" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FEDCL_MPI_TIMEOUT=900

# shellcheck source=bench/report_common.sh
source "$repo/bench/report_common.sh"
out=$(report_file collectives)
{
  report_header "fedcl collectives" "$build"
  if [[ -n $shape ]]; then
    echo "# a fedcld per node, each in a network namespace, links shaped to $shape (rate, delay each way); PoCL behind each"
    probe=(--probe)
    for n in $daemons; do
      jobs=("$build/bench/fedcl_collective_bench" "${bench_args[@]}")
      [[ -e $build/bench/fedcl_collective_mpi_bench ]] && jobs+=(--- mpi "$build/bench/fedcl_collective_mpi_bench" "${bench_args[@]}")
      "$repo/bench/shaped_cluster.sh" "$build" "$n" "$shape" "${probe[@]}" -- "${jobs[@]}" | grep -v '^platform\|^device'
      probe=()
    done
  else
    echo "# a fedcld per node on 127.0.0.1, PoCL behind each; host MPI: Open MPI between the same ranks"
    measure_peer_link "$build"
    for n in $daemons; do
      FEDCL_BUILD_DIR=$build "$repo/scripts/with-fedcld.sh" --daemons "$n" "$build/bench/fedcl_collective_bench" "${bench_args[@]}"
      [[ -e $build/bench/fedcl_collective_mpi_bench ]] &&
        "$repo/tests/mpi/run_mpi.sh" "$build" "$n" "$build/bench/fedcl_collective_mpi_bench" "${bench_args[@]}" | grep '^collective\.'
    done
  fi
} 2>&1 | tee "$out"

# The targets: all-reduce of the largest size over the most daemons against the ring's link bound
# (each participant sends 2 (n - 1) / n of the message over its link) and against host MPI staged by
# hand; broadcast against the pipelined chain's bound (the message once over a link).
awk '
  /^peer_link.tcp_throughput/ { rate = $2 }
  /^collective\./ {
    split($1, k, "."); impl = k[2]; kind = k[3]; n = substr(k[4], 2) + 0; size = k[5]
    t[impl "." kind "." n "." size] = $2
    mib = size ~ /MiB$/ ? size + 0 : (size + 0) / 1024
    if (mib > big || (mib == big && n > most)) { big = mib; most = n; label = size }
  }
  END {
    ar = t["fedcl.all_reduce." most "." label]; st = t["staged.all_reduce." most "." label]
    bc = t["fedcl.broadcast." most "." label]
    if (!rate || !ar) exit
    ring = 2 * (most - 1) / most * big / rate * 1e6
    chain = big / rate * 1e6
    printf "target.all_reduce.%s.n%d ring link bound %.0f us / fedcl %.0f us = %.2fx (>= 0.8: %s)",
      label, most, ring, ar, ring / ar, (ring / ar >= 0.8 ? "met" : "not met")
    if (st) printf "; staged by hand %.0f us / fedcl = %.2fx (>= 1: %s)\n", st, st / ar, (st >= ar ? "met" : "not met")
    else printf "; staged by hand not measured (no MPI)\n"
    printf "target.broadcast.%s.n%d pipelined bound %.0f us / fedcl %.0f us = %.2fx (>= 0.8: %s)\n",
      label, most, chain, bc, chain / bc, (chain / bc >= 0.8 ? "met" : "not met")
  }' "$out" | tee -a "$out"
echo "results: $out"
