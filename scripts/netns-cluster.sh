#!/usr/bin/env bash
# Runs a command against N fedcld "hosts", each in a network namespace of its own with an address of
# its own, the command itself in one more namespace: a small cluster on one machine, so that the
# federation tests see daemons that reach each other over a real (virtual) network that a test can
# shape or cut, instead of everything sharing 127.0.0.1.
#
#   netns-cluster.sh [--nodes N] [--fedcld PATH] [--daemon-args "ARGS"] [--shape RATE,DELAY]
#                    [--peer-net] [--loopback] [--keep-logs] -- COMMAND ARGS...
#
# Layout (names carry this script's pid, so parallel runs under `ctest -j` never meet):
#
#   fc<pid>sw   the switch: bridge br-main (and br-peer with --peer-net), one port per namespace below
#   fc<pid>nK   node K: fedcld on 10.A.B.(K+1):7070 over its interface "uplink"
#               (with --peer-net also "peerlink", 172.C.B.(K+1), on br-peer)
#   fc<pid>app  the command, on 10.A.B.254
#
# Each run has a switch of its own and nothing is attached to the root namespace, so the runs are
# isolated from each other and from the machine's own interfaces; the pid-derived subnets only make
# a run's addresses recognisable in logs.
#
# The command sees:
#   FEDCL_HOSTS                 addr0:7070,addr1:7070,...      (loopback: 127.0.0.1:PORT,...)
#   FEDCL_TEST_DAEMON_PIDS      pid0,pid1,...                  the fedcld processes
#   FEDCL_TEST_NODE_NETNS       ns0,ns1,...                    empty in loopback mode
#   FEDCL_TEST_NODE_IFACE       uplink,uplink,...              `ip -n NSk link set IFk down` cuts node k
#                                                              off from everyone; empty in loopback mode
#   FEDCL_TEST_NODE_PEER_ADDR   peer-network addresses         --peer-net only, else empty
#   FEDCL_TEST_NODE_PEER_IFACE  peerlink,peerlink,...          --peer-net only, else empty
#   FEDCL_TEST_NODE_LOGS        log0,log1,...                  each daemon's stdout and stderr
#   FEDCL_TEST_MODE             netns or loopback
#
# --daemon-args is split on blanks (no quoting); @PEER_ADDR@ in it becomes the node's peer-network
# address (its main address without --peer-net, 127.0.0.1 in loopback mode).
# --shape RATE,DELAY (e.g. 10gbit,50us) puts netem on both directions of every node's links, so a
# packet between two nodes crosses two shaped links; where the kernel has no netem, tbf shapes the
# rate alone and the delay is dropped (with a warning).
#
# Network namespaces need root. Without root, with --loopback, or when `ip netns add` fails, the
# daemons run on 127.0.0.1 with ports of their own choosing and FEDCL_TEST_MODE=loopback.
#
# The script exits with the command's status. Its daemons and namespaces go on every exit (normal,
# error, SIGINT/SIGTERM/SIGHUP); a detached reaper removes them even when the script is SIGKILLed
# (as ctest does on a timeout), and every start sweeps away the namespaces of runs that are gone.
set -euo pipefail

readonly PORT=7070
readonly START_TIMEOUT_S=10
readonly NODE_IFACE=uplink
readonly PEER_IFACE=peerlink
readonly PREFIX="fc$$"
readonly SELF="${BASH_SOURCE[0]}"

say() { printf 'netns-cluster: %s\n' "$*" >&2; }
die() {
  say "$*"
  exit 1
}

usage() {
  cat >&2 <<'EOF_USAGE'
usage: netns-cluster.sh [--nodes N (default 2)] [--fedcld PATH] [--daemon-args "ARGS"]
                        [--shape RATE,DELAY] [--peer-net] [--loopback] [--keep-logs] -- COMMAND ARGS...
EOF_USAGE
  exit 2
}

# ---------------------------------------------------------------------------------------------------
# Namespace sweeping: shared by the start-up sweep and the reaper.

# True when the run with this pid is still there: a process of that pid running this script. (A bare
# `kill -0` would keep the namespaces of a dead run whose pid was given to something else.)
run_alive() {
  local pid=$1 cmdline
  [[ -r /proc/$pid/cmdline ]] || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ $cmdline == *netns-cluster* ]]
}

