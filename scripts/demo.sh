#!/usr/bin/env bash
# fedcl in about a minute. Builds what the demo needs (scripts/setup.sh --demo --targets, which
# also installs the Debian packages the demo needs, and only those), then starts two fedcld daemons
# on this machine's loopback as two "nodes", node-a and node-b, and shows with real daemons and
# real sockets:
#   1. one OpenCL platform, fedcl, with both nodes' devices (clinfo -l);
#   2. a buffer written by a kernel on node-a and read by a kernel on node-b: the bytes go daemon to
#      daemon over their peer link, checked, with the speed beside the raw TCP link's
#      (examples/federation_demo.c, bench/linkprobe.cpp);
#   3. NBody split over both nodes beside one node, checked (fedcl_federation_bench --only split);
#   4. a file streamed into a device with the file commands, checked (examples/file_stream.c).
# Where the machine has two cores or more, each node gets its own half of them (taskset, and PoCL
# told as much), as two machines would; on one core the split NBody cannot be faster.
#
#   demo.sh [--no-setup]
#
# --no-setup skips setup.sh and uses the build as it is (the ctest test example_demo does so).
# Exits non-zero when any step fails or a check finds a wrong result.
set -euo pipefail

scripts=$(cd "$(dirname "$0")" && pwd)
build=${FEDCL_BUILD_DIR:-$(dirname "$scripts")/build}
setup=1
case ${1:-} in
  --no-setup) setup=0 ;;
  "") ;;
  *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac

needs=(fedcld fedcl federation_demo file_stream fedcl_federation_bench fedcl_linkprobe)
((setup)) && bash "$scripts/setup.sh" --demo --targets "${needs[*]}"

daemon=$build/bridge-daemon/fedcld
demo=$build/examples/federation_demo
file_stream=$build/examples/file_stream
split_bench=$build/bench/fedcl_federation_bench
probe=$build/bench/fedcl_linkprobe
for need in "$daemon" "$build/vendors/fedcl.icd" "$demo" "$file_stream" "$split_bench" "$probe"; do
  [[ -x $need || -f $need ]] || { echo "demo.sh: $need is missing; run scripts/setup.sh --targets \"${needs[*]}\"" >&2; exit 2; }
done
command -v clinfo >/dev/null || { echo "demo.sh: clinfo is missing (scripts/setup.sh installs it)" >&2; exit 2; }

started=$SECONDS
work=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

heading() { printf '\n==> %s\n' "$*"; }
indent() { sed 's/^/    /'; }

# Each node's share of the cores: `taskset` and the thread count PoCL reads (PoCL 3.x, Debian 12's,
# POCL_MAX_PTHREAD_COUNT; PoCL >= 4, POCL_CPU_MAX_CU_COUNT), since PoCL would otherwise use every core.
cores=$(nproc)
half=$((cores / 2))
pin_a=() pin_b=() where_a="sharing the one core" where_b="sharing the one core"
if ((half >= 1)); then
  pin() { echo taskset -c "$1-$2" env POCL_MAX_PTHREAD_COUNT=$half POCL_CPU_MAX_CU_COUNT=$half; }
  read -ra pin_a <<<"$(pin 0 $((half - 1)))"
  read -ra pin_b <<<"$(pin "$half" $((2 * half - 1)))"
  where_a="cores 0-$((half - 1))" where_b="cores $half-$((2 * half - 1))"
fi

# Shows the end of both daemons' logs and stops: what a failed step needs to be understood.
fail() {
  echo "demo.sh: $*" >&2
  local node
  for node in node-a node-b; do
    [[ -s $work/$node.log ]] && { echo "  the last lines of $node's fedcld log:" >&2; tail -n 15 "$work/$node.log" | sed 's/^/    /' >&2; }
  done
  exit 1
}

