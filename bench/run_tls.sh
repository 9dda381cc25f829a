#!/usr/bin/env bash
# What TLS costs fedcl: a fedcld without TLS and one with (certificate and pre-shared key both
# offered) on loopback, with PoCL behind them, and fedcl_tls_bench against each in turn: plain TCP,
# TLS with the certificate (FEDCL_TLS=cert), TLS with the key (FEDCL_TLS=psk), round after round,
# beside the raw TCP link measured in the same run. Both daemons and every client prove the same key,
# so that TLS is the only difference. Prints the medians over rounds, TLS / plain ratios and the
# targets (TLS costs at most 10% of 256 MiB bandwidth and at most 10 us of round trip); writes it all
# to bench/results/<date>-<host>-tls.txt (or the folder FEDCL_BENCH_RESULTS names).
#
#   bench/run_tls.sh [BUILD_DIR] [--rounds N] [--quick]
#
# The daemons' backend is PoCL (/etc/OpenCL/vendors/pocl.icd); FEDCL_BENCH_BACKEND names another
# vendor's library (on the GPU machine, /usr/local/nvidia/lib64/libnvidia-opencl.so.1).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=build
if [[ $# -gt 0 && $1 != -* ]]; then build=$1; shift; fi
[[ $build = /* ]] || build=$repo/$build
rounds=3 quick=
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    --quick) quick=--quick; rounds=1 ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done
bench=$build/bench/fedcl_tls_bench daemon=$build/bridge-daemon/fedcld
for need in "$bench" "$daemon" "$build/vendors/fedcl.icd"; do
  [[ -e $need ]] || { echo "run_tls.sh: $need is missing (build with -DFEDCL_BUILD_BENCH=ON)" >&2; exit 2; }
done

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
"$repo/tests/tls/make_certificates.sh" "$work/tls"
mkdir "$work/vendors-backend" "$work/vendors"
backend=${FEDCL_BENCH_BACKEND:-}
if [[ -n $backend ]]; then
  echo "$backend" >"$work/vendors-backend/backend.icd"
  backend_name=$backend
else
  cp /etc/OpenCL/vendors/pocl.icd "$work/vendors-backend/"
  backend_name="PoCL $(dpkg-query -W -f '${Version}' libpocl2 2>/dev/null || echo unknown)"
fi
cp "$build/vendors/fedcl.icd" "$work/vendors/"

# start NAME OPTIONS...: a fedcld on a free loopback port; its port in $work/NAME.port.
start() {
  local name=$1; shift
  env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$work/vendors-backend" "$daemon" --config /dev/null \
    --listen 127.0.0.1:0 --port-file "$work/$name.port" --log-level warn --key-file "$work/tls/key" "$@" \
    2>>"$work/fedcld.log" &
  pids+=($!)
  for _ in $(seq 100); do [[ -s $work/$name.port ]] && return; sleep 0.1; done
  echo "run_tls.sh: fedcld ($name) did not start" >&2; cat "$work/fedcld.log" >&2; exit 1
}
start plain
start tls --tls yes --tls-cert "$work/tls/daemon.pem" --tls-key "$work/tls/daemon.key"

# client MODE LABEL: one fedcl_tls_bench run with FEDCL_TLS=MODE.
client() {
  local daemon_name=plain
  [[ $1 = off ]] || daemon_name=tls
  env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$work/vendors" FEDCL_HOSTS="127.0.0.1:$(cat "$work/$daemon_name.port")" \
    FEDCL_KEY_FILE="$work/tls/key" FEDCL_TLS="$1" FEDCL_TLS_CA="$work/tls/ca.pem" "$bench" --label "$2" $quick
}

# The CPU time the hypervisor took from this machine (steal, all CPUs) since boot, in seconds: a
# busy host shows here, and its rounds are not TLS's cost.
steal_seconds() { awk -v hz="$(getconf CLK_TCK)" '/^cpu /{ printf "%.2f", $9 / hz }' /proc/stat; }

results=${FEDCL_BENCH_RESULTS:-$repo/bench/results}
mkdir -p "$results"
out=$results/$(date +%Y-%m-%dT%H%M%S)-$(hostname -s)-tls.txt
{
  echo "# fedcl_tls_bench $(date -Iseconds), $rounds round(s)"
  echo "# commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "# host: $(hostname)"
  echo "# cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores online, aes: $(grep -qw aes /proc/cpuinfo && echo yes || echo no)"
  echo "# kernel: $(uname -sr), kernel TLS (tls ULP): $(grep -qw tls /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null && echo available || echo not available)"
  echo "# openssl: $(openssl version 2>/dev/null || echo unknown)"
  echo "# build: $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)"
  echo "# backend: $backend_name, behind fedcld on loopback"
  echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# raw link: TCP over loopback to a forked process, TCP_NODELAY"
  env -u OCL_ICD_VENDORS "$bench" --link $quick
  for round in $(seq "$rounds"); do
    echo "# round $round"
    steal_before=$(steal_seconds)
    client off plain
    client cert cert
    client psk psk
    echo "host.cpu_steal $(awk -v a="$steal_before" -v b="$(steal_seconds)" 'BEGIN { printf "%.2f", b - a }') s"
  done
  echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$work/raw.txt"

# Medians over rounds, TLS against plain, and the targets.
awk '
  /^#/ { next }
  NF == 3 { values[$1] = values[$1] " " $2; unit[$1] = $3; if (!($1 in seen)) { order[++n] = $1; seen[$1] = 1 } }
  function median(list,   parts, count, i, j, t) {
    count = split(list, parts, " ")
    for (i = 1; i <= count; i++) for (j = i + 1; j <= count; j++) if (parts[j] + 0 < parts[i] + 0) { t = parts[i]; parts[i] = parts[j]; parts[j] = t }
    return count % 2 ? parts[(count + 1) / 2] : (parts[count / 2] + parts[count / 2 + 1]) / 2
  }
  END {
    print "# medians over rounds"
    for (i = 1; i <= n; i++) { m[order[i]] = median(values[order[i]]); printf "%s.median_of_rounds %.5g %s\n", order[i], m[order[i]], unit[order[i]] }
    print "# TLS against plain TCP: bandwidth ratio = TLS / plain; round trip extra = TLS - plain"
    split("cert psk", modes, " ")
    for (k = 1; k <= 2; k++) {
      mode = modes[k]
      for (i = 1; i <= n; i++) {
        name = order[i]
        if (index(name, "tls.plain.") != 1) continue
        metric = substr(name, 11); other = "tls." mode "." metric
        if (!(other in m)) continue
        if (unit[name] == "MiB/s") printf "tls.%s.%s.ratio %.4g x\n", mode, metric, (m[name] > 0 ? m[other] / m[name] : 0)
        else printf "tls.%s.%s.extra %.4g us\n", mode, metric, m[other] - m[name]
      }
      if (!("tls.plain.read_256MiB" in m) || !(("tls." mode ".read_256MiB") in m)) {
        printf "target.tls_%s.bandwidth_256MiB_within_10pct not_run\n", mode  # --quick moves 32 MiB
      } else {
        bw_ok = m["tls." mode ".read_256MiB"] >= 0.9 * m["tls.plain.read_256MiB"] && m["tls." mode ".write_256MiB"] >= 0.9 * m["tls.plain.write_256MiB"]
        printf "target.tls_%s.bandwidth_256MiB_within_10pct %s\n", mode, bw_ok ? "met" : "not_met"
      }
      rtt_ok = m["tls." mode ".read_64B.median"] - m["tls.plain.read_64B.median"] <= 10 && m["tls." mode ".enqueue_finish.median"] - m["tls.plain.enqueue_finish.median"] <= 10
      printf "target.tls_%s.round_trip_within_10us %s\n", mode, rtt_ok ? "met" : "not_met"
    }
  }' "$work/raw.txt" | tee -a "$work/raw.txt"
{ cat "$work/raw.txt"; echo "# fedcld log:"; sed 's/^/# /' "$work/fedcld.log"; } >"$out"
echo "# written to $out"
