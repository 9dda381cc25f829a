#!/usr/bin/env bash
# The sub-buffer stencil (subbuffer_stencil.cpp) through fedcl over fedcld daemons started here on
# loopback, then on the backend used directly with the same split, and what became of the daemons.
#
#   subbuffer_stencil.sh [options] [-- PROGRAM_OPTIONS...]
#
#   --build DIR          a fedcl build tree: takes fedcld, libfedcl.so and the program from it
#   --fedcld PATH        the daemon (default DIR/bridge-daemon/fedcld)
#   --fedcl-lib PATH     libfedcl.so (default DIR/icd/libfedcl.so)
#   --program PATH       subbuffer_stencil (default DIR/tests/realprog/subbuffer_stencil)
#   --backend LIB        the backend's OpenCL library, behind the daemons and for the direct run
#                        (default: $FEDCL_BACKEND_LIBRARY, else the library of /etc/OpenCL/vendors/*pocl*.icd)
#   --daemons K          daemons to start (default 2); each serves the backend's devices
#   --daemon-args ARGS   more fedcld options, e.g. "--platform NVIDIA --devices {d}" ({d}: the
#                        daemon's number, so that each serves a GPU of its own)
#   --cores-per-daemon C daemon k runs on cores [kC, kC+C) (taskset), and a CPU backend (PoCL) with
#                        C threads (POCL_MAX_PTHREAD_COUNT for PoCL 3, POCL_CPU_MAX_CU_COUNT from 4):
#                        nodes of their own cores, against the backend used directly on all of them
#   --slabs D            the split, the same for both runs (default 2): D slabs over the fedcl
#                        platform's devices, and D slabs over the backend's (one GPU: D queues on it)
#   --direct-platform S  the direct run uses the first platform whose name contains S
#   --runs R             run the program R times through fedcl against the same daemons (default 1)
#   --settle S           seconds to let the daemons finish a session before looking at them (default 2)
#   --stop-wait S        seconds a daemon may take to exit after SIGTERM before it is SIGKILLed (default 30)
#   --log-level L        the daemons' log level (default warn)
#   --timeout S          limit for each program run (default 120; the full-size run takes seconds)
#   --work DIR           keep the logs and outputs in DIR (default: a temporary folder, removed)
#   --no-direct          skip the run on the backend used directly
#   --loader both|vendors|filenames
#                        how the ICD loader is told which driver to load (default both):
#                        OCL_ICD_VENDORS names a folder holding that driver's .icd alone (ocl-icd,
#                        which knows nothing else, and recent Khronos loaders), OCL_ICD_FILENAMES
#                        names its library (the Khronos loader shipped with CUDA, which reads no
#                        OCL_ICD_VENDORS). A Khronos loader that reads both loads the driver twice
#                        (two equal platforms; the first is used): give it "filenames" there.
#
# Everything after -- goes to the program (e.g. --mib 64 --iterations 20 --readback slabs).
# The daemons' output goes to files in the work folder, never to this terminal; they die with this
# script (setpriv --pdeathsig). Each line of the summary starts with "stencil."; the last one is
# "stencil.verdict PASS" or "stencil.verdict FAIL: <why>". Exit status: 0 pass, 1 fail, 2 bad usage.
set -u

die_usage() {
  echo "subbuffer_stencil.sh: $*" >&2
  exit 2
}

build="" fedcld="" fedcl_lib="" program="" backend="${FEDCL_BACKEND_LIBRARY:-}" daemons=2 daemon_args="" cores_per_daemon=""
loader=both slabs=2 direct_platform="" runs=1 settle=2 stop_wait=30 log_level=warn run_timeout=120 work="" direct=1
while (($#)); do
  case "$1" in
    --) shift; break ;;
    --no-direct) direct=0; shift; continue ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  esac
  (($# >= 2)) || die_usage "$1 needs a value (or is unknown)"
  case "$1" in
    --build) build=$2 ;;
    --fedcld) fedcld=$2 ;;
    --fedcl-lib) fedcl_lib=$2 ;;
    --program) program=$2 ;;
    --backend) backend=$2 ;;
    --daemons) daemons=$2 ;;
    --daemon-args) daemon_args=$2 ;;
    --cores-per-daemon) cores_per_daemon=$2 ;;
    --slabs) slabs=$2 ;;
    --direct-platform) direct_platform=$2 ;;
    --runs) runs=$2 ;;
    --settle) settle=$2 ;;
    --stop-wait) stop_wait=$2 ;;
    --log-level) log_level=$2 ;;
    --timeout) run_timeout=$2 ;;
    --work) work=$2 ;;
    --loader) loader=$2 ;;
    *) die_usage "unknown option $1" ;;
  esac
  shift 2
