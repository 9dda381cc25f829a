#!/usr/bin/env bash
# Builds fedcl with AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ (FEDCL_ASAN_BUILD_DIR
# overrides) and runs the unit, end-to-end and tool tests there: real fedcld daemons and the real ICD
# loader, every memory error or undefined behaviour fatal. Run scripts/setup.sh first (packages).
#
# PoCL 3.1 frees memory it did not allocate with malloc (alloc-dealloc mismatch inside libpocl), so
# that check is off; leaks are not checked (the loader and PoCL keep theirs until exit). Unmodified
# tools (clinfo, python3) load the sanitized libfedcl.so, so the runtimes are preloaded into them.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FEDCL_ASAN_BUILD_DIR:-$repo/build-asan}
flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DFEDCL_BUILD_BENCH=OFF -DFEDCL_BUILD_EXAMPLES=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" -j "$(nproc)"
export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS=detect_leaks=0:alloc_dealloc_mismatch=0:verify_asan_link_order=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --test-dir "$build" -j2 --timeout 300 --output-on-failure -L 'unit|e2e|tools'