# Kills whatever still runs in namespace ns, then deletes it (deleting a namespace destroys its
# interfaces; a process left inside would keep the network namespace itself alive).
remove_namespace() {
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  if [[ -n $pids ]]; then
    # shellcheck disable=SC2086  # one pid a word
    kill -KILL $pids 2>/dev/null || true
  fi
  ip netns delete "$ns" 2>/dev/null || true
}

# The fc<pid>... namespaces, one name a line.
our_kind_of_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^fc[0-9]+(n[0-9]+|app|sw)$' || true
}

# Removes the namespaces of runs that are gone (SIGKILLed before their reaper could act, say).
sweep_stale_namespaces() {
  local ns pid
  while read -r ns; do
    [[ -n $ns ]] || continue
    pid=${ns#fc}
    pid=${pid%%[!0-9]*}
    if [[ $pid != "$$" ]] && ! run_alive "$pid"; then
      say "removing stale namespace $ns (run $pid is gone)"
      remove_namespace "$ns"
    fi
  done < <(our_kind_of_namespaces)
}

# The reaper: started detached (a child of init, in a session of its own) so that a kill of the
# script's process group or process tree misses it. It waits for the run to end and removes what the
# run's own cleanup could not.
if [[ ${1:-} == --internal-reap ]]; then
  run_pid=$2
  run_dir=$3
  while kill -0 "$run_pid" 2>/dev/null; do sleep 0.5; done
  while read -r ns; do
    [[ $ns == "fc${run_pid}"[an]* || $ns == "fc${run_pid}sw" ]] && remove_namespace "$ns"
  done < <(our_kind_of_namespaces)
  [[ -n $run_dir && -d $run_dir ]] && rm -rf -- "$run_dir"
  exit 0
fi

# ---------------------------------------------------------------------------------------------------
# Options.

nodes=2
fedcld=
daemon_args=
shape=
peer_net=0
loopback=0
keep_logs=0
while (($#)); do
  case $1 in
    --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
    --fedcld) fedcld=${2:?--fedcld needs a path}; shift 2 ;;
    --daemon-args) daemon_args=${2?--daemon-args needs a value}; shift 2 ;;
    --shape) shape=${2:?--shape needs RATE,DELAY}; shift 2 ;;
    --peer-net) peer_net=1; shift ;;
    --loopback) loopback=1; shift ;;
    --keep-logs) keep_logs=1; shift ;;
    -h | --help) usage ;;
    --) shift; break ;;
    *) say "unknown option '$1'"; usage ;;
  esac
done
(($#)) || { say "no command given"; usage; }
if ! [[ $nodes =~ ^[0-9]+$ ]] || ((nodes < 1 || nodes > 200)); then die "--nodes wants 1 to 200, not '$nodes'"; fi
if [[ -z $fedcld ]]; then
  fedcld=$(command -v fedcld || true)
  [[ -n $fedcld ]] || die "no fedcld on PATH: give --fedcld PATH"
fi
[[ -x $fedcld ]] || die "fedcld '$fedcld' is not an executable"
fedcld=$(cd "$(dirname "$fedcld")" && pwd)/$(basename "$fedcld")
if [[ -n $shape ]]; then
  [[ $shape == *,* ]] || die "--shape wants RATE,DELAY (e.g. 10gbit,50us), not '$shape'"
  shape_rate=${shape%%,*}
  shape_delay=${shape#*,}
fi

# setpriv makes the daemons and the command die with this script even when it is SIGKILLed.
with_parent=()
if command -v setpriv >/dev/null && setpriv --pdeathsig KILL true 2>/dev/null; then
  with_parent=(setpriv --pdeathsig KILL)
fi

# ---------------------------------------------------------------------------------------------------
# State and cleanup.

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/netns-cluster.$$.XXXXXX")
namespaces=()   # every namespace this run made, the switch last
daemon_pids=()
command_pid=
cleaning=0
logs_shown=0

# True when pid is still this script's child. Bash reaps a background job as soon as it ends, so a
# daemon killed earlier (by a test) leaves a pid that the system may give to an unrelated process.
# shellcheck disable=SC2317
our_child() {
  local stat ppid
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }  # after the command name, which may hold blanks: "STATE PPID ..."
  read -r _ ppid _ <<<"$stat"
  [[ $ppid == "$$" ]]
}

# shellcheck disable=SC2317  # cleanup, show_logs, on_exit and on_signal run from the traps
cleanup() {
  local status=$1 pid ns i
  ((cleaning)) && return
  cleaning=1
  trap '' INT TERM HUP
  if [[ -n $command_pid ]] && our_child "$command_pid"; then
    kill -TERM "$command_pid" 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do kill -0 "$command_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$command_pid" 2>/dev/null || true
  fi
  # SIGTERM first: fedcld exits cleanly on it. Then SIGKILL for any that did not within 2 s.
  local -a ours=()
  for pid in "${daemon_pids[@]}"; do our_child "$pid" && ours+=("$pid"); done
  for pid in "${ours[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for ((i = 0; i < 20; i++)); do
    local running=0
    for pid in "${ours[@]}"; do
      # A zombie (Z) is gone for our purposes; `wait` below reaps it.
      our_child "$pid" && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]] && running=1
    done
    ((running)) || break
    sleep 0.1
  done
  for pid in "${ours[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if ((status != 0 && !logs_shown)) && ((${#daemon_pids[@]})); then show_logs; fi
  for ns in "${namespaces[@]}"; do remove_namespace "$ns"; done
  if ((keep_logs)); then
    say "logs kept in $run_dir"
  else
    rm -rf -- "$run_dir"
  fi
}