done
program_args=("$@")

if [ -n "$build" ]; then
  [ -n "$fedcld" ] || fedcld=$build/bridge-daemon/fedcld
  [ -n "$fedcl_lib" ] || fedcl_lib=$build/icd/libfedcl.so
  [ -n "$program" ] || program=$build/tests/realprog/subbuffer_stencil
fi
[ -n "$fedcld" ] && [ -n "$fedcl_lib" ] && [ -n "$program" ] || die_usage "give --build DIR, or --fedcld, --fedcl-lib and --program"
if [ -z "$backend" ]; then
  for icd in /etc/OpenCL/vendors/*pocl*.icd; do
    [ -f "$icd" ] && backend=$(head -n1 "$icd") && break
  done
  [ -n "$backend" ] || die_usage "no --backend, and no PoCL .icd under /etc/OpenCL/vendors"
fi
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
fedcld=$(absolute "$fedcld") fedcl_lib=$(absolute "$fedcl_lib") program=$(absolute "$program")
case "$backend" in */*) backend=$(absolute "$backend") ;; esac  # a bare name is the linker's to find
[ -x "$fedcld" ] || die_usage "no fedcld at $fedcld"
[ -f "$fedcl_lib" ] || die_usage "no libfedcl.so at $fedcl_lib"
[ -x "$program" ] || die_usage "no program at $program"
for number in "$daemons" "$slabs" "$runs" "$run_timeout" "$stop_wait"; do
  case "$number" in ''|*[!0-9]*) die_usage "not a number: '$number'" ;; esac
done
case "$loader" in both|vendors|filenames) ;; *) die_usage "--loader is both, vendors or filenames" ;; esac
((daemons >= 1 && runs >= 1)) || die_usage "--daemons and --runs must be at least 1"
if [ -n "$cores_per_daemon" ]; then
  [[ $cores_per_daemon =~ ^[1-9][0-9]*$ ]] || die_usage "--cores-per-daemon wants a number of cores"
  ((daemons * cores_per_daemon <= $(nproc))) || die_usage "$daemons daemons of $cores_per_daemon cores need more than the $(nproc) here"
fi

if [ -n "$work" ]; then
  mkdir -p "$work" || die_usage "cannot make $work"
  work=$(cd "$work" && pwd)
  keep_work=1
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/fedcl-stencil.XXXXXX")
  keep_work=0
fi

pids=() ports=() daemon_state=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  ((keep_work)) || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

mkdir -p "$work/vendors-fedcl" "$work/vendors-backend"
echo "$fedcl_lib" >"$work/vendors-fedcl/fedcl.icd"
echo "$backend" >"$work/vendors-backend/backend.icd"
loader_env() {  # loader_env fedcl|backend: the environment that makes the loader load that driver alone
  local vendors=$work/vendors-$1 library=$backend
  [ "$1" = fedcl ] && library=$fedcl_lib
  case "$loader" in
    both) echo env OCL_ICD_VENDORS="$vendors" OCL_ICD_FILENAMES="$library" ;;
    vendors) echo env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$vendors" ;;
    filenames) echo env -u OCL_ICD_VENDORS OCL_ICD_FILENAMES="$library" ;;
  esac
}
with_parent=()
if command -v setpriv >/dev/null && setpriv --pdeathsig KILL true 2>/dev/null; then
  with_parent=(setpriv --pdeathsig KILL)
fi

failures=()
fail() { failures+=("$*"); echo "stencil.problem $*"; }

signal_name() { local name; name=$(kill -l "$1" 2>/dev/null) && echo "SIG$name" || echo "signal $1"; }
# What a status from `wait` says: "exit N" or "signal SIGNAME".
describe_status() { if (($1 > 128)); then echo "signal $(signal_name $(($1 - 128)))"; else echo "exit $1"; fi; }

