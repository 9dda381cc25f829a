#!/usr/bin/env bash
# A real Prometheus (Debian's prometheus package) scrapes fedcld --metrics: after one session ran
# through the daemon, Prometheus's own query API must report the target up and the session counted.
#
# prometheus_scrape_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
command -v prometheus >/dev/null || { echo "FAIL: no prometheus (scripts/setup.sh installs it)"; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$build/bridge-daemon/fedcld" --config /dev/null --listen 127.0.0.1:0 --port-file "$work/port" \
  --metrics 127.0.0.1:0 --log-level warn 2>"$work/fedcld.log" &
pids+=($!)
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
[[ -s $work/port.metrics ]] || { echo "FAIL: fedcld wrote no metrics port"; cat "$work/fedcld.log"; exit 1; }
FEDCL_HOSTS=127.0.0.1:$(cat "$work/port") OCL_ICD_VENDORS=$build/vendors "$build/examples/vector_add" >/dev/null

web_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: fedcld
    static_configs:
      - targets: ["127.0.0.1:$(cat "$work/port.metrics")"]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$web_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)

query() {  # PROMQL: the first result's value, or nothing
  python3 - "$web_port" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
try:
    answer = json.load(urllib.request.urlopen(url, timeout=2))
    print(answer["data"]["result"][0]["value"][1])
except Exception:
    pass
PY
}
for _ in $(seq 60); do
  up=$(query 'up{job="fedcld"}')
  started=$(query 'fedcld_sessions_started_total{job="fedcld"}')
  [[ $up == 1 && $started == 1 ]] && break
  sleep 0.5
done
kinds=$(query 'count(fedcld_requests_total{job="fedcld"})')
echo "Prometheus: up=$up, fedcld_sessions_started_total=$started, request kinds seen=$kinds"
if [[ $up != 1 || $started != 1 || -z $kinds ]]; then
  echo "FAIL: Prometheus did not scrape fedcld as expected; its log:"
  tail -20 "$work/prometheus.log"
  exit 1
fi
echo "a real Prometheus scraped fedcld"
