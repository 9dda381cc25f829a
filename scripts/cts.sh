#!/usr/bin/env bash
# The Khronos OpenCL conformance tests (OpenCL-CTS) as fedcl's bar: builds the CTS suites out of tree,
# runs them sub-test by sub-test on the backend used directly and through fedcl (one fedcld on
# loopback serving the whole run, every fedcl round on that same daemon), and reports each sub-test's
# results side by side, above all those that pass directly and fail, time out or crash through fedcl.
#
#   scripts/cts.sh [OPTIONS] [SUITE[:PATTERN[,PATTERN...]]...]
#
# The CTS is not part of fedcl and is never committed to it: point the script at checkouts of
# OpenCL-CTS, OpenCL-Headers and SPIRV-Headers (options or environment), or at a folder of CTS
# binaries built before (--run-only --bin DIR, e.g. on a GPU machine without compilers or network).
#
# Sources and build (skipped with --run-only):
#   --cts DIR              OpenCL-CTS checkout ($CTS_SRC)
#   --cl-headers DIR       OpenCL-Headers checkout ($CTS_CL_HEADERS)
#   --spirv-headers DIR    SPIRV-Headers checkout ($CTS_SPIRV_HEADERS)
#   --cts-build DIR        the CTS's build tree ($CTS_BUILD; default: cts-build beside --cts)
#   --cl-lib-dir DIR       where the OpenCL loader (libOpenCL.so) to link is (default: found by ldconfig)
#   --jobs N               build parallelism (default 2)
#   --strip                strip the binaries gathered into --bin (for carrying them elsewhere)
#   --build-only           build and gather the binaries, run nothing
#   --run-only             run the binaries in --bin; build nothing
#   --bin DIR              the CTS binaries, one folder: test_api, test_basic, ..., and what
#                          test_compiler reads beside it (default: CTS_BUILD/bin; $CTS_BIN)
#
# What runs, and against what:
#   --backend FILE         the backend: a .icd file (the loader sees a vendors folder holding only it,
#                          OCL_ICD_VENDORS) or its library (OCL_ICD_FILENAMES, for the Khronos loader
#                          shipped with CUDA; e.g. /usr/local/nvidia/lib64/libnvidia-opencl.so.1).
#                          Default: PoCL's .icd in /etc/OpenCL/vendors
#   --fedcl-build DIR      fedcl's build tree, for the two below (default: build/ of this checkout)
#   --fedcld FILE          the daemon (default FEDCL_BUILD/bridge-daemon/fedcld)
#   --fedcl-icd FILE       fedcl's ICD: its .icd file or libfedcl.so itself, chosen as for --backend
#                          (default FEDCL_BUILD/vendors/fedcl.icd)
#   --daemon-args "ARGS"   more options for fedcld (e.g. "--log-level debug")
#   --sides LIST           direct, fedcl or direct,fedcl (default)
#   --direct-from FILE     with --sides fedcl: the direct results of another run of this script
#                          (its LOGS/raw.tsv), read when this run ends; so a direct run and the
#                          fedcl rounds can go on at the same time, or a direct run be reused
#   --direct-passes-only   with --direct-from: only the sub-tests that passed directly run through
#                          fedcl (the others cannot regress); the rest show as not run ('-')
#   --times-from FILE      with --parallel: sub-test times of an earlier run (a LOGS/raw.tsv) to
#                          start the longest first (default: the --direct-from file, if any)
#   --rounds N             fedcl rounds, one after another on the one daemon (default 2)
#   --parallel N           sub-tests at a time on each side (default 1): each still in a process of
#                          its own, all of a fedcl round through the one daemon as sessions side by
#                          side; for a host with cores and device memory to spare (a GPU node). Those
#                          that measure the whole device (alone_patterns below) run alone
#   --timeout-scale X      multiplies every sub-test's time limit (default 1; e.g. 0.5 on a fast GPU
#                          host, 2 on a loaded machine)
#   --limit SUITE:SUB=S    one sub-test's limit in seconds before scaling (repeatable)
#   --full                 the suites' full sizes: no wimpy mode, every integer_ops sub-test
#   --results FILE         the results file (default bench/results/<date>-<host>-cts-<backend>.txt)
#   --logs DIR             keep every sub-test's output there (default: a new folder under /tmp)
#   --label TEXT           what the run is, written into the results file
#
# SUITE is one of the names below; PATTERN (shell globs, comma-separated) picks its sub-tests, e.g.
# api:repeated_setup_cleanup or basic:*image*. No SUITE: all of them.
#
# Examples (more in docs/conformance.md, "The Khronos CTS"):
#   scripts/cts.sh --cts /work/cts/OpenCL-CTS --cl-headers /work/cts/OpenCL-Headers \
#                  --spirv-headers /work/cts/SPIRV-Headers --cts-build /work/cts/build
#   LD_LIBRARY_PATH=$PWD/carried/lib scripts/cts.sh --run-only --bin .cts/bin \
#       --backend /usr/local/nvidia/lib64/libnvidia-opencl.so.1 \
#       --fedcld carried/fedcld --fedcl-icd carried/libfedcl.so
#
# Every sub-test runs in a process of its own (the CTS binary given that one sub-test name) under
# `timeout`, with CL_CONFORMANCE_RESULTS_FILENAME naming a JSON file where the harness writes
# pass, fail or skip. A sub-test is "timeout" when it ran past its limit, "crash" when it died of a
# signal or exited without writing its result, "fail" when the harness says fail or the process
# exited non-zero after a pass. The sub-test lists come from the binaries (`test_X --list`).
#
# Exit status: 0 when no sub-test that passes directly fails through fedcl and the daemon never died,
# 1 otherwise, 2 for a usage or set-up error.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
prog=cts.sh

