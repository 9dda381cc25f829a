#!/usr/bin/env bash
# The load test: one fedcld on loopback, many client processes (bench/load_client.cpp through the
# real ICD loader), each running a workload whose every result is checked against the host.
#
#   bench/load_test.sh BUILD_DIR [--sessions N] [--seconds S] [--single-seconds S] [--kills K]
#                      [--seed N] [--check-rss]
#
# Rounds, on one daemon:
#   single      one client for --single-seconds (default --seconds); the daemon's RSS after it is
#               the reference
#   load        N clients at once for S seconds; all must be right; RSS after they are gone
#   kills       N clients (every fourth with 4 threads), K of them SIGKILLed at random moments; the
#               others must be right, and every session must go (RSS printed again)
#   daemon_kill up to 8 clients running when the daemon is SIGKILLed: each must end with an OpenCL
#               error and a message (exit status 3), none may hang
# RSS (the main process and its session workers) is read once the daemon reports no session
# (`fedcl status`). --check-rss fails the run when
# the RSS after `load` or `kills` exceeds the reference by more than 20%.
#
# Prints `metric value unit` lines; exits 1 when a check failed.
set -euo pipefail

usage() { echo "usage: $0 BUILD_DIR [--sessions N] [--seconds S] [--single-seconds S] [--kills K] [--seed N] [--check-rss]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
build=$(cd "$1" && pwd)
shift
sessions=32 seconds=60 single_seconds= kills=8 seed=$$ check_rss=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --sessions) sessions=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --single-seconds) single_seconds=$2; shift 2 ;;
    --kills) kills=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --check-rss) check_rss=1; shift ;;
    *) usage ;;
  esac
done
single_seconds=${single_seconds:-$seconds}
((kills < sessions)) || { echo "load_test.sh: --kills must be below --sessions" >&2; exit 2; }
RANDOM=$seed

fedcld=$build/bridge-daemon/fedcld
client=$build/bench/fedcl_load_client
fedcl=$build/tools/fedcl
for need in "$fedcld" "$client" "$fedcl" "$build/vendors/fedcl.icd"; do
  [[ -e $need ]] || { echo "load_test.sh: $need is missing (build first)" >&2; exit 2; }
done

# The daemon and every client die with this script, even when it is SIGKILLed (ctest's timeout).
with_parent=()
if command -v setpriv >/dev/null && setpriv --pdeathsig KILL true 2>/dev/null; then
  with_parent=(setpriv --pdeathsig KILL)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fedcl-load.XXXXXX")