# shellcheck disable=SC2317
show_logs() {
  local k
  for ((k = 0; k < ${#daemon_pids[@]}; k++)); do
    [[ -s $run_dir/node$k.log ]] || continue
    say "last lines of node$k's log ($run_dir/node$k.log):"
    tail -n 25 "$run_dir/node$k.log" | sed "s/^/  node$k| /" >&2
  done
}

# shellcheck disable=SC2317
on_exit() {
  local status=$?
  cleanup "$status"
  exit "$status"
}
# shellcheck disable=SC2317
on_signal() {
  say "caught SIG$1; cleaning up"
  local number
  number=$(kill -l "$1")
  exit $((128 + number))
}
trap on_exit EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP

# ---------------------------------------------------------------------------------------------------
# The network.

# Runs ip with the given arguments; on failure stores its message in ip_error and returns 1.
ip_error=
try_ip() {
  local output
  if ! output=$(ip "$@" 2>&1); then
    ip_error="ip $*: ${output:-failed}"
    return 1
  fi
}

add_namespace() {
  try_ip netns add "$1" || return 1
  namespaces+=("$1")
  try_ip -n "$1" link set lo up
}

# Node K's main address, app address, peer-network address. A and B come from the pid; C from A.
subnet_a=$((($$ >> 8) & 255))
subnet_b=$(($$ & 255))
main_address() { echo "10.$subnet_a.$subnet_b.$1"; }
peer_address() { echo "172.$((16 + subnet_a % 16)).$subnet_b.$1"; }
readonly APP_HOST=254

# Connects namespace ns to bridge bridge in the switch: port sw_port there, iface (address/24) in ns.
# The veth is made inside the switch with its other end moved straight into ns, so that nothing ever
# appears in the root namespace.
attach() {
  local ns=$1 iface=$2 address=$3 bridge=$4 sw_port=$5
  try_ip -n "$switch_ns" link add "$sw_port" type veth peer name "$iface" netns "$ns" &&
    try_ip -n "$switch_ns" link set "$sw_port" master "$bridge" &&
    try_ip -n "$switch_ns" link set "$sw_port" up &&
    try_ip -n "$ns" addr add "$address/24" dev "$iface" &&
    try_ip -n "$ns" link set "$iface" up
}

# Everything in one go; returns 1 (the reason in ip_error) at the first step that fails.
make_network() {
  switch_ns=${PREFIX}sw
  app_ns=${PREFIX}app
  add_namespace "$switch_ns" || return 1
  try_ip -n "$switch_ns" link add br-main type bridge || return 1
  try_ip -n "$switch_ns" link set br-main up || return 1
  if ((peer_net)); then
    try_ip -n "$switch_ns" link add br-peer type bridge || return 1
    try_ip -n "$switch_ns" link set br-peer up || return 1
  fi
  add_namespace "$app_ns" || return 1
  attach "$app_ns" eth0 "$(main_address $APP_HOST)" br-main app || return 1
  local k
  for ((k = 0; k < nodes; k++)); do
    add_namespace "${PREFIX}n$k" || return 1
    attach "${PREFIX}n$k" "$NODE_IFACE" "$(main_address $((k + 1)))" br-main "n$k" || return 1
    if ((peer_net)); then
      attach "${PREFIX}n$k" "$PEER_IFACE" "$(peer_address $((k + 1)))" br-peer "p$k" || return 1
    fi
  done
}

# A tbf burst of about 10 ms at rate (at least 16 KiB), for kernels without netem.
tbf_burst() {
  local rate=$1 number unit bits
  if [[ $rate =~ ^([0-9]+)([kmgt]?)bit$ ]]; then
    number=${BASH_REMATCH[1]}
    unit=${BASH_REMATCH[2]}
    case $unit in
      k) bits=$((number * 1000)) ;; m) bits=$((number * 1000000)) ;;
      g) bits=$((number * 1000000000)) ;; t) bits=$((number * 1000000000000)) ;; *) bits=$number ;;
    esac
    local bytes=$((bits / 8 / 100))
    ((bytes < 16384)) && bytes=16384
    echo "$bytes"
  else
    echo 1mb
  fi
}

