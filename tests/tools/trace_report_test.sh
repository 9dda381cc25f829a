#!/usr/bin/env bash
# The hand-off trace end to end: a program through fedcl against a fedcld, both recording (FEDCL_TRACE,
# --trace); bench/trace_report.py must join the two files into hops that add up, and refuse a file
# that is not a trace.
set -euo pipefail
build=$1
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
daemon=
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "trace_report_test: $*" >&2; exit 1; }

"$build/bridge-daemon/fedcld" --config /dev/null --listen 127.0.0.1:0 --port-file "$dir/port" \
  --log-level warn --trace "$dir/daemon.trace" &
daemon=$!
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
[ -s "$dir/port" ] || fail "fedcld did not start"
# A program that launches, reads and finishes in a loop (PyOpenCL through fedcl).
OCL_ICD_VENDORS="$build/vendors" FEDCL_HOSTS="127.0.0.1:$(cat "$dir/port")" FEDCL_TRACE="$dir/client.trace" \
  PYOPENCL_NO_CACHE=1 timeout 60 /usr/bin/python3 - <<'PY' || fail "the traced program failed"
import numpy as np
import pyopencl as cl
platform = next(p for p in cl.get_platforms() if p.name == "fedcl")
context = cl.Context(platform.get_devices()[:1])
queue = cl.CommandQueue(context)
start = np.arange(1024, dtype=np.float32)
buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=start)
program = cl.Program(context, "__kernel void inc(__global float *x) { x[get_global_id(0)] += 1; }").build()
out = np.empty_like(start)
for _ in range(50):
    program.inc(queue, start.shape, None, buffer)
    cl.enqueue_copy(queue, out, buffer)
    queue.finish()
assert (out == start + 50).all(), "wrong results"
PY
kill "$daemon"
wait "$daemon" || true
daemon=
# The session's worker writes the daemon's marks, to the file named and its session's number.
daemon_trace=$(ls "$dir"/daemon.trace.* 2>/dev/null | head -n 1)
[ -s "$daemon_trace" ] || fail "fedcld's session worker wrote no trace at exit"

/usr/bin/python3 "$repo/bench/trace_report.py" "$dir/client.trace" "$daemon_trace" > "$dir/report.txt"
cat "$dir/report.txt"
calls=$(awk '$1 == "trace.calls" {print $2}' "$dir/report.txt")
[ "${calls:-0}" -ge 10 ] || fail "only ${calls:-0} calls joined"
value() { awk -v m="$1" '$1 == m {print $2}' "$dir/report.txt"; }
for hop in total request_to_daemon daemon_runs_request reply_to_client client_wakes_caller; do
  [ -n "$(value "trace.$hop.median")" ] || fail "no $hop hop in the report"
done
# Every hop is a part of the total: none may exceed it, and the clock never runs backwards. Only a
# hop that every call takes compares with the total's median: one that a few take (a build answered
# after it ran) has a median of those few.
awk -v calls="$calls" '$1 ~ /\.median$/ {m[$1] = $2} $1 ~ /\.count$/ {c[$1] = $2} END {
  for (k in m) {
    if (m[k] < 0) { print "negative " k; exit 1 }
    n = k; sub(/\.median$/, ".count", n)
    if (c[n] == calls && m[k] > m["trace.total.median"]) { print k " exceeds the total"; exit 1 }
  }
}' "$dir/report.txt" || fail "hops do not fit the total"

echo "not a trace" > "$dir/bad.trace"
if /usr/bin/python3 "$repo/bench/trace_report.py" "$dir/bad.trace" "$daemon_trace" 2> "$dir/bad.txt"; then
  fail "a malformed trace was accepted"
fi
grep -q "bad.trace:1" "$dir/bad.txt" || fail "the refusal does not say where: $(cat "$dir/bad.txt")"
echo "trace_report_test: ok ($calls calls)"
