#!/usr/bin/env bash
# Builds fedcl with AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ (FEDCL_ASAN_BUILD_DIR
# overrides) and runs the unit, end-to-end, TLS and tool tests there, and the fuzz corpora's replays: real
# fedcld daemons and the real ICD loader, every memory error or undefined behaviour fatal. Exits
# non-zero when a test fails or any process wrote a sanitizer report. scripts/test.sh runs it after
# the main suite; run scripts/setup.sh first (packages).
#
# Debug (-O0): the quickest build (the tests wait on sockets and PoCL's compiler, not on fedcl's
# code), and the best stacks. MPI, the benchmarks and the examples are left out, and only the test
# programs and what they run are built.
#
# PoCL 3.1 frees memory it did not allocate with malloc (alloc-dealloc mismatch inside libpocl), so
# that check is off; leaks are not checked (the loader and PoCL keep theirs until exit; the fuzz
# target checks fedcld's, scripts/fuzz.sh). Unmodified tools (clinfo, python3) load the sanitized
# libfedcl.so, so the runtimes are preloaded into every process. A report fails its process, and
# fails the run even where no test checks that process's end (a daemon a test kills, a tool's
# child): ASan's reports go to files (log_path), and UBSan's (which leaves log_path to the ASan
# runtime beside it) are found in the tests' output, daemons' stderr included.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FEDCL_ASAN_BUILD_DIR:-$repo/build-asan}
flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DFEDCL_BUILD_BENCH=OFF -DFEDCL_BUILD_EXAMPLES=OFF \
  -DFEDCL_BUILD_MPI=OFF -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
echo "==> building the sanitized tree into $build (log: $build/sanitize-build.log)"
if ! cmake --build "$build" -j "$(nproc)" --target fedcl_unit_tests fedcl_e2e_tests fedcl_tls_tests fedcl_tls_interop_tests \
    fedcl_tool_tests fedcld_corpus_replay fedcl_records_replay fedcl_key_list_replay fedcl_handshake_replay \
    >"$build/sanitize-build.log" 2>&1; then
  echo "sanitize.sh: the build failed; the last lines of $build/sanitize-build.log:" >&2
  tail -n 40 "$build/sanitize-build.log" >&2
  exit 1
fi

reports=$build/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
# fedcld allocates a frame's declared payload with new(std::nothrow) and closes the session when that
# fails (the corpus's replay declares terabytes): ASan returns null there, as the system would,
# with a warning in the log, not an error. handle_sigfpe=0: an integer division by zero in a kernel
# is PoCL's to step over, with a SIGFPE handler of its own (Isolation.AnIntegerDivisionByZero...);
# ASan's would end the worker as if fedcld had divided by zero.
export ASAN_OPTIONS=detect_leaks=0:alloc_dealloc_mismatch=0:verify_asan_link_order=0:allocator_may_return_null=1:handle_sigfpe=0:log_path=$reports/asan
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
echo "==> running the unit, end-to-end, TLS and tool tests and the fuzz corpora's replays under ASan and UBSan"
ctest --test-dir "$build" -j2 --timeout 300 --output-on-failure --no-tests=error \
  --test-output-size-passed 10000000 --test-output-size-failed 10000000 \
  -L 'unit|e2e|tls|tools|fuzz' -E '^fuzz\.session_bounded$' || status=$?
unset LD_PRELOAD
mapfile -t errors < <(grep -l 'ERROR: ' "$reports"/asan* 2>/dev/null || true)
if ((${#errors[@]})); then
  echo "sanitize.sh: AddressSanitizer reports (in $reports):" >&2
  for report in "${errors[@]}"; do
    echo "--- $report" >&2
    grep -v '^==[0-9]*==WARNING: AddressSanitizer failed to allocate' "$report" | head -n 60 >&2
  done
  status=1
fi
# Every test's whole output, passed ones' too.
output=$build/Testing/Temporary/LastTest.log
if grep -q ': runtime error: ' "$output"; then
  echo "sanitize.sh: UndefinedBehaviorSanitizer reports (in $output):" >&2
  grep -A 12 ': runtime error: ' "$output" | head -n 200 >&2
  status=1
fi
exit "$status"