# A node: fedcld on a free loopback port, with the machine's own OpenCL platforms as its backend
# (never fedcl's vendors folder) and without /etc/fedcl/fedcld.conf (--config /dev/null).
start_node() {  # NAME PIN...
  local name=$1
  shift
  env -u OCL_ICD_VENDORS "$@" "$daemon" --config /dev/null --listen 127.0.0.1:0 --port-file "$work/$name.port" \
    --name "$name" --metrics 127.0.0.1:0 2>"$work/$name.log" &
  pids+=($!)
}
start_node node-a "${pin_a[@]}"
start_node node-b "${pin_b[@]}"
for node in node-a node-b; do
  for _ in $(seq 150); do
    [[ -s $work/$node.port ]] && break
    kill -0 "${pids[0]}" 2>/dev/null && kill -0 "${pids[1]}" 2>/dev/null || fail "a fedcld exited at start"
    sleep 0.1
  done
  [[ -s $work/$node.port ]] || fail "$node's fedcld did not listen within 15 s"
done
port_a=$(<"$work/node-a.port") port_b=$(<"$work/node-b.port")

# Every program below sees fedcl as its only platform, and the two daemons as its nodes; peer links
# on (FEDCL_PEER_LINKS=0 sends every migration through the program; step 2 does so once on purpose).
unset FEDCL_PEER_LINKS
export OCL_ICD_VENDORS=$build/vendors FEDCL_HOSTS=127.0.0.1:$port_a,127.0.0.1:$port_b FEDCL_EXAMPLE_PLATFORM=fedcl
heading "two nodes on this machine (on a cluster, two machines): each runs fedcld, the bridge daemon"
echo "    node-a: fedcld on 127.0.0.1:$port_a, $where_a"
echo "    node-b: fedcld on 127.0.0.1:$port_b, $where_b"
echo "    programs find them in FEDCL_HOSTS=$FEDCL_HOSTS"
echo "    this machine: $cores cores, load average $(cut -d' ' -f1 /proc/loadavg) (other work running here slows the numbers below)"

heading "1. what any OpenCL program sees: one platform, fedcl, with both nodes' devices (clinfo -l)"
clinfo -l 2>&1 | indent || fail "clinfo failed"

heading "2. a buffer written by a kernel on node-a and read by a kernel on node-b (examples/federation_demo.c)"
# The raw link first, for comparison: a plain TCP stream on loopback from node-a's cores to node-b's,
# 256 MiB sent from a reused 4 MiB buffer into a reused 4 MiB buffer, as fedcl's chunks are.
env "${pin_b[@]}" "$probe" serve 127.0.0.1:0 --port-file "$work/probe.port" --bytes $((4 << 20)) &
pids+=($!)
for _ in $(seq 50); do [[ -s $work/probe.port ]] && break; sleep 0.1; done
[[ -s $work/probe.port ]] || fail "fedcl_linkprobe serve did not listen"
env "${pin_a[@]}" "$probe" measure "127.0.0.1:$(<"$work/probe.port")" --pings 200 --bytes $((256 << 20)) \
  --chunk $((4 << 20)) --reps 5 >"$work/probe.txt" || fail "fedcl_linkprobe measure failed"
raw=$(awk '$1 == "link.tcp_throughput" { printf "%.0f", $2 * 1.048576 }' "$work/probe.txt")  # MiB/s -> MB/s

moves=4  # the first move, then -r 3 timed ones
# The bytes' path, from the daemons' own counters (fedcld --metrics, what Prometheus would scrape):
# the bytes node-a's fedcld sent and node-b's received over peer links, before and after.
peer_bytes() {  # NODE DIRECTION: the node's peer-link bytes so far, every link summed
  python3 - "$(<"$work/$1.port.metrics")" "$2" <<'PY'
import re, sys, urllib.request
text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode()
print(int(sum(float(v) for v in re.findall(
    r'^fedcld_peer_link_bytes_total\{peer="[^"]*",direction="%s"\} (\S+)$' % sys.argv[2], text, re.M))))
PY
}
sent_before=$(peer_bytes node-a sent) received_before=$(peer_bytes node-b received)
"$demo" -m 256 -r $((moves - 1)) >"$work/demo.txt" 2>&1 || { indent <"$work/demo.txt"; fail "federation_demo failed"; }
indent <"$work/demo.txt"
# The workers publish their traffic every second and as the links close.
need=$((moves * (256 << 20)))
for _ in $(seq 30); do
  sent=$(($(peer_bytes node-a sent) - sent_before)) received=$(($(peer_bytes node-b received) - received_before))
  ((sent >= need && received >= need)) && break
  sleep 0.1
