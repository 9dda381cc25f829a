#!/usr/bin/env bash
# Builds fedcl with a sanitizer and runs tests there: real fedcld daemons and the real ICD loader,
# every report fatal. Exits non-zero when a test fails or any process wrote a sanitizer report.
# scripts/test.sh builds both trees beside the main suite and runs their tests after it; run
# scripts/setup.sh first (packages).
#
#   scripts/sanitize.sh [address|thread] [build|test]
#
# build: only the build; test: only the tests, on a tree built before; both, one after the other,
# when left out.
#
# address (the default): AddressSanitizer and UndefinedBehaviorSanitizer, into build-asan/
# (FEDCL_ASAN_BUILD_DIR overrides); the unit, end-to-end, TLS and tool tests, and the fuzz corpora's
# replays, with the driver kept to TCP (FEDCL_LOCAL=off). thread: ThreadSanitizer, into build-tsan/
# (FEDCL_TSAN_BUILD_DIR), the driver on its daemons' local sockets (FEDCL_LOCAL=on); the unit tests (but
# the collectives' plans, one thread's) and the end-to-end tests. Both trees define only the tests of
# this set (FEDCL_TESTS=sanitized). A race in fedcl's code is fixed, never suppressed;
# scripts/tsan.supp holds only what lies wholly inside third-party code, each entry with its reason.
#
# Debug builds (the tests wait on sockets and PoCL's compiler, not on fedcl's code, and the stacks are
# the best); ThreadSanitizer's at -O1, which it needs to be fast enough. MPI, the benchmarks and the
# examples are left out, and only the test programs and what they run are built.
#
# ASan: PoCL 3.1 frees memory it did not allocate with malloc (alloc-dealloc mismatch inside libpocl),
# so that check is off; leaks are not checked (the loader and PoCL keep theirs until exit; the fuzz
# target checks fedcld's, scripts/fuzz.sh). Unmodified tools (clinfo, python3) load the sanitized
# libfedcl.so, so the runtimes are preloaded into every process. A report fails its process, and
# fails the run even where no test checks that process's end (a daemon a test kills, a tool's
# child): reports go to files (log_path), and UBSan's (which leaves log_path to the ASan runtime
# beside it) are found in the tests' output, daemons' stderr included.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-address}
steps=${2:-build test}
case $steps in build|test|"build test") ;; *) echo "usage: $0 [address|thread] [build|test]" >&2; exit 2 ;; esac
case $mode in
address)
  build=${FEDCL_ASAN_BUILD_DIR:-$repo/build-asan}
  sanitizers=address,undefined
  flags="-fsanitize=$sanitizers -fno-omit-frame-pointer"
  runtimes="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
  targets=(fedcl_unit_tests fedcl_e2e_tests fedcl_tls_tests fedcl_tls_interop_tests fedcl_tool_tests
           fedcld_corpus_replay fedcl_records_replay fedcl_key_list_replay fedcl_handshake_replay)
  labels='unit|e2e|tls|tools|fuzz'
  left_out=()
  excluded='^fuzz\.session_bounded$'  # the long fuzz run: scripts/fuzz.sh
  report_marker='ERROR: '
  local_path=off
  name="ASan and UBSan" ;;
thread)
  build=${FEDCL_TSAN_BUILD_DIR:-$repo/build-tsan}
  sanitizers=thread
  flags="-fsanitize=thread -O1 -fno-omit-frame-pointer"
  # Not preloaded: every program these tests run is built with it, and ctest itself (which forks
  # from threads) hangs under it.
  runtimes=
  targets=(fedcl_unit_tests fedcl_e2e_tests)
  labels='unit|e2e'
  # Programs of the sanitized set that this tree leaves out (TLS, tools, fuzz replays: ASan's run has them).
  left_out=(fedcl_tls_tests fedcl_tls_interop_tests fedcl_tool_tests)
  # Its client is a fork of the threaded test process that starts OpenCL in the child, which
  # ThreadSanitizer does not follow ("dup thread with used id"); the ASan run keeps it.
  # CollectivePlan.*: the collectives' plans run on host vectors in one thread, two minutes of this
  # tree's time for no thread to check; the ASan tree runs them.
  excluded='^(Resume\.AClientThatSaidGoodbyeAtExitDoesNotResume|CollectivePlan\..*)$'
  report_marker='WARNING: ThreadSanitizer'
  local_path=on
  name=ThreadSanitizer ;;