daemon_pid=
client_pids=()      # this round's clients, by number
declare -A running  # clients not reaped yet: the only processes cleanup may signal
problems=0
cleanup() {
  local pid
  for pid in "${!running[@]}" $daemon_pid; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

metric() { printf '%s %s %s\n' "$1" "$2" "$3"; }
fail() {
  echo "FAILED: $*"
  problems=$((problems + 1))
}

start_daemon() {
  rm -f "$work/port"
  # The daemon sees the node's real platforms (PoCL); the clients see fedcl alone.
  env -u OCL_ICD_VENDORS "${with_parent[@]}" "$fedcld" --config /dev/null --listen 127.0.0.1:0 \
    --port-file "$work/port" --log-level warn 2>>"$work/fedcld.log" &
  daemon_pid=$!
  for _ in $(seq 200); do
    [[ -s $work/port ]] && break
    kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/fedcld.log" >&2; exit 1; }
    sleep 0.1
  done
  [[ -s $work/port ]] || { echo "load_test.sh: fedcld did not start" >&2; exit 1; }
  export FEDCL_HOSTS=127.0.0.1:$(cat "$work/port") OCL_ICD_VENDORS=$build/vendors
}

# The daemon's resident memory: its main process and its session workers (its children).
rss_mib() {
  local pids=$daemon_pid
  pids+=" $(cat /proc/"$daemon_pid"/task/*/children 2>/dev/null)"
  for pid in $pids; do cat "/proc/$pid/status" 2>/dev/null; done | awk '/^VmRSS:/ {kib += $2} END {printf "%.1f", kib / 1024}'
}

# The number of client sessions the daemon reports.
open_sessions() { "$fedcl" status 2>/dev/null | sed -n 's/^ *sessions: \([0-9]*\) of.*/\1/p'; }

# Waits (bounded) until the daemon reports exactly $1 client sessions.
await_sessions() {
  local want=$1 seen=
  for _ in $(seq 240); do
    seen=$(open_sessions)
    [[ $seen == "$want" ]] && return 0
    sleep 0.25
  done
  fail "the daemon reports ${seen:-no answer} sessions, not $want, after a minute"
  return 1
}

# start_client NAME SECONDS SEED THREADS [GIVE_UP]: runs a client in the background.
start_client() {
  "${with_parent[@]}" "$client" --seconds "$2" --seed "$3" --threads "$4" ${5:+--give-up "$5"} \
    >"$work/$1.out" 2>"$work/$1.err" &
  client_pids+=($!)
  running[$!]=1
}

# Sums a metric over the clients' outputs named by the glob $2.
sum_metric() { cat $2 2>/dev/null | awk -v name="load_client.$1" '$1 == name {total += $2} END {print total + 0}'; }

# Waits for client $1 (pid $2); checks that it exited with status $3 (a hang ends it by SIGALRM).
expect_client() {
  local status=0
  wait "$2" 2>/dev/null || status=$?  # (no "Killed" line from the shell for the victims)
  unset "running[$2]"
  if ((status != $3)); then
    fail "client $1 exited with $status, not $3$( ((status == 142)) && echo ' (it hung)'): $(tail -n 3 "$work/$1.err" | tr '\n' ' ')"
  fi
}

start_daemon
metric fedcld.rss_start "$(rss_mib)" MiB

# --- single: the reference.
client_pids=()
start_client single "$single_seconds" "$seed" 1
expect_client single "${client_pids[0]}" 0
await_sessions 0 || true
rss_single=$(rss_mib)
metric single.runs_checked "$(sum_metric runs_checked "$work/single.out")" runs
metric single.failures "$(sum_metric failures "$work/single.out")" runs
metric fedcld.rss_after_single_session "$rss_single" MiB

# --- load: N clients at once.
client_pids=()
for i in $(seq "$sessions"); do start_client "load$i" "$seconds" $((seed + i)) 1; done
for i in $(seq "$sessions"); do expect_client "load$i" "${client_pids[i - 1]}" 0; done
await_sessions 0 || true
rss_load=$(rss_mib)
metric load.sessions "$sessions" sessions
metric load.seconds "$seconds" s
metric load.runs_checked "$(sum_metric runs_checked "$work/load*.out")" runs
metric load.failures "$(sum_metric failures "$work/load*.out")" runs
metric fedcld.rss_after_load "$rss_load" MiB
metric fedcld.rss_ratio_load "$(awk -v a="$rss_load" -v b="$rss_single" 'BEGIN {printf "%.3f", a / b}')" x

# --- kills: K of N clients SIGKILLed at random moments while the others go on.
client_pids=()
for i in $(seq "$sessions"); do start_client "kills$i" "$seconds" $((seed + 1000 + i)) $((i % 4 == 0 ? 4 : 1)); done
# The shell reports each client killed by a signal on its stderr ("Killed"): not a problem here.
exec 3>&2 2>/dev/null
victims=$(seq "$sessions" | shuf --random-source=<(yes "$seed") -n "$kills" | sort -n)
for victim in $victims; do
  echo "$(((RANDOM * 32768 + RANDOM) % (seconds * 1000 - 500) + 250)) $victim"
done | sort -n | {
  elapsed=0
  while read -r at victim; do
    sleep "$(awk -v a="$at" -v e="$elapsed" 'BEGIN {printf "%.3f", (a - e) / 1000}')"
    elapsed=$at
    kill -KILL "${client_pids[victim - 1]}" || true  # it may have ended already
  done
}
for i in $(seq "$sessions"); do
  if grep -qx "$i" <<<"$victims"; then expect_client "kills$i" "${client_pids[i - 1]}" 137
  else expect_client "kills$i" "${client_pids[i - 1]}" 0; fi
done
exec 2>&3 3>&-
await_sessions 0 || true
rss_kills=$(rss_mib)
metric kills.clients_killed "$kills" clients
metric kills.runs_checked "$(sum_metric runs_checked "$work/kills*.out")" runs
metric kills.failures "$(sum_metric failures "$work/kills*.out")" runs
metric fedcld.rss_after_kills "$rss_kills" MiB
metric fedcld.rss_ratio_kills "$(awk -v a="$rss_kills" -v b="$rss_single" 'BEGIN {printf "%.3f", a / b}')" x

if ((check_rss)); then
  for after in load kills; do
    rss=rss_$after
    awk -v a="${!rss}" -v b="$rss_single" 'BEGIN {exit !(a <= 1.2 * b)}' ||
      fail "fedcld's RSS after $after (${!rss} MiB) is more than 20% above its RSS after one session ($rss_single MiB)"
  done
fi

# --- daemon_kill: the daemon dies under running clients; each gets an error and a message.
client_pids=()
victims=$((sessions < 8 ? sessions : 8))
for i in $(seq "$victims"); do start_client "orphan$i" 600 $((seed + 2000 + i)) $((i % 2 + 1)) 120; done
await_sessions "$victims" || true
sleep "$(awk -v r=$RANDOM 'BEGIN {printf "%.3f", 0.5 + r % 2000 / 1000}')"
kill -KILL "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
told=0
for i in $(seq "$victims"); do
  expect_client "orphan$i" "${client_pids[i - 1]}" 3
  grep -q "fedcl_load_client: .* failed with" "$work/orphan$i.err" ||
    fail "client orphan$i of the killed daemon printed no failed call: $(tr '\n' ' ' <"$work/orphan$i.err")"
  # The runtime's own line is counted, not required: when a send finds the daemon gone the call fails
  # at once, and the line comes from the receiver thread, which a program that exits at once may cut.
  if grep -q "fedcl: lost daemon" "$work/orphan$i.err"; then told=$((told + 1)); fi
done
metric daemon_kill.clients "$victims" clients
metric daemon_kill.clients_with_lost_daemon_line "$told" clients
metric daemon_kill.runs_checked "$(sum_metric runs_checked "$work/orphan*.out")" runs
metric daemon_kill.failures "$(sum_metric failures "$work/orphan*.out")" runs

# Wrong results were counted by the clients (and made them exit 1, failed above).
total_failures=0
for round in single load kills orphan; do
  total_failures=$((total_failures + $(sum_metric failures "$work/$round*.out")))
done
metric load_test.failures "$total_failures" runs
metric load_test.problems "$problems" problems
if ((problems)); then
  echo "fedcld's log (last 30 lines):"
  tail -n 30 "$work/fedcld.log"
  exit 1
fi