done
((sent >= need && received >= need)) ||
  fail "the daemons counted $sent bytes sent and $received received over their peer link, less than the $moves moves of 256 MiB"
echo "    the path, from the daemons' own counters (fedcld --metrics): node-a's fedcld sent $((sent >> 20)) MiB"
echo "    over its peer link, node-b's received $((received >> 20)) MiB: $moves moves of 256 MiB, none through the program"
migration=$(sed -n 's/^migration: .* = \([0-9.]*\) MB\/s$/\1/p' "$work/demo.txt")
echo "    the raw link: a plain TCP stream on the same loopback, node-a's cores to node-b's, 256 MiB in 4 MiB"
echo "    sends, one blocking sender and receiver (fedcl_linkprobe): $raw MB/s"
awk -v m="$migration" -v r="$raw" 'BEGIN { if (r > 0 && m > 0) printf "    the migration: %.0f MB/s, %.2fx the plain stream (both move with the machine'"'"'s load)\n", m, m / r }'
# The same moves without peer links, for contrast: node-a's daemon to the program, the program to node-b's.
FEDCL_PEER_LINKS=0 "$demo" -m 256 -r $((moves - 1)) >"$work/client.txt" 2>&1 ||
  { indent <"$work/client.txt"; fail "federation_demo with FEDCL_PEER_LINKS=0 failed"; }
grep -q '^PASS$' "$work/client.txt" || { indent <"$work/client.txt"; fail "federation_demo with FEDCL_PEER_LINKS=0 did not pass"; }
echo "    the same moves through the program instead (FEDCL_PEER_LINKS=0), checked as well: $(sed -n 's/^migration: .* = \([0-9.]*\) MB\/s$/\1/p' "$work/client.txt") MB/s"

heading "3. NBody split over both nodes, beside node-a alone (fedcl_federation_bench --only split)"
bodies=8192
"$split_bench" --only split --nodes 2 --split-nodes 2 --bodies "$bodies" --steps 3 >"$work/split.txt" 2>&1 ||
  { indent <"$work/split.txt"; fail "the split NBody failed or its check found a difference"; }
value() { awk -v name="$1.direct" '$1 == name { print $2 }' "$work/split.txt"; }
one=$(value split.1.step) two=$(value split.2.step) speedup=$(value split.2.speedup)
[[ -n $one && -n $two ]] || { indent <"$work/split.txt"; fail "the split NBody printed no step times"; }
printf '    %s bodies, all pairs, each step gathered on both nodes (3 steps timed, median)\n' "$bodies"
printf '    node-a alone:      %8.1f ms per step\n' "$one"
printf '    node-a and node-b: %8.1f ms per step (%.2fx node-a alone)\n' "$two" "$speedup"
echo "    checked: the first step against the CPU, and both nodes' final positions against the one-node run's"
((half >= 1)) || echo "    (one core: both nodes share it, so the split cannot be faster here)"

heading "4. a file streamed into a device on node-a with the file commands (examples/file_stream.c)"
"$file_stream" 64 8 >"$work/file.txt" 2>&1 || { indent <"$work/file.txt"; fail "file_stream failed"; }
grep -v '^platform:' "$work/file.txt" | indent

heading "demo passed: ran in $((SECONDS - started)) s"
