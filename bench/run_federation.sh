#!/usr/bin/env bash
# Runs fedcl_federation_bench against 2 or 3 fedcld nodes, in both modes (direct peer links, and
# through the client with FEDCL_PEER_LINKS=0), rounds interleaved, plus the raw TCP limits of the
# link between node 0 and node 1 (fedcl_linkprobe). Writes the combined report, preceded by a
# description of the machine and the topology, to bench/results/<date>-<host>-federation.txt (or to
# the folder FEDCL_BENCH_RESULTS names).
#
#   bench/run_federation.sh [BUILD_DIR] [options] [-- fedcl_federation_bench options]
#
#   --topology T         netns: every node and the app in a network namespace of its own, joined by
#                        veth pairs to a bridge (default where `ip netns` works); loopback: daemons on
#                        127.0.0.1 ports
#   --shape              netns only: every host's link through tc netem, 50us each way and 10gbit
#                        (tbf, rate only, where the kernel has no netem; the output says which)
#   --delay D --rate R   the shaping's delay and rate (defaults 50us, 10gbit; implies --shape)
#   --nodes N            daemons (default: 3 where each can have its own cores or device, else 2)
#   --cores-per-node C   CPU backends: node k is pinned to cores [kC, kC+C) and PoCL to C threads
#   --loop-core          one more core per node for fedcld's own threads (its event loop), which
#                        otherwise share the node's cores with PoCL's busy workers: node k gets
#                        C + 1 cores, PoCL still C threads
#                        (default 1)
#   --per-device         one daemon per backend device (`fedcld --devices k`), e.g. one per GPU;
#                        no pinning unless --cores-per-node is given
#   --platform P         passed to every fedcld (--platform)
#   --daemon-args ARGS   more options for every fedcld (e.g. "--busy-poll 0")
#   --backend-icd FILE   the backend's .icd file (default $FEDCL_BENCH_BACKEND_ICD or PoCL's)
#   --backend-library L  name the backend library directly (OCL_ICD_FILENAMES; for loaders that read
#                        no vendors folder, e.g. NVIDIA's: /usr/local/nvidia/lib64/libnvidia-opencl.so.1)
#   --rounds R           rounds, each running both modes in alternating order (default 3)
#   --quick              one round and fedcl_federation_bench --quick (a smoke run)
#
# BUILD_DIR defaults to build-bench (configure it with -DCMAKE_BUILD_TYPE=Release).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=build-bench
if [[ $# -gt 0 && $1 != -* ]]; then build=$1; shift; fi
[[ $build = /* ]] || build=$repo/$build

topology=auto shape=0 delay=50us rate=10gbit nodes= cores_per_node= loop_core=0 per_device=0 platform= daemon_args= rounds=3 quick=0
backend_icd=${FEDCL_BENCH_BACKEND_ICD:-/etc/OpenCL/vendors/pocl.icd} backend_library=
bench_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --topology) topology=$2; shift ;;
    --shape) shape=1 ;;
    --delay) delay=$2; shape=1; shift ;;
    --rate) rate=$2; shape=1; shift ;;
    --nodes) nodes=$2; shift ;;
    --cores-per-node) cores_per_node=$2; shift ;;
    --loop-core) loop_core=1 ;;
    --per-device) per_device=1 ;;
    --platform) platform=$2; shift ;;
    --daemon-args) daemon_args=$2; shift ;;
    --backend-icd) backend_icd=$2; shift ;;
    --backend-library) backend_library=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --quick) quick=1; rounds=1 ;;
    --) shift; bench_args=("$@"); break ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done
((quick)) && bench_args=(--quick "${bench_args[@]}")

bench=$build/bench/fedcl_federation_bench
probe=$build/bench/fedcl_linkprobe
daemon=$build/bridge-daemon/fedcld
for need in "$bench" "$probe" "$daemon" "$build/vendors/fedcl.icd"; do
  [[ -e $need ]] || { echo "run_federation.sh: $need is missing (build fedcl_federation_bench fedcl_linkprobe fedcld fedcl)" >&2; exit 2; }
done
[[ -n $backend_library || -e $backend_icd ]] || { echo "run_federation.sh: no backend .icd at $backend_icd" >&2; exit 2; }

work=$(mktemp -d)
source "$repo/bench/federation_netns.sh"
cleanup() {
  # Only this script's own children not yet reaped: the daemons and a probe server, by pid.
  local pid live
  live=$(jobs -p)
  for pid in $live; do kill "$pid" 2>/dev/null || true; done
  for pid in $live; do wait "$pid" 2>/dev/null || true; done
  fedns_down
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# Which drivers each side's loader sees: the daemons only the backend, the app only fedcl.
mkdir "$work/vendors-backend" "$work/vendors-fedcl"
cp "$build/vendors/fedcl.icd" "$work/vendors-fedcl/"
if [[ -n $backend_library ]]; then
  backend_env=(env -u OCL_ICD_VENDORS OCL_ICD_FILENAMES="$backend_library")
  app_env=(env -u OCL_ICD_VENDORS OCL_ICD_FILENAMES="$(head -1 "$build/vendors/fedcl.icd")")
else
  cp "$backend_icd" "$work/vendors-backend/"
  backend_env=(env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$work/vendors-backend")
  app_env=(env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$work/vendors-fedcl")
fi
platform_args=()
[[ -n $platform ]] && platform_args=(--platform "$platform")
read -ra extra_daemon_args <<<"$daemon_args"

# How many nodes, and what each gets: its own cores (CPU backends) or its own device.
cores=$(nproc)
notes=()
if ((per_device)); then
  devices=$("${backend_env[@]}" "$daemon" "${platform_args[@]}" --list 2>/dev/null | grep -c '^ *[0-9][0-9]*:' || true)
  ((devices >= 2)) || { echo "run_federation.sh: --per-device needs 2 or more devices; the backend lists $devices" >&2; exit 2; }
  want=${nodes:-$((devices < 3 ? devices : 3))}
  if ((want > devices)); then notes+=("asked for $want nodes, the backend has $devices devices: running $devices"); want=$devices; fi
else
  cores_per_node=${cores_per_node:-1}
  fit=$((cores / (cores_per_node + loop_core)))
  want=${nodes:-$((fit < 3 ? fit : 3))}
  if ((want > fit)); then
    notes+=("$want nodes with $cores_per_node core(s) each do not fit in $cores cores: running $fit node(s); the 3-node split is not run here")
    want=$fit
  elif ((want < 3)); then
    notes+=("3 nodes with $cores_per_node core(s) each do not fit in $cores cores: the 3-node split is not run here")
  fi
  ((want >= 2)) || { echo "run_federation.sh: fewer than 2 nodes fit ($cores cores, $cores_per_node per node)" >&2; exit 2; }
fi
nodes=$want

node_cores() {  # the cpu list of node k, or "" when unpinned
  [[ -n $cores_per_node ]] || return 0
  local width=$((cores_per_node + loop_core))
  local first=$(($1 * width))
  echo "$first-$((first + width - 1))"
}

# pin=(...): the prefix that runs a command on node k's cores (if pinned) with PoCL limited to them.
# PoCL 3.x (Debian 12) sizes its thread pool from POCL_MAX_PTHREAD_COUNT, PoCL >= 4 from
# POCL_CPU_MAX_CU_COUNT; neither follows taskset alone. Each node's CL_DEVICE_MAX_COMPUTE_UNITS is
# printed by the benchmark (node.<k>.compute_units) to show what it got.
set_pin() {
  local list
  list=$(node_cores "$1")
  pin=()
  [[ -z $list ]] || pin=(taskset -c "$list" env POCL_MAX_PTHREAD_COUNT="$cores_per_node" POCL_CPU_MAX_CU_COUNT="$cores_per_node")
}

# The topology. at=(...): the prefix that runs a command on a host (app, n0, n1, ...); commands
# are started as simple commands (never a function in the background), so $! is the process itself.
if [[ $topology == auto ]]; then
  if ip netns add "fcb$$-try" 2>/dev/null; then ip netns del "fcb$$-try"; topology=netns; else topology=loopback; fi
fi
case $topology in
  netns)
    shaping=()
    ((shape)) && shaping=("$delay" "$rate")
    fedns_up "fcb$$" "$nodes" "${shaping[@]}" || { echo "run_federation.sh: cannot make the namespaces" >&2; exit 1; }
    ;;
  loopback) ((shape)) && { echo "run_federation.sh: --shape needs --topology netns" >&2; exit 2; } ;;
  *) echo "run_federation.sh: --topology is netns or loopback, not $topology" >&2; exit 2 ;;
esac
set_at() {
  if [[ $topology == netns ]]; then at=(ip netns exec "$(fedns_name "$1")"); else at=(); fi
}
host_ip() { if [[ $topology == netns ]]; then fedns_ip "$1"; else echo 127.0.0.1; fi; }

wait_for_file() {  # FILE PID WHAT
  for _ in $(seq 150); do
    [[ -s $1 ]] && return 0
    kill -0 "$2" 2>/dev/null || { echo "run_federation.sh: $3 exited" >&2; return 1; }
    sleep 0.1
  done
  echo "run_federation.sh: $3 did not start within 15 s" >&2
  return 1
}

# Node k's daemon: started (again) on its host, cores and device; its pid in node_pids[k], its
# address in hosts[k]. Logs accumulate in fedcld<k>.log. It runs as fcbd-node<k>, a link to
# fedcld, so that another session's `pkill fedcld` on a shared machine does not stop it mid-run.
node_pids=() hosts=()
mkdir "$work/bin"
start_node() {
  local k=$1 device_args=()
  ((per_device)) && device_args=(--devices "$k")
  set_at "n$k"
  set_pin "$k"
  rm -f "$work/port$k"
  ln -sf "$daemon" "$work/bin/fcbd-node$k"
  "${at[@]}" "${backend_env[@]}" "${pin[@]}" "$work/bin/fcbd-node$k" --listen "$(host_ip "n$k"):0" --port-file "$work/port$k" \
    --name "node$k" --log-level warn "${platform_args[@]}" "${device_args[@]}" "${extra_daemon_args[@]}" 2>>"$work/fedcld$k.log" &
  node_pids[k]=$!
  wait_for_file "$work/port$k" "${node_pids[k]}" "fedcld of node $k" || { cat "$work/fedcld$k.log" >&2; return 1; }
  hosts[k]="$(host_ip "n$k"):$(<"$work/port$k")"
  fedcl_hosts=$(IFS=,; echo "${hosts[*]}")
}
for ((k = 0; k < nodes; k++)); do start_node "$k" || exit 1; done

# A daemon gone before a run (the machine may be shared with scripts that stop every fedcld) is
# reported with its exit status and started again, so that one loss does not spoil the later runs.
revive_nodes() {
  local k rc
  for ((k = 0; k < nodes; k++)); do
    kill -0 "${node_pids[k]}" 2>/dev/null && continue
    rc=0
    wait "${node_pids[k]}" 2>/dev/null || rc=$?
    echo "# note: fedcld of node $k had exited (status $rc$( ((rc > 128)) && echo ", signal $((rc - 128))")); started again" | tee -a "$out"
    start_node "$k" || return 1
  done
}

# The raw link between node 0 and node 1 (the path a direct migration takes), each end on its
# node's cores; and, for reference, node 0 to the app (the first half of the path through the client).
probe_link() {  # FROM TO PREFIX
  local from=$1 to=$2 prefix=$3 server
  rm -f "$work/probe.port"
  set_at "$to"
  pin=()
  [[ $to == app ]] || set_pin "${to#n}"
  "${at[@]}" "${pin[@]}" "$probe" serve "$(host_ip "$to"):0" --port-file "$work/probe.port" &
  server=$!
  wait_for_file "$work/probe.port" "$server" "fedcl_linkprobe serve" || return 1
  set_at "$from"
  set_pin "${from#n}"
  "${at[@]}" "${pin[@]}" "$probe" measure "$(host_ip "$to"):$(<"$work/probe.port")" --prefix "$prefix"
  wait "$server"
}

results=${FEDCL_BENCH_RESULTS:-$repo/bench/results}
mkdir -p "$results"
out=$results/$(date +%Y-%m-%dT%H%M%S)-$(hostname -s)-federation.txt
describe_node() {
  local k=$1 list
  list=$(node_cores "$k")
  if ((per_device)); then echo -n "fedcld --devices $k"; else echo -n "fedcld"; fi
  echo -n " (run as fcbd-node$k, a link)"
  [[ -n $daemon_args ]] && echo -n ", with $daemon_args"
  if [[ -n $list ]]; then
    echo -n ", taskset -c $list, POCL_MAX_PTHREAD_COUNT=$cores_per_node (PoCL <= 3) and POCL_CPU_MAX_CU_COUNT=$cores_per_node (PoCL >= 4)"
  else
    echo -n ", not pinned"
  fi
  echo ", listening on ${hosts[$k]}"
}
{
  echo "# fedcl_federation_bench $(date -Iseconds)"
  echo "# commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "# host: $(hostname)"
  echo "# cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $cores cores online"
  echo "# memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "# kernel: $(uname -sr)"
  echo "# pocl: $(dpkg-query -W -f '${Version}' libpocl2 2>/dev/null || echo unknown)"
  command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | sed 's/^/# gpu: /'
  echo "# build: $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")"
  echo "# backend: ${backend_library:-$backend_icd}"
  if [[ $topology == netns ]]; then
    echo "# topology: netns: app and $nodes nodes, each in its own network namespace, veth pairs to a bridge"
    echo "# shaping: $FEDNS_SHAPING"
  else
    echo "# topology: loopback: $nodes daemons on 127.0.0.1 ports, app unpinned"
  fi
  for ((k = 0; k < nodes; k++)); do echo "# node $k: $(describe_node "$k")"; done
  echo "# app: fedcl_federation_bench, not pinned"
  for note in "${notes[@]}"; do echo "# note: $note"; done
  echo "# rounds: $rounds, each running both modes, the order alternating; options: ${bench_args[*]:-(none)}"
} | tee "$out"

status=0
probe_link n0 n1 link.peer >"$work/link.txt" || status=1
if [[ $topology == netns ]]; then probe_link n0 app link.node_to_app >>"$work/link.txt" || status=1; fi
sed 's/^/# link probe: /' "$work/link.txt" | tee -a "$out"

runs=()
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then order=(1 0); else order=(0 1); fi
  for links in "${order[@]}"; do
    mode=$([[ $links == 1 ]] && echo direct || echo client)
    run=$work/run$r-$mode.txt
    revive_nodes || { status=1; break 2; }
    echo "# round $r, $mode (FEDCL_PEER_LINKS=$links)" | tee -a "$out"
    rc=0
    set_at app
    "${at[@]}" "${app_env[@]}" FEDCL_HOSTS="$fedcl_hosts" FEDCL_PEER_LINKS="$links" \
      timeout 900 "$bench" --nodes "$nodes" "${bench_args[@]}" >"$run" 2>&1 || rc=$?
    sed "s/^/#   /" "$run" | tee -a "$out"
    if ((rc)); then echo "# round $r, $mode: exit status $rc" | tee -a "$out"; status=1; fi
    runs+=("$run")
  done
done

"$bench" --report "$work/link.txt" "${runs[@]}" | tee -a "$out"
for ((k = 0; k < nodes; k++)); do
  if [[ -s $work/fedcld$k.log ]]; then sed "s/^/# fedcld node $k: /" "$work/fedcld$k.log" >>"$out"; fi
done
echo "results: $out"
exit "$status"
