#!/usr/bin/env bash
# Builds fedcld's fuzz target (tests/fuzz/session_fuzzer.cpp) with clang's libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer into build-fuzz/ (FEDCL_FUZZ_BUILD_DIR overrides), then fuzzes from
# the committed corpus. Arguments go to libFuzzer, e.g.
#   scripts/fuzz.sh -max_total_time=60     the bounded run of the test suite (ctest -L fuzz)
#   scripts/fuzz.sh -runs=1000000          a long run
#   scripts/fuzz.sh --merge                adds to tests/fuzz/corpus the inputs of build-fuzz/corpus-new
#                                          that reach code the corpus does not (-merge=1, by edges)
# Inputs it finds go to build-fuzz/corpus-new, not into the repository. Needs scripts/setup.sh first.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FEDCL_FUZZ_BUILD_DIR:-$repo/build-fuzz}
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFEDCL_BUILD_FUZZ=ON \
  -DFEDCL_BUILD_BENCH=OFF -DFEDCL_BUILD_EXAMPLES=OFF -DFEDCL_BUILD_MPI=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" -j2 --target fedcld_session_fuzzer >/dev/null
mkdir -p "$build/corpus-new"
# PoCL frees memory it did not allocate with malloc (as in scripts/sanitize.sh). fedcld asks for a
# declared payload's memory with new(std::nothrow) and closes the session when it cannot be had:
# let ASan return null there, as the system would, instead of reporting the request itself. Past
# 256 MiB ASan says no (max_allocation_size_mb), as a node short of memory would: the target's
# daemons hold at most 64 MiB a session, so nothing a session may legitimately hold is refused,
# while each declared payload of gigabytes cost ASan a shadow of an eighth of it, written when
# allocated and again when freed (90% of the run's time, 130 inputs/s instead of 2,000+, and the
# peak RSS of 2.1 GB that libFuzzer's "rss:" reports: ASan's shadow, given back once freed).
# handle_abort: ASan reports an abort (an uncaught exception, a failed assertion) with its stack, and
# libFuzzer saves the input (session_fuzzer.cpp keeps PoCL's LLVM from taking SIGABRT over).
export ASAN_OPTIONS=${ASAN_OPTIONS:-alloc_dealloc_mismatch=0:allocator_may_return_null=1:max_allocation_size_mb=256:handle_abort=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
cd "$build"
# A hostile frame may declare a payload of gigabytes, which an open fedcld allocates before the
# bytes come (bounding that is the memory limits' work): the malloc limit is lifted, RSS stays bounded.
if [ "${1:-}" = --merge ]; then
  shift
  exec "$build/tests/fuzz/fedcld_session_fuzzer" -merge=1 -use_counters=0 -timeout=30 -rss_limit_mb=4096 -malloc_limit_mb=1048576 \
    "$@" "$repo/tests/fuzz/corpus" "$build/corpus-new"
fi
exec "$build/tests/fuzz/fedcld_session_fuzzer" -timeout=30 -rss_limit_mb=4096 -malloc_limit_mb=1048576 \
  -print_final_stats=1 "$@" \
  "$build/corpus-new" "$repo/tests/fuzz/corpus"