# --- the daemons -----------------------------------------------------------------------------------
echo "stencil.setup fedcld $fedcld"
echo "stencil.setup fedcl_lib $fedcl_lib"
echo "stencil.setup backend $backend (loader: $loader)"
echo "stencil.setup program $program ${program_args[*]}"
echo "stencil.setup work $work"
for ((k = 0; k < daemons; k++)); do
  mkdir -p "$work/pocl-cache$k"  # PoCL's kernel cache races between processes building the same source
  pin=()
  if [ -n "$cores_per_daemon" ]; then
    first=$((k * cores_per_daemon))
    pin=(taskset -c "$first-$((first + cores_per_daemon - 1))" env POCL_MAX_PTHREAD_COUNT="$cores_per_daemon"
         POCL_CPU_MAX_CU_COUNT="$cores_per_daemon")
    echo "stencil.setup daemon$k cores $first-$((first + cores_per_daemon - 1))"
  fi
  # shellcheck disable=SC2086  # daemon_args are words on purpose
  "${with_parent[@]}" "${pin[@]}" $(loader_env backend) POCL_CACHE_DIR="$work/pocl-cache$k" \
    "$fedcld" --config /dev/null --listen 127.0.0.1:0 --port-file "$work/port$k" --name "node$k" \
    --log-level "$log_level" ${daemon_args//\{d\}/$k} </dev/null >"$work/fedcld$k.log" 2>&1 &
  pids[k]=$!
  daemon_state[k]=running
done
for ((k = 0; k < daemons; k++)); do
  for ((waited = 0; waited < 600; waited++)); do
    [ -s "$work/port$k" ] && break
    kill -0 "${pids[k]}" 2>/dev/null || break
    sleep 0.1
  done
  if [ ! -s "$work/port$k" ]; then
    echo "stencil.daemon$k did not listen; its log:"
    sed 's/^/  /' "$work/fedcld$k.log"
    echo "stencil.verdict FAIL: fedcld $k did not start"
    exit 1
  fi
  ports[k]=$(cat "$work/port$k")
  echo "stencil.daemon$k pid ${pids[k]} port ${ports[k]}"
done
hosts=$(for port in "${ports[@]}"; do printf '127.0.0.1:%s,' "$port"; done)
hosts=${hosts%,}

# A process that has not ended (a zombie, or one dying, has).
running() { kill -0 "$1" 2>/dev/null && ! grep -qs '^State:[[:space:]]*[ZX]' "/proc/$1/status"; }

# Looks at every daemon: one that died is reaped and reported with its status or signal.
check_daemons() {  # check_daemons WHEN
  local k status
  for ((k = 0; k < daemons; k++)); do
    [ "${daemon_state[k]}" = running ] || continue
    if running "${pids[k]}"; then
      echo "stencil.daemon$k alive $1"
      continue
    fi
    wait "${pids[k]}"
    status=$?
    daemon_state[k]="died ($(describe_status $status)) $1"
    echo "stencil.daemon$k died $1: $(describe_status $status)"
    fail "fedcld $k died $1 ($(describe_status $status))"
  done
}

# --- through fedcl ---------------------------------------------------------------------------------
for ((r = 1; r <= runs; r++)); do
  out=$work/fedcl-run$r.out
  $(loader_env fedcl) FEDCL_HOSTS="$hosts" timeout -k 10 "$run_timeout" \
    "$program" --platform fedcl --slabs "$slabs" "${program_args[@]}" </dev/null >"$out" 2>"$work/fedcl-run$r.err"
  status=$?
  echo "stencil.fedcl.run$r $(describe_status $status) $(grep -m1 '^result ' "$out" || echo 'result none')"
  if ((status != 0)); then
    fail "the program through fedcl (run $r) ended with $(describe_status $status)"
    sed 's/^/  out: /' "$out" | tail -25
    sed 's/^/  err: /' "$work/fedcl-run$r.err" | tail -25
  fi
  sleep "$settle"  # the daemons end the session after the program is gone
  check_daemons "after fedcl run $r"
done
sed -n 's/^\(platform\|devices\|device\|seconds_per_iteration\|seconds_first_iteration\|seconds_per_iteration_after_first\|max_abs_error\|mismatches\|result\) /stencil.fedcl.&/p' "$work/fedcl-run1.out"
# The split must span the daemons (fedcl names a device "<name> @ <node>"): a backend that lists its
# device twice, or a daemon serving two platforms, would put the first slabs all on the first daemon.
used=$(sed -n 's/^device [0-9]* .* @ \(node[0-9]*\)$/\1/p' "$work/fedcl-run1.out" | sort -u | wc -l)
echo "stencil.fedcl.daemons_used $used"
if grep -q '^devices ' "$work/fedcl-run1.out" && ((used < (daemons < slabs ? daemons : slabs))); then
  fail "the fedcl run's devices are on $used of the $daemons daemons (a daemon serves several devices: --daemon-args \"--platform NAME --devices 0\")"
fi

# --- on the backend directly -----------------------------------------------------------------------
if ((direct)); then
  platform_args=()
  [ -n "$direct_platform" ] && platform_args=(--platform "$direct_platform")
  $(loader_env backend) POCL_CACHE_DIR="$work/pocl-cache-direct" timeout -k 10 "$run_timeout" \
    "$program" "${platform_args[@]}" --slabs "$slabs" "${program_args[@]}" </dev/null >"$work/direct.out" 2>"$work/direct.err"
  status=$?
  echo "stencil.direct.run $(describe_status $status) $(grep -m1 '^result ' "$work/direct.out" || echo 'result none')"
  sed -n 's/^\(platform\|devices\|device\|seconds_per_iteration\|seconds_first_iteration\|seconds_per_iteration_after_first\|max_abs_error\|mismatches\|result\) /stencil.direct.&/p' "$work/direct.out"
  if ((status != 0)); then
    fail "the program on the backend directly ended with $(describe_status $status)"
    sed 's/^/  err: /' "$work/direct.err" | tail -25
  fi
  # The lines both runs must agree on: the split, the sizes, the result and its hash.
  comparable() {
    grep -E '^(slabs|slab|elements|parent_bytes|halo_bytes|iterations|readback|release_order|max_abs_error|max_rel_error|mismatches|result_fnv1a|result|released) ' "$1" |
      sed 's/^\(slab [0-9]*\) device [0-9]*/\1/'
  }
  if diff <(comparable "$work/direct.out") <(comparable "$work/fedcl-run1.out") >"$work/compare.diff"; then
    echo "stencil.compare equal"
  else
    echo "stencil.compare differ (< direct, > fedcl):"
    sed 's/^/  /' "$work/compare.diff"
    fail "the result lines through fedcl differ from the backend's"
  fi
fi

# --- stopping the daemons --------------------------------------------------------------------------
stop_start_ms=$(( $(date +%s%N) / 1000000 ))
for ((k = 0; k < daemons; k++)); do
  [ "${daemon_state[k]}" = running ] && kill -TERM "${pids[k]}" 2>/dev/null
done
for ((k = 0; k < daemons; k++)); do
  [ "${daemon_state[k]}" = running ] || continue
  ended=0
  for ((waited = 0; waited < stop_wait * 10; waited++)); do
    running "${pids[k]}" || { ended=1; break; }
    sleep 0.1
  done
  killed=""
  if ((!ended)); then
    kill -KILL "${pids[k]}" 2>/dev/null
    killed=" (still running ${stop_wait} s after SIGTERM: SIGKILLed)"
  fi
  stop_seconds=$(( $(date +%s%N) / 1000000 - stop_start_ms ))
  stop_seconds=$(printf '%d.%03d' $((stop_seconds / 1000)) $((stop_seconds % 1000)))
  wait "${pids[k]}"
  status=$?
  daemon_state[k]="stopped: $(describe_status $status)$killed"
  echo "stencil.daemon$k stopped $(describe_status $status)$killed after ${stop_seconds} s"
  # Not a failure, but worth a look: a daemon that takes seconds to stop.
  (( ${stop_seconds%.*} >= 5 )) && [ -z "$killed" ] && echo "stencil.note fedcld $k took ${stop_seconds} s to stop after SIGTERM"
  ((status == 0)) && [ -z "$killed" ] || fail "fedcld $k did not stop cleanly on SIGTERM: $(describe_status $status)$killed"
done
pids=()

# --- the daemons' logs -----------------------------------------------------------------------------
# Every warn or error line, and anything that looks like a crash, fails the run, except the warn
# lines a correct run may leave, each with its reason:
# - "... refused: the session cannot be resumed: this fedcld has no such session ...": the program's
#   fedcl sends Goodbye at exit and the daemon closes the session; when the client's receiver thread
#   sees that close before the process is gone, it takes it for a dropped link and tries to resume
#   (runtime/connection.cpp, read_exact), which the daemon refuses. About one run in six here.
# - "fedcld runs as root, and so do its session workers ...": the test runs as root (CI does).
explained='refused: the session cannot be resumed: this fedcld has no such session|fedcld runs as root, and so do its session workers'
for ((k = 0; k < daemons; k++)); do
  log=$work/fedcld$k.log
  grep -iE '^fedcld (warn|error):|sanitizer|segmentation|core dumped|terminate called|abort' "$log" >"$work/problems$k"
  problems=$(grep -vEc "$explained" "$work/problems$k")
  known=$(grep -Ec "$explained" "$work/problems$k")
  echo "stencil.daemon$k log_lines $(wc -l <"$log") warn_or_error_lines $problems explained_warn_lines $known"
  head -n 20 "$work/problems$k" | sed "s/^/stencil.daemon$k log: /"
  ((problems == 0)) || fail "fedcld $k logged $problems warn/error lines"
  echo "stencil.daemon$k log_tail:"
  if [ -s "$log" ]; then tail -n 15 "$log" | sed 's/^/  /'; else echo "  (empty)"; fi
done

if ((${#failures[@]})); then
  ((keep_work)) || echo "stencil.note rerun with --work DIR to keep the logs and outputs"
  echo "stencil.verdict FAIL: $(IFS=';'; echo "${failures[*]}")"
  exit 1
fi
echo "stencil.verdict PASS"
exit 0
