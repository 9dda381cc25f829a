#!/usr/bin/env bash
# Builds one of the fuzz targets (tests/fuzz/CMakeLists.txt lists them) with clang's libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer into build-fuzz/ (FEDCL_FUZZ_BUILD_DIR overrides),
# then fuzzes it from its committed corpus. The first argument may name the target: session (the
# default: fedcld's frames, handshakes and requests), records (fedcl's TLS record layer), key_list
# (fedcld's key list parser), handshake (the client's side of the handshake). The other arguments go
# to libFuzzer, e.g.
#   scripts/fuzz.sh -max_total_time=60            the session target's bounded run in the test suite (ctest -L fuzz)
#   scripts/fuzz.sh -runs=1000000                 a long run of the session target
#   scripts/fuzz.sh records -runs=1000000         a long run of the record layer's
#   scripts/fuzz.sh --merge                       adds to the session target's corpus (tests/fuzz/corpus) the
#                                                 inputs of build-fuzz/corpus-new that reach code it does not
#                                                 (-merge=1, by edges)
#   scripts/fuzz.sh handshake --merge             the same for another target: corpus-NAME, corpus-new-NAME
# Inputs a run finds go to build-fuzz/corpus-new (corpus-new-NAME), not into the repository. Needs
# scripts/setup.sh first.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FEDCL_FUZZ_BUILD_DIR:-$repo/build-fuzz}
target=session
case "${1:-}" in
  session|records|key_list|handshake) target=$1; shift ;;
esac
if [ "$target" = session ]; then
  binary=fedcld_session_fuzzer corpus=$repo/tests/fuzz/corpus found=$build/corpus-new
else
  binary=fedcl_${target}_fuzzer corpus=$repo/tests/fuzz/corpus-${target//_/-} found=$build/corpus-new-${target//_/-}
fi
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFEDCL_BUILD_FUZZ=ON \
  -DFEDCL_BUILD_BENCH=OFF -DFEDCL_BUILD_EXAMPLES=OFF -DFEDCL_BUILD_MPI=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" -j2 --target "$binary" >/dev/null
mkdir -p "$found"
# PoCL frees memory it did not allocate with malloc (as in scripts/sanitize.sh). A frame's payload is
# checked against its request before fedcld takes memory for it, and no more than a session may hold
# (the session target's daemons: 64 MiB) is taken at all; what is taken comes from new(std::nothrow),
# and the session ends when it cannot be had (so does the client, for a transfer chunk): let ASan
# return null there, as the system would, instead of reporting the request itself. Past 256 MiB ASan
# says no (max_allocation_size_mb), as a node short of memory would.
# handle_abort: ASan reports an abort (an uncaught exception, a failed assertion, a target's failed
# check) with its stack, and libFuzzer saves the input (session_fuzzer.cpp keeps PoCL's LLVM from
# taking SIGABRT over).
export ASAN_OPTIONS=${ASAN_OPTIONS:-alloc_dealloc_mismatch=0:allocator_may_return_null=1:max_allocation_size_mb=256:handle_abort=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
cd "$build"
# libFuzzer's own malloc limit is lifted (ASan's above decides) and RSS stays bounded.
if [ "${1:-}" = --merge ]; then
  shift
  exec "$build/tests/fuzz/$binary" -merge=1 -use_counters=0 -timeout=30 -rss_limit_mb=4096 -malloc_limit_mb=1048576 \
    "$@" "$corpus" "$found"
fi
exec "$build/tests/fuzz/$binary" -timeout=30 -rss_limit_mb=4096 -malloc_limit_mb=1048576 \
  -print_final_stats=1 "$@" \
  "$found" "$corpus"