# ---------------------------------------------------------------------------------------------------
# The suites: name, CTS target (the binary's name), and the options chosen to keep them short.
#
# Quick options used (the CTS's own, never our own cuts of a test):
#   - integer_ops: only the sub-tests of the CTS's quick list (test_conformance/
#     opencl_conformance_tests_quick.csv runs "integer_* quick_*"): the quick_* variants check the
#     same operators on fewer values; the full set takes hours on a 2-core CPU device.
#   - wimpy mode (CL_WIMPY_MODE=1, the harness's --wimpy) for every suite; among these suites it
#     changes integer_ops (skips the long long_math shift test) and vectors (fewer struct layouts).
#   - basic and buffers have no quick option: they run whole, with longer limits (below).
# --full turns all of this off.
# ---------------------------------------------------------------------------------------------------
all_suites=(api atomics basic buffers commonfns compiler computeinfo events geometrics integer_ops
  mem_host_flags multiples printf profiling relationals vectors cl_khr_command_buffer cl_khr_mutable_dispatch)
declare -A quick_patterns=([integer_ops]='integer_*,quick_*')

# Time limits in seconds, before --timeout-scale. The default is long enough for every sub-test
# measured on PoCL on a 2-core VM; the overrides are those that were slower there (times directly,
# 2026-11) or are known to be slow on GPUs (repeated_setup_cleanup: ~40 s on NVIDIA directly).
default_limit=300
declare -A limits=(
  [api:repeated_setup_cleanup]=300
  # NVIDIA H200 directly, beside other sub-tests (2026-11-27): 87-115 s and 290 s.
  [basic:imagedim_pow2]=600
  [basic:imagedim_non_pow2]=900
)

# Sub-tests that measure what the whole device holds (how many contexts it takes, contexts made
# and released in a loop): with --parallel they run with no other sub-test of their side beside
# them, since on a GPU the others' contexts change their answer (seen on an H200 with 5 at a time:
# CL_OUT_OF_HOST_MEMORY from clCreateContext, directly and through fedcl alike).
alone_patterns=('multiples:context_*' 'api:repeated_setup_cleanup')
runs_alone() {   # suite subtest
  local p
  for p in "${alone_patterns[@]}"; do
    # shellcheck disable=SC2053 # a glob on purpose
    [[ $1:$2 == $p ]] && return 0
  done
  return 1
}

# ---------------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------------
usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
die() {
  echo "$prog: $*" >&2
  exit 2
}

cts_src=${CTS_SRC:-} cl_headers=${CTS_CL_HEADERS:-} spirv_headers=${CTS_SPIRV_HEADERS:-}
cts_build=${CTS_BUILD:-} bin=${CTS_BIN:-} cl_lib_dir= jobs=2 strip=0 mode=all
backend= fedcl_build=$repo/build fedcld= fedcl_icd= daemon_args= sides=direct,fedcl rounds=2
scale=1 full=0 results= logs= label= direct_from= times_from= parallel=1 direct_passes_only=0
suite_args=()
while (($#)); do
  case $1 in
    --cts) cts_src=${2:?}; shift ;;
    --cl-headers) cl_headers=${2:?}; shift ;;
    --spirv-headers) spirv_headers=${2:?}; shift ;;
    --cts-build) cts_build=${2:?}; shift ;;
    --cl-lib-dir) cl_lib_dir=${2:?}; shift ;;
    --jobs) jobs=${2:?}; shift ;;
    --strip) strip=1 ;;
    --build-only) mode=build ;;
    --run-only) mode=run ;;
    --bin) bin=${2:?}; shift ;;
    --backend) backend=${2:?}; shift ;;
    --fedcl-build) fedcl_build=${2:?}; shift ;;
    --fedcld) fedcld=${2:?}; shift ;;
    --fedcl-icd) fedcl_icd=${2:?}; shift ;;
    --daemon-args) daemon_args=${2?}; shift ;;
    --sides) sides=${2:?}; shift ;;
    --direct-from) direct_from=${2:?}; shift ;;
    --times-from) times_from=${2:?}; shift ;;
    --direct-passes-only) direct_passes_only=1 ;;
    --rounds) rounds=${2:?}; shift ;;
    --timeout-scale) scale=${2:?}; shift ;;
    --parallel) parallel=${2:?}; shift ;;
    --limit)
      [[ ${2:-} =~ ^([a-z_]+:[^=]+)=([0-9]+)$ ]] || die "--limit wants SUITE:SUBTEST=SECONDS"
      limits[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}; shift ;;
    --full) full=1 ;;
    --results) results=${2:?}; shift ;;
    --logs) logs=${2:?}; shift ;;
    --label) label=${2:?}; shift ;;
    -h | --help) usage ;;
    -*) echo "$prog: unknown option $1" >&2; usage ;;
    *) suite_args+=("$1") ;;
  esac
  shift
