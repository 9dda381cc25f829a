# A small namespaced network for bench/run_federation.sh (sourced, not run): a switch namespace
# holding a bridge, and one namespace per host ("app" and the nodes n0, n1, ...), each joined to the
# bridge by a veth pair. Host i gets 10.77.0.(10+i)/24 on its eth0; the app gets 10.77.0.2.
# With shaping, every host's eth0 sends through netem (delay and rate), so each direction of a
# host-to-host path is delayed once: 50us each way gives 100us more RTT. Where the kernel has no
# netem (sch_netem), tbf limits the rate alone; FEDNS_SHAPING says which was done.
#
#   fedns_up PREFIX NODES [DELAY RATE]   e.g. fedns_up fcb1234 2 50us 10gbit
#   fedns_down                           removes every namespace fedns_up made (safe to repeat)
#   fedns_ip HOST                        the address of app, n0, n1, ...
#   fedns_name HOST                      the namespace of app, n0, n1, ...

FEDNS_PREFIX=
FEDNS_MADE=()
FEDNS_SHAPING=none

fedns_name() { echo "${FEDNS_PREFIX}-$1"; }

fedns_ip() {
  case $1 in
    app) echo 10.77.0.2 ;;
    n*) echo "10.77.0.$((10 + ${1#n}))" ;;
  esac
}

fedns_add_host() {  # HOST DELAY RATE
  local host=$1 delay=$2 rate=$3 ns sw
  ns=$(fedns_name "$host")
  sw=$(fedns_name sw)
  ip netns add "$ns" && FEDNS_MADE+=("$ns") || return 1
  ip -n "$sw" link add "v-$host" type veth peer name eth0 netns "$ns" || return 1
  ip -n "$sw" link set "v-$host" master br0 up || return 1
  ip -n "$ns" addr add "$(fedns_ip "$host")/24" dev eth0 || return 1
  ip -n "$ns" link set lo up && ip -n "$ns" link set eth0 up || return 1
  if [[ -n $delay ]]; then
    if ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "$delay" rate "$rate" limit 100000 2>/dev/null; then
      FEDNS_SHAPING="netem delay $delay rate $rate on every host's eth0 (each way once)"
    elif ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 1mb latency 5ms; then
      FEDNS_SHAPING="tbf rate $rate burst 1mb latency 5ms on every host's eth0; NO delay: this kernel has no netem qdisc"
    else
      return 1
    fi
  fi
}

fedns_up() {  # PREFIX NODES [DELAY RATE]
  FEDNS_PREFIX=$1
  local nodes=$2 delay=${3:-} rate=${4:-} sw i
  sw=$(fedns_name sw)
  ip netns add "$sw" && FEDNS_MADE+=("$sw") || return 1
  ip -n "$sw" link set lo up || return 1
  ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up || return 1
  fedns_add_host app "$delay" "$rate" || return 1
  for ((i = 0; i < nodes; i++)); do fedns_add_host "n$i" "$delay" "$rate" || return 1; done
}

fedns_down() {
  local ns
  for ns in "${FEDNS_MADE[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  FEDNS_MADE=()
}
