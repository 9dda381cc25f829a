# What the bench scripts' reports share (sourced, not run).
#
#   report_file KIND                 bench/results/<date>-<host>-KIND.txt (FEDCL_BENCH_RESULTS: another folder)
#   report_header TITLE BUILD        the report's first lines: what ran where, the commit, the build
#   measure_peer_link BUILD [FROM_NS TO_NS TO_ADDR]
#                                    the peer link's floor, TCP between two local processes (over loopback,
#                                    or from namespace FROM_NS to TO_ADDR in TO_NS): the lines
#                                    peer_link.tcp_rtt.median/.p99 and peer_link.tcp_throughput

report_file() {
  local results=${FEDCL_BENCH_RESULTS:-$repo/bench/results}
  mkdir -p "$results"
  echo "$results/$(date +%Y-%m-%dT%H%M%S)-$(hostname -s)-$1.txt"
}

report_header() {
  echo "# $1, $(date -Is), $(hostname -s): $(nproc) cores, $(uname -r)"
  echo "# commit $(git -C "$repo" rev-parse --short HEAD), build $2"
}

measure_peer_link() {
  local work probe from=() to=() address=127.0.0.1
  if [[ $# -ge 4 ]]; then
    from=(ip netns exec "$2")
    to=(ip netns exec "$3")
    address=$4
  fi
  work=$(mktemp -d)
  "${to[@]}" "$1/bench/fedcl_linkprobe" serve "$address:0" --port-file "$work/port" &
  probe=$!
  for _ in $(seq 50); do [[ -s $work/port ]] && break; sleep 0.1; done
  "${from[@]}" "$1/bench/fedcl_linkprobe" measure "$address:$(cat "$work/port")" --prefix peer_link --bytes $((256 << 20))
  wait "$probe" || true
  rm -rf "$work"
}