netem_missing_said=0
# Shapes the egress of iface in ns: netem delay+rate, or tbf rate where netem is missing.
shape_egress() {
  local ns=$1 iface=$2 output
  if output=$(tc -n "$ns" qdisc replace dev "$iface" root netem delay "$shape_delay" rate "$shape_rate" 2>&1); then
    return 0
  fi
  if ((!netem_missing_said)); then
    say "netem unavailable ($output); shaping the rate alone with tbf, the delay $shape_delay is not applied"
    netem_missing_said=1
  fi
  output=$(tc -n "$ns" qdisc replace dev "$iface" root tbf rate "$shape_rate" burst "$(tbf_burst "$shape_rate")" \
    latency 100ms 2>&1) || die "cannot shape $iface in $ns: $output"
}

# Both directions of each node link: the node's side, and the switch port facing the node.
shape_links() {
  local k
  for ((k = 0; k < nodes; k++)); do
    shape_egress "${PREFIX}n$k" "$NODE_IFACE"
    shape_egress "$switch_ns" "n$k"
    if ((peer_net)); then
      shape_egress "${PREFIX}n$k" "$PEER_IFACE"
      shape_egress "$switch_ns" "p$k"
    fi
  done
}

# ---------------------------------------------------------------------------------------------------
# Choosing the mode.

mode=netns
why_not=
if ((loopback)); then
  why_not="--loopback given"
elif ((EUID != 0)); then
  why_not="not root"
elif ! command -v ip >/dev/null; then
  why_not="no ip command"
fi

if [[ -z $why_not ]]; then
  sweep_stale_namespaces
  # The reaper, detached twice over so that it is nobody's child but init's.
  # With --keep-logs it leaves run_dir alone.
  reap_dir=$run_dir
  ((keep_logs)) && reap_dir=
  (setsid bash "$SELF" --internal-reap "$$" "$reap_dir" </dev/null >/dev/null 2>&1 &)
  if ! make_network; then
    why_not=$ip_error
    for ns in "${namespaces[@]}"; do remove_namespace "$ns"; done
    namespaces=()
  fi
fi
if [[ -n $why_not ]]; then
  mode=loopback
  say "network namespaces unavailable ($why_not); using loopback ports"
fi
if [[ $mode == netns && -n $shape ]]; then shape_links; fi
if [[ $mode == loopback && ($peer_net == 1 || -n $shape) ]]; then
  say "--peer-net and --shape have no effect in loopback mode"
fi

# ---------------------------------------------------------------------------------------------------
# The daemons.