*) echo "usage: $0 [address|thread] [build|test]" >&2; exit 2 ;;
esac
if [[ $steps = *build* ]]; then
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DFEDCL_BUILD_BENCH=OFF -DFEDCL_BUILD_EXAMPLES=OFF \
    -DFEDCL_BUILD_MPI=OFF -DFEDCL_TESTS=sanitized -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$sanitizers" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=$sanitizers" >/dev/null
  echo "==> building the $name tree into $build (log: $build/sanitize-build.log)"
  if ! cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$build/sanitize-build.log" 2>&1; then
    echo "sanitize.sh: the build failed; the last lines of $build/sanitize-build.log:" >&2
    tail -n 40 "$build/sanitize-build.log" >&2
    exit 1
  fi
fi
[[ $steps = *test* ]] || exit 0

# A test program of the sanitized set that the targets above miss would drop its tests from every
# run without a word (ctest lists it as PROGRAM_NOT_BUILT, with no label for -L to pick): refused.
missing=()
while read -r program; do
  [[ " ${left_out[*]} " == *" $program "* ]] || missing+=("$program")
done < <(ctest --test-dir "$build" -N 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: \(.*\)_NOT_BUILT$/\1/p' | sort -u)
if ((${#missing[@]})); then
  echo "sanitize.sh: not built, so their tests would not run: ${missing[*]} (add them to the targets)" >&2
  exit 1
fi

reports=$build/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
# fedcld allocates a frame's declared payload with new(std::nothrow) and closes the session when that
# fails (the corpus's replay declares terabytes): ASan returns null there, as the system would,
# with a warning in the log, not an error. handle_sigfpe=0: an integer division by zero in a kernel
# is PoCL's to step over, with a SIGFPE handler of its own (Isolation.AnIntegerDivisionByZero...);
# ASan's would end the worker as if fedcld had divided by zero.
export ASAN_OPTIONS=detect_leaks=0:alloc_dealloc_mismatch=0:verify_asan_link_order=0:allocator_may_return_null=1:handle_sigfpe=0:log_path=$reports/asan
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# die_after_fork=0: fedcld forks its session workers, and tests fork clients, from threaded processes
# (each child execs or only does what a fork child may). report_thread_leaks=0: libfedcl's
# connection threads live as long as the process, by design (the runtime is never torn down while
# an application may still call in); a thread leak is no race. ignore_noninstrumented_modules=1: the
# libc calls of libraries built without ThreadSanitizer (PoCL, libuv) are not checked, which they
# cannot be soundly: libuv closes descriptors with syscall(SYS_close) and PoCL makes its files with
# mkostemps, neither intercepted, so a PoCL thread's close of a number libuv had used read as a race
# (three reports in one run once every session compiled its kernels: pocl_write_file against the
# worker's loop). fedcl's own code stays checked; only calls made from those libraries are skipped.
export TSAN_OPTIONS=log_path=$reports/tsan:second_deadlock_stack=1:die_after_fork=0:report_thread_leaks=0:ignore_noninstrumented_modules=1:suppressions=$repo/scripts/tsan.supp
[[ -z $runtimes ]] || export LD_PRELOAD=$runtimes
# The same node's path each way, at no extra cost (docs/design-decisions.md, "Same node"): the tests'
# daemons are on the client's host, where a plain run takes the local path where it can.
export FEDCL_LOCAL=$local_path
# The tests wait more than they compute (daemons' time limits, killed peers, stalled links): three
# per core keep the cores busy; at most 8, since each starts daemons with a PoCL thread per core.
jobs=${FEDCL_TEST_JOBS:-$(($(nproc) * 3 > 8 ? 8 : $(nproc) * 3))}
status=0
echo "==> running the tests labelled ${labels//|/, } under $name"
ctest --test-dir "$build" -j"$jobs" --timeout 300 --output-on-failure --no-tests=error \
  --test-output-size-passed 10000000 --test-output-size-failed 10000000 \
  -L "$labels" -E "$excluded" || status=$?
unset LD_PRELOAD TSAN_OPTIONS
mapfile -t errors < <(grep -l "$report_marker" "$reports"/* 2>/dev/null || true)
if ((${#errors[@]})); then
  echo "sanitize.sh: $name reports (in $reports):" >&2
  for report in "${errors[@]}"; do
    echo "--- $report" >&2
    grep -v '^==[0-9]*==WARNING: AddressSanitizer failed to allocate' "$report" | head -n 80 >&2
  done
  status=1
fi
# Every test's whole output, passed ones' too.
output=$build/Testing/Temporary/LastTest.log
if [[ $mode = address ]] && grep -q ': runtime error: ' "$output"; then
  echo "sanitize.sh: UndefinedBehaviorSanitizer reports (in $output):" >&2
  grep -A 12 ': runtime error: ' "$output" | head -n 200 >&2
  status=1
fi
exit "$status"