done
[[ $rounds =~ ^[0-9]+$ ]] || die "--rounds wants a number"
[[ $scale =~ ^[0-9]*\.?[0-9]+$ ]] || die "--timeout-scale wants a number"
[[ $parallel =~ ^[1-9][0-9]*$ ]] || die "--parallel wants a number from 1"
[[ $sides =~ ^(direct|fedcl|direct,fedcl|fedcl,direct)$ ]] || die "--sides: direct, fedcl or direct,fedcl"
run_direct=0 run_fedcl=0
[[ $sides == *direct* ]] && run_direct=1
[[ $sides == *fedcl* ]] && ((rounds > 0)) && run_fedcl=1
((run_fedcl)) || rounds=0
[[ -z $direct_from ]] || ((!run_direct)) || die "--direct-from goes with --sides fedcl"

# Absolute paths: the sub-tests run in the binaries' folder.
abspath() { [[ -z $1 || $1 = /* ]] && echo "$1" || echo "$PWD/$1"; }
cts_src=$(abspath "$cts_src") cl_headers=$(abspath "$cl_headers") spirv_headers=$(abspath "$spirv_headers")
cts_build=$(abspath "$cts_build") bin=$(abspath "$bin") fedcl_build=$(abspath "$fedcl_build")
fedcld=$(abspath "$fedcld") fedcl_icd=$(abspath "$fedcl_icd")
[[ -n $results ]] && results=$(abspath "$results")
[[ -n $logs ]] && logs=$(abspath "$logs")
[[ -n $direct_from ]] && direct_from=$(abspath "$direct_from")
[[ -n $times_from ]] || times_from=$direct_from
((!direct_passes_only)) || [[ -n $direct_from ]] || die "--direct-passes-only goes with --direct-from"
[[ -n $cts_build || -z $cts_src ]] || cts_build=$(dirname "$cts_src")/cts-build
[[ -n $bin || -z $cts_build ]] || bin=$cts_build/bin

# The suites asked for, each with its sub-test patterns ("" = every sub-test the binary lists).
suites=()
declare -A patterns=()
((${#suite_args[@]})) || suite_args=("${all_suites[@]}")
for arg in "${suite_args[@]}"; do
  name=${arg%%:*}
  [[ " ${all_suites[*]} " == *" $name "* ]] || die "unknown suite '$name' (one of: ${all_suites[*]})"
  [[ -v "patterns[$name]" ]] || suites+=("$name")
  if [[ $arg == *:* ]]; then
    patterns[$name]=${patterns[$name]:+${patterns[$name]},}${arg#*:}
  elif ((!full)); then
    patterns[$name]=${quick_patterns[$name]:-}
  else
    patterns[$name]=
  fi
done
binary_of() { echo "test_$1"; }   # api -> test_api, multiples -> test_multiples

# ---------------------------------------------------------------------------------------------------
# Build: configure the whole CTS (its CMake wants every folder) but build only the suites' targets,
# then gather the binaries, and what test_compiler reads beside itself, into one folder ($bin).
# ---------------------------------------------------------------------------------------------------
build_cts() {
  [[ -f $cts_src/CMakeLists.txt && -d $cts_src/test_conformance ]] || die "no OpenCL-CTS checkout at '$cts_src' (--cts)"
  [[ -f $cl_headers/CL/cl.h ]] || die "no OpenCL-Headers checkout at '$cl_headers' (--cl-headers)"
  [[ -f $spirv_headers/include/spirv/unified1/spirv.core.grammar.json ]] ||
    die "no SPIRV-Headers checkout at '$spirv_headers' (--spirv-headers)"
  if [[ -z $cl_lib_dir ]]; then
    cl_lib_dir=$(ldconfig -p | sed -n 's/.*libOpenCL\.so\(\.1\)\? .*=> \(.*\)\/libOpenCL.*/\2/p' | head -1)
  fi
  [[ -e $cl_lib_dir/libOpenCL.so || -e $cl_lib_dir/libOpenCL.so.1 ]] ||
    die "no libOpenCL.so in '$cl_lib_dir' (--cl-lib-dir; Debian: apt-get install ocl-icd-opencl-dev)"
  local spirv_tools=() targets=() s
  # test_compiler assembles SPIR-V test programs at build time (Debian: apt-get install spirv-tools).
  command -v spirv-as >/dev/null || die "spirv-as is missing (apt-get install spirv-tools)"
  spirv_tools=(-DSPIRV_TOOLS_DIR="$(dirname "$(command -v spirv-as)")")
  mkdir -p "$cts_build"
  echo "==> configuring the CTS ($cts_src) in $cts_build"
  # Warnings are not errors: the CTS sets -Werror, and a compiler newer than its CI's warns anew.
  cmake -S "$cts_src" -B "$cts_build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_COMPILE_WARNING_AS_ERROR=OFF \
    -DCL_INCLUDE_DIR="$cl_headers" -DCL_LIB_DIR="$cl_lib_dir" -DOPENCL_LIBRARIES=OpenCL \
    -DSPIRV_INCLUDE_DIR="$spirv_headers" "${spirv_tools[@]}" >"$cts_build/configure.log" 2>&1 ||
    { tail -n 30 "$cts_build/configure.log" >&2; die "configuring the CTS failed (log: $cts_build/configure.log)"; }
  for s in "${suites[@]}"; do targets+=("$(binary_of "$s")"); done
  echo "==> building ${targets[*]} (-j$jobs; log: $cts_build/build.log)"
  cmake --build "$cts_build" -j "$jobs" --target "${targets[@]}" >"$cts_build/build.log" 2>&1 ||
    { tail -n 40 "$cts_build/build.log" >&2; die "building the CTS failed (log: $cts_build/build.log)"; }
  mkdir -p "$bin"
  local exe dir
  for s in "${suites[@]}"; do
    exe=$(find "$cts_build/test_conformance" -type f -name "$(binary_of "$s")" -perm -u+x | head -1)
    [[ -n $exe ]] || die "the build made no $(binary_of "$s")"
    cp "$exe" "$bin/"
    ((strip)) && strip "$bin/$(basename "$exe")"
    if [[ $s == compiler ]]; then
      # Read from the binary's folder (include tests) and from the working folder (spirv_bin).
      dir=$(dirname "$exe")
      for d in includeTestDirectory secondIncludeTestDirectory spirv_bin; do
        rm -rf "${bin:?}/$d"
        cp -r "$dir/$d" "$bin/"
      done
    fi
  done
  # What was built, for the results file of a run elsewhere (--run-only).
  {
    echo "OpenCL-CTS $(git -C "$cts_src" describe --tags --always 2>/dev/null) ($(git -C "$cts_src" rev-parse HEAD 2>/dev/null)),"
    echo "OpenCL-Headers $(git -C "$cl_headers" describe --tags --always 2>/dev/null),"
    echo "SPIRV-Headers $(git -C "$spirv_headers" describe --tags --always 2>/dev/null); Release, built on $(hostname -s) $(date +%Y-%m-%d)"
  } | tr '\n' ' ' >"$bin/CTS_VERSION"
  echo "==> binaries in $bin ($(du -sh "$bin" | cut -f1))"
}

if [[ $mode != run ]]; then
  build_cts
  [[ $mode == build ]] && exit 0
fi
[[ -d $bin ]] || die "no CTS binaries at '$bin' (--bin, or build them first)"
for s in "${suites[@]}"; do
  [[ -x $bin/$(binary_of "$s") ]] || die "$bin/$(binary_of "$s") is missing"
done

# ---------------------------------------------------------------------------------------------------
# The two views of OpenCL. Each side's loader is shown one driver:
#   a .icd file   -> OCL_ICD_VENDORS=<a folder holding only that file> (Debian's ocl-icd)
#   a library     -> OCL_ICD_FILENAMES=<library> and OCL_ICD_VENDORS=<library>: the Khronos loader
#                    (CUDA's) loads the OCL_ICD_FILENAMES libraries and then every .icd of the folder
#                    OCL_ICD_VENDORS names, here none, as it is a file; Debian's ocl-icd 2.3.1 reads no
#                    OCL_ICD_FILENAMES but loads a library that OCL_ICD_VENDORS names
# The harness uses platform 0, so after each side's first sub-test the device it ran on is checked:
# through fedcl its name ends in " @ node", directly it does not (check_side_device).
# ---------------------------------------------------------------------------------------------------
if [[ -z $backend ]]; then
  for f in /etc/OpenCL/vendors/*pocl*.icd; do [[ -f $f ]] && backend=$f && break; done
  [[ -n $backend ]] || die "no PoCL .icd in /etc/OpenCL/vendors: name the backend with --backend"
fi
backend=$(abspath "$backend")
[[ -n $fedcld ]] || fedcld=$fedcl_build/bridge-daemon/fedcld
[[ -n $fedcl_icd ]] || fedcl_icd=$fedcl_build/vendors/fedcl.icd
[[ -e $backend ]] || die "no backend at $backend"
if ((run_fedcl)); then
  [[ -x $fedcld ]] || die "no fedcld at $fedcld (--fedcld or --fedcl-build)"
  [[ -e $fedcl_icd ]] || die "no fedcl ICD at $fedcl_icd (--fedcl-icd or --fedcl-build)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fedcl-cts.XXXXXX")
mkdir "$work/running"
[[ -n $logs ]] || logs=$work/logs
mkdir -p "$logs"

# loader_env NAME FILE: sets the array NAME to the env(1) prefix that shows the loader FILE alone.
loader_env() {
  local -n out=$1
  local file=$2
  if [[ $file == *.icd ]]; then
    mkdir -p "$work/vendors-$1"
    cp "$file" "$work/vendors-$1/"
    out=(env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS="$work/vendors-$1")
  else
    out=(env OCL_ICD_FILENAMES="$file" OCL_ICD_VENDORS="$file")
  fi
}
loader_env direct_env "$backend"
((run_fedcl)) && loader_env fedcl_env "$fedcl_icd"

# PoCL's kernel cache: one of the run's own (PoCL's cache races between processes, and another user
# of this machine's default cache may be building at the same time). Direct and fedcl share it.
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$work/pocl-cache}
# No core files from crashing sub-tests.
ulimit -c 0
# Wimpy mode for every suite (see the top of this file).
((full)) || export CL_WIMPY_MODE=1

# ---------------------------------------------------------------------------------------------------
# The daemon: one for the whole run, on a loopback port, its log in a file.
# ---------------------------------------------------------------------------------------------------
daemon_pid= daemon_deaths=() daemon_starts=0
start_daemon() {
  local port_file=$work/fedcld.port waited=0
  rm -f "$port_file"
  daemon_starts=$((daemon_starts + 1))
  echo "=== fedcld start $daemon_starts at $(date -Iseconds)" >>"$logs/fedcld.log"
  # shellcheck disable=SC2086 # --daemon-args is a list of options
  "${direct_env[@]}" "$fedcld" --config /dev/null --listen 127.0.0.1:0 --port-file "$port_file" \
    $daemon_args >>"$logs/fedcld.log" 2>&1 </dev/null &
  daemon_pid=$!
  while [[ ! -s $port_file ]]; do
    kill -0 "$daemon_pid" 2>/dev/null || { tail -n 20 "$logs/fedcld.log" >&2; die "fedcld exited at start"; }
    ((waited++ < 300)) || die "fedcld wrote no port file within 30 s (log: $logs/fedcld.log)"
    sleep 0.1
  done
  daemon_port=$(<"$port_file")
}
stop_daemon() {
  [[ -n $daemon_pid ]] || return 0
  kill "$daemon_pid" 2>/dev/null
  wait "$daemon_pid" 2>/dev/null
  daemon_pid=
}
# The daemon's resident and peak memory, from /proc (kB -> MiB).
daemon_memory() {
  [[ -n $daemon_pid && -r /proc/$daemon_pid/status ]] || { echo "n/a"; return; }
  awk '/^VmRSS/ {r = $2} /^VmHWM/ {h = $2}
    END {if (r == "") print "n/a (exiting)"; else printf "RSS %.0f MiB (peak %.0f MiB)", r / 1024, h / 1024}' \
    "/proc/$daemon_pid/status"
}

# ---------------------------------------------------------------------------------------------------
# Running one sub-test
# ---------------------------------------------------------------------------------------------------
raw=$logs/raw.tsv   # side suite subtest result seconds, appended as each sub-test ends
: >"$raw"

limit_of() {   # suite subtest -> seconds, scaled
  local l=${limits[$1:$2]:-$default_limit}
  awk -v l="$l" -v s="$scale" 'BEGIN {printf "%d", l * s + 0.5}'
}

# run_one SIDE SUITE SUBTEST: runs it, appends to $raw, prints a progress line.
run_one() {
  local side=$1 suite=$2 sub=$3 exe limit log json rc start end secs result
  exe=$bin/$(binary_of "$suite")
  limit=$(limit_of "$suite" "$sub")
  mkdir -p "$logs/$side/$suite"
  log=$logs/$side/$suite/$sub.log
  json=$work/result-$side-$suite-$sub.json
  rm -f "$json"
  local envp=("${direct_env[@]}")
  [[ $side == fedcl* ]] && envp=("${fedcl_env[@]}" FEDCL_HOSTS="127.0.0.1:$daemon_port")
  start=$(date +%s.%N)
  # The binary's folder is the working folder: test_compiler reads spirv_bin/ from there.
  # In the background and waited for, so that a signal to this script stops the sub-test at once
  # (on_exit kills $child): bash runs traps only between commands, and `wait` is one it leaves.
  (cd "$bin" && exec "${envp[@]}" CL_CONFORMANCE_RESULTS_FILENAME="$json" \
    timeout --kill-after=10 "$limit" "$exe" "$sub") >"$log" 2>&1 </dev/null &
  child=$!
  : >"$work/running/$child"   # for on_exit: a --parallel sub-test's shell may be gone before it
  wait "$child"
  rc=$?
  rm -f "$work/running/$child"
  child=
  end=$(date +%s.%N)
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
  local harness=
  [[ -s $json ]] && harness=$(sed -n 's/^[[:space:]]*"[^"]*": "\(pass\|fail\|skip\)".*/\1/p' "$json" | head -1)
  if ((rc == 124)) || { ((rc == 137)) && awk -v s="$secs" -v l="$limit" 'BEGIN {exit !(s >= l)}'; }; then
    result=timeout
  elif ((rc > 128)); then
    result=crash
  elif [[ -z $harness ]]; then
    result=crash          # exited without writing its result (exit(), abort in the harness, ...)
  elif [[ $harness == pass ]] && ((rc != 0)); then
    result=fail
  else
    result=$harness
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$side" "$suite" "$sub" "$result" "$secs" "$rc" >>"$raw"
  printf '  %-8s %-14s %-48s %-8s %6ss\n' "$side" "$suite" "$sub" "$result" "$secs"
}

# The sub-tests of a suite: the binary's own list, filtered by the suite's patterns.
list_subtests() {
  local suite=$1 name p keep
  local IFS=,
  local pats=(${patterns[$suite]})
  unset IFS
  (cd "$bin" && "${direct_env[@]}" "./$(binary_of "$suite")" --list 2>/dev/null) |
    sed -n 's/^\t\([A-Za-z0-9_]*\)$/\1/p' | while read -r name; do
      keep=$((${#pats[@]} == 0))
      for p in "${pats[@]}"; do
        # shellcheck disable=SC2053 # a glob on purpose
        [[ $name == $p ]] && keep=1
      done
      ((keep)) && echo "$name"
    done
}

declare -A subtests=()
total=0
for s in "${suites[@]}"; do
  subtests[$s]=$(list_subtests "$s")
  [[ -n ${subtests[$s]} ]] || die "$(binary_of "$s") --list gave no sub-test (patterns: '${patterns[$s]}')"
  total=$((total + $(wc -l <<<"${subtests[$s]}")))
done

# ---------------------------------------------------------------------------------------------------
# The results file
# ---------------------------------------------------------------------------------------------------
backend_tag=pocl
[[ $backend == *nvidia* ]] && backend_tag=nvidia
if [[ -z $results ]]; then
  mkdir -p "$repo/bench/results"
  results=$repo/bench/results/$(date +%Y-%m-%dT%H%M%S)-$(hostname -s)-cts-$backend_tag.txt
fi
cts_version() {
  if [[ -s $bin/CTS_VERSION ]]; then
    cat "$bin/CTS_VERSION"
  else
    echo "binaries from $bin (version unknown)"
  fi
}
started=$(date -Iseconds)
header() {
  echo "# fedcl OpenCL-CTS run, started $started, ended $(date -Iseconds)"
  echo "# commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD -- . ':!bench/results' 2>/dev/null || echo ' (with local changes)')"
  [[ -n $label ]] && echo "# label: $label"
  echo "# host: $(hostname)"
  echo "# machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr)"
  [[ -r /etc/os-release ]] && echo "# os: $(. /etc/os-release && echo "$PRETTY_NAME")"
  command -v nvidia-smi >/dev/null && echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
  echo "# cts: $(cts_version)"
  echo "# backend: $backend$([[ $backend_tag == pocl ]] && echo " (libpocl2 $(dpkg-query -W -f '${Version}' libpocl2 2>/dev/null || echo '?'))")"
  echo "# direct device: ${device_names[direct]:-?}$([[ -n $direct_from ]] && echo " (direct results from $direct_from)")"
  if ((run_fedcl)); then
    echo "# fedcl: $fedcld, $fedcl_icd; one fedcld for all $rounds round(s), options: --listen 127.0.0.1:0 ${daemon_args:-(defaults)}"
    echo "# fedcl device: ${device_names[fedcl1]:-?}"
  fi
  echo "# options: sides=$sides rounds=$rounds parallel=$parallel$( ((direct_passes_only)) && echo " direct-passes-only") timeout-scale=$scale default-limit=${default_limit}s $( ((full)) && echo full || echo "quick (CL_WIMPY_MODE=1; integer_ops: integer_*,quick_*)")"
  echo "# suites: ${suites[*]}"
  echo "# results: pass fail skip timeout crash, '-' not run; seconds are wall time per sub-test process"
}

declare -A device_names=()
device_name_of() {   # the device a side's first sub-test ran on, from the harness's log
  local f
  f=$(ls -t "$logs/$1"/*/*.log 2>/dev/null | head -1)
  [[ -n $f ]] && sed -n 's/^Compute Device Name = \(.*\), Compute Device Vendor.*/\1/p' "$f" | head -1
}

write_results() {
  local tmp=$results.tmp
  local cols=() r
  all=$work/all.tsv
  cp "$raw" "$all"
  if [[ -n $direct_from ]]; then
    # Only this run's sub-tests.
    awk -F'\t' 'FILENAME == ARGV[1] { want[$1 "\t" $2] = 1; next }
      $1 == "direct" && (($2 "\t" $3) in want)' "$work/order" "$direct_from" >>"$all"
    device_names[direct]=$(logs=$(dirname "$direct_from") device_name_of direct)
  fi
  ((run_direct)) || [[ -n $direct_from ]] && cols+=(direct)
  for ((r = 1; r <= rounds; r++)); do cols+=("fedcl$r"); done
  {
    header
    printf '# %s\n' "suite subtest ${cols[*]} $(printf '%s_s ' "${cols[@]}")"
    awk -F'\t' -v cols="${cols[*]}" -v order="$work/order" '
      BEGIN { n = split(cols, c, " ") }
      FILENAME == order { key[++k] = $1 "\t" $2; next }
      { res[$2 "\t" $3, $1] = $4; sec[$2 "\t" $3, $1] = $5 }
      END {
        for (i = 1; i <= k; i++) {
          split(key[i], p, "\t"); line = p[1] " " p[2]
          for (j = 1; j <= n; j++) line = line " " ((key[i], c[j]) in res ? res[key[i], c[j]] : "-")
          for (j = 1; j <= n; j++) line = line " " ((key[i], c[j]) in sec ? sec[key[i], c[j]] : "-")
          print line
        }
      }' "$work/order" "$all"
    summary "${cols[@]}"
  } >"$tmp"
  mv "$tmp" "$results"
}

# summary COLUMNS...: counts per column, then the differences that matter.
summary() {
  local cols=("$@") c
  echo "# ---- summary"
  for c in "${cols[@]}"; do
    awk -F'\t' -v c="$c" '$1 == c { n[$4]++; t++ }
      END { printf "# %-7s %4d sub-tests: %d pass, %d fail, %d skip, %d timeout, %d crash\n",
            c, t, n["pass"], n["fail"], n["skip"], n["timeout"], n["crash"] }' "$all"
  done
  ((rounds)) || return 0
  awk -F'\t' -v rounds="$rounds" '
    { res[$2 " " $3, $1] = $4; if (!(($2 " " $3) in seen)) { seen[$2 " " $3] = 1; order[++k] = $2 " " $3 } }
    END {
      for (i = 1; i <= k; i++) {
        t = order[i]; d = res[t, "direct"]; worse = ""; better = 0; skipped = ""; line = ""
        for (r = 1; r <= rounds; r++) {
          f = res[t, "fedcl" r]; line = line " r" r "=" (f == "" ? "-" : f)
          if (d == "pass" && f != "" && f != "pass" && f != "skip") worse = 1
          if (d == "pass" && f == "skip") skipped = 1
          if ((d == "fail" || d == "timeout" || d == "crash") && f == "pass") better = 1
          if (r > 1 && f != res[t, "fedcl1"] && f != "" && res[t, "fedcl1"] != "") flaky[t] = 1
        }
        if (worse) reg[++nr] = t line
        if (skipped) skp[++ns] = t line
        if (better) str[++nb] = t " direct=" d line
      }
      printf "# passes directly, fails/times out/crashes through fedcl: %d\n", nr
      for (i = 1; i <= nr; i++) printf "#   REGRESSION %s\n", reg[i]
      printf "# passes directly, skipped through fedcl: %d\n", ns
      for (i = 1; i <= ns; i++) printf "#   SKIPPED %s\n", skp[i]
      printf "# fails directly, passes through fedcl (fedcl stricter or the backend flaky): %d\n", nb
      for (i = 1; i <= nb; i++) printf "#   STRICTER %s\n", str[i]
      nf = 0; for (t in flaky) nf++
      printf "# fedcl rounds that differ from round 1: %d\n", nf
      for (i = 1; i <= k; i++) if (order[i] in flaky) printf "#   ROUNDS %s\n", order[i]
    }' "$all"
  echo "# fedcld: started $daemon_starts time(s); memory at the end: ${final_memory:-n/a}"
  local m
  for m in "${round_memory[@]}"; do echo "#   $m"; done
  if ((${#daemon_deaths[@]})); then
    echo "# fedcld DIED ${#daemon_deaths[@]} time(s):"
    for m in "${daemon_deaths[@]}"; do echo "#   DIED $m"; done
  else
    ((rounds)) && echo "# fedcld never died"
  fi
  [[ -f $logs/fedcld.log ]] &&
    echo "# fedcld log: $(grep -c '' "$logs/fedcld.log") lines, $(grep -ci 'error' "$logs/fedcld.log") mention an error"
  echo "# logs: $logs"
}

# Interrupted: still write what was measured.
final_memory= round_memory=()
child=
on_exit() {
  # timeout(1) passes the TERM on to the sub-test.
  [[ -n $child ]] && kill "$child" 2>/dev/null && wait "$child" 2>/dev/null
  # --parallel: every sub-test still running (its timeout(1), which passes the TERM on).
  local pid
  for pid in "$work"/running/*; do
    [[ -e $pid ]] && kill "${pid##*/}" 2>/dev/null
  done
  [[ -n $daemon_pid ]] && final_memory=$(daemon_memory)
  stop_daemon
  [[ -s $work/order ]] && write_results && echo "results: $results"
  [[ $logs == "$work"/* ]] || rm -rf "$work"
}
trap on_exit EXIT
trap 'echo "$prog: interrupted" >&2; exit 130' INT TERM

for s in "${suites[@]}"; do
  while read -r sub; do printf '%s\t%s\n' "$s" "$sub"; done <<<"${subtests[$s]}"
done >"$work/order"

# The order sub-tests start in. With --parallel: those that run alone first, one after another (so
# none waits for the pool to drain), then the others longest first by --times-from (so no long one
# starts last and runs on by itself); the results file keeps the suites' order.
schedule() {
  if ((direct_passes_only)); then
    awk -F'\t' 'FILENAME != "-" { if ($1 == "direct" && $4 == "pass") passed[$2 "\t" $3] = 1; next }
                 $0 in passed' "$direct_from" - <"$work/order" >"$work/order.passed"
  else
    cp "$work/order" "$work/order.passed"
  fi
  if ((parallel == 1)); then
    cat "$work/order.passed"
    return
  fi
  local s sub
  while IFS=$'\t' read -r s sub; do
    runs_alone "$s" "$sub" && printf '%s\t%s\n' "$s" "$sub"
  done <"$work/order.passed"
  while IFS=$'\t' read -r s sub; do
    runs_alone "$s" "$sub" || printf '%s\t%s\n' "$s" "$sub"
  done <"$work/order.passed" |
    awk -F'\t' 'FILENAME != "-" { k = $2 "\t" $3; if ($5 > t[k]) t[k] = $5; next }
                { printf "%s\t%s\n", ($0 in t) ? t[$0] : 0, $0 }' "${times_from:-/dev/null}" - |
    sort -t$'\t' -k1,1nr -s | cut -f2-
}
schedule >"$work/schedule"

echo "==> $total sub-tests of ${#suites[@]} suite(s); logs in $logs; results to $results"

# run_side SIDE: every sub-test of every suite, --parallel of them at a time.
run_side() {
  local side=$1 s sub finished
  local -a running=()
  local -A running_subtest=()
  echo "==> $side ($(date -Iseconds))"
  while IFS=$'\t' read -r s sub; do
    if ((parallel == 1)); then
      run_one "$side" "$s" "$sub"
      after_subtest "$side" "$s $sub"
      continue
    fi
    local room=$parallel
    runs_alone "$s" "$sub" && room=1   # the others end first
    while ((${#running[@]} >= room)); do
      wait -n -p finished "${running[@]}"
      mapfile -t running < <(printf '%s\n' "${running[@]}" | grep -vx "$finished")
      after_subtest "$side" "${running_subtest[$finished]}"
    done
    if runs_alone "$s" "$sub"; then
      run_one "$side" "$s" "$sub"
      after_subtest "$side" "$s $sub"
      continue
    fi
    run_one "$side" "$s" "$sub" &
    running+=($!)
    running_subtest[$!]="$s $sub"
  done <"$work/schedule"
  while ((${#running[@]})); do
    wait -n -p finished "${running[@]}"
    mapfile -t running < <(printf '%s\n' "${running[@]}" | grep -vx "$finished")
    after_subtest "$side" "${running_subtest[$finished]}"
  done
}

# after_subtest SIDE SUBTEST: a daemon that died is noted and replaced (with --parallel, SUBTEST is
# the one that ended when the death was seen); the side's device is checked once.
after_subtest() {
  local side=$1 subtest=$2
  if [[ $side == fedcl* ]] && ! kill -0 "$daemon_pid" 2>/dev/null; then
    wait "$daemon_pid" 2>/dev/null
    local st=$?
    daemon_deaths+=("during $side $subtest (exit status $st, $(date -Iseconds)); restarted")
    echo "!!! fedcld died during $side $subtest (exit status $st); starting another" >&2
    daemon_pid=
    start_daemon
  fi
  [[ -n ${device_names[$side]:-} ]] || check_side_device "$side"
}

# check_side_device SIDE: the device the side's first sub-test ran on must be the side's own.
check_side_device() {
  local side=$1 name log
  log=$(ls -t "$logs/$side"/*/*.log | head -1)
  name=$(device_name_of "$side")
  if [[ -z $name ]]; then
    tail -n 15 "$log" >&2
    die "$side: the CTS found no OpenCL device ($log); check --backend/--fedcl-icd and the loader"
  elif [[ $side == fedcl* && $name != *" @ "* ]]; then
    die "$side: the CTS ran on '$name', not on a fedcl device: the loader shows another platform first"
  elif [[ $side == direct && $name == *" @ "* ]]; then
    die "direct: the CTS ran on '$name', a fedcl device: --backend must name the backend itself"
  fi
  device_names[$side]=$name
}

((run_direct)) && run_side direct
if ((run_fedcl)); then
  start_daemon
  echo "==> fedcld pid $daemon_pid on 127.0.0.1:$daemon_port (log: $logs/fedcld.log)"
  for ((r = 1; r <= rounds; r++)); do
    run_side "fedcl$r"
    round_memory+=("after round $r: $(daemon_memory)")
  done
  final_memory=$(daemon_memory)
fi

write_results
trap - EXIT
stop_daemon
echo "results: $results"
sed -n '/^# ---- summary/,$p' "$results"
[[ $logs == "$work"/* ]] || rm -rf "$work"
if grep -q '^#   REGRESSION\|^#   DIED' "$results"; then exit 1; fi
exit 0