# Starts fedcld for node k and waits (bounded) for its port file; prints the endpoint clients use.
start_daemon() {
  local k=$1
  local listen host peer args_text port_file=$run_dir/node$k.port log=$run_dir/node$k.log
  local -a args in_ns=()
  if [[ $mode == netns ]]; then
    host=$(main_address $((k + 1)))
    listen=$host:$PORT
    peer=$host
    ((peer_net)) && peer=$(peer_address $((k + 1)))
    in_ns=(ip netns exec "${PREFIX}n$k")
    # The namespaces' network is the test's own: no one else reaches it.
    args=(--allow-unauthenticated yes)
  else
    host=127.0.0.1
    listen=127.0.0.1:0
    peer=127.0.0.1
  fi
  args_text=${daemon_args//@PEER_ADDR@/$peer}
  local -a extra
  read -r -a extra <<<"$args_text"
  args+=("${extra[@]}")
  # The daemon must see the node's real OpenCL platforms, not the fedcl-only vendors directory that
  # the tests point the loader at.
  "${in_ns[@]}" env -u OCL_ICD_VENDORS "${with_parent[@]}" "$fedcld" --config /dev/null --listen "$listen" --port-file "$port_file" \
    --name "node$k" --log-level "${FEDCL_TEST_DAEMON_LOG:-info}" "${args[@]}" >"$log" 2>&1 </dev/null &
  daemon_pids+=("$!")
  local pid=$! deadline=$((SECONDS + START_TIMEOUT_S)) port=
  while ((SECONDS < deadline)); do
    if [[ -s $port_file ]]; then
      read -r port <"$port_file" || true
      [[ $port =~ ^[0-9]+$ ]] && break
    fi
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.05
  done
  if ! [[ $port =~ ^[0-9]+$ ]]; then
    local what="did not write its port file within ${START_TIMEOUT_S}s" status=0
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" || status=$?
      what="exited with status $status before listening"
    fi
    say "fedcld for node$k $what; its log ($log):"
    sed "s/^/  node$k| /" "$log" >&2
    logs_shown=1
    exit 1
  fi
  echo "$host:$port"
}

hosts=()
for ((k = 0; k < nodes; k++)); do
  # Not in $(...): the daemon must be this shell's child, for `wait` and the cleanup.
  start_daemon "$k" >"$run_dir/node$k.endpoint"
  hosts+=("$(<"$run_dir/node$k.endpoint")")
done

join() {
  local IFS=,
  echo "$*"
}
# A list of n copies of word, comma-separated.
repeat() {
  local word=$1 n=$2 k out=()
  for ((k = 0; k < n; k++)); do out+=("$word"); done
  join "${out[@]}"
}

node_netns=() logs=() peer_addrs=()
for ((k = 0; k < nodes; k++)); do
  node_netns+=("${PREFIX}n$k")
  logs+=("$run_dir/node$k.log")
  peer_addrs+=("$(peer_address $((k + 1)))")
done
export FEDCL_HOSTS FEDCL_TEST_DAEMON_PIDS FEDCL_TEST_NODE_NETNS FEDCL_TEST_NODE_IFACE FEDCL_TEST_NODE_LOGS
export FEDCL_TEST_MODE=$mode FEDCL_TEST_NODE_PEER_ADDR='' FEDCL_TEST_NODE_PEER_IFACE=''
FEDCL_HOSTS=$(join "${hosts[@]}")
FEDCL_TEST_DAEMON_PIDS=$(join "${daemon_pids[@]}")
FEDCL_TEST_NODE_LOGS=$(join "${logs[@]}")
if [[ $mode == netns ]]; then
  FEDCL_TEST_NODE_NETNS=$(join "${node_netns[@]}")
  FEDCL_TEST_NODE_IFACE=$(repeat "$NODE_IFACE" "$nodes")
  if ((peer_net)); then
    FEDCL_TEST_NODE_PEER_ADDR=$(join "${peer_addrs[@]}")
    FEDCL_TEST_NODE_PEER_IFACE=$(repeat "$PEER_IFACE" "$nodes")
  fi
else
  FEDCL_TEST_NODE_NETNS=
  FEDCL_TEST_NODE_IFACE=
fi

# ---------------------------------------------------------------------------------------------------
# The command: in the background, so that a signal reaches our trap while we wait for it.

app=()
[[ $mode == netns ]] && app=(ip netns exec "$app_ns")
"${app[@]}" "${with_parent[@]}" "$@" &
command_pid=$!
status=0
wait "$command_pid" || status=$?
command_pid=
exit "$status"
