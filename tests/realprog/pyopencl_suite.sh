#!/usr/bin/env bash
# PyOpenCL's own test suite, unmodified, run on PoCL directly and then on the same device through
# fedcl. Fails when a test that passes on PoCL does not pass through fedcl, unless
# pyopencl_known_differences.txt lists it with a reason.
#
#   tests/realprog/pyopencl_suite.sh BUILD_DIR [TEST_FILE...]
#
# The tests come from the PyOpenCL source distribution of the installed version (Debian's
# python3-pyopencl), downloaded once from PyPI into BUILD_DIR/realprog/ and never committed.
# The default files cover the whole host API surface PyOpenCL wraps (test_wrapper.py), copies and
# rectangular copies (test_enqueue_copy.py), struct arguments, and a library of generated kernels
# (test_clrandom.py) in about 40 s per run on two quiet cores: the per-commit suite. The ctest
# realprog_pyopencl_full (label long) adds the math library (test_clmath.py, 100 s per run: host
# reference computations, kernels like test_clrandom's), test_array.py and test_algorithm.py (six and
# seven minutes per run on PoCL alone). Name files to run them, e.g.
#   tests/realprog/pyopencl_suite.sh build test_array.py test_algorithm.py
# Per-file logs stay in BUILD_DIR/realprog/pyopencl-results/{pocl,fedcl}/ for triage.
# PYOPENCL_FILE_TIMEOUT (seconds, default 900) bounds each file; a hang fails the tests not run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
. "$here/fedcl_env.sh"
build_dir=${1:-}
shift
files=("$@")
((${#files[@]})) || files=(test_wrapper.py test_enqueue_copy.py test_arrays_in_structs.py test_clrandom.py)
file_timeout=${PYOPENCL_FILE_TIMEOUT:-900}

# Missing prerequisites are a skip (CTest's SKIP_RETURN_CODE 77), not a pass.
skip() {
  echo "SKIP: $*" >&2
  exit 77
}

# The tests of exactly the installed PyOpenCL.
version=$($python -c 'import pyopencl; print(pyopencl.VERSION_TEXT)') || skip "$python cannot import pyopencl"
$python -m pytest --version >/dev/null 2>&1 || skip "$python has no pytest (apt-get install python3-pytest)"
realprog_init "$build_dir"
cache="$build_dir/realprog"
tests="$cache/pyopencl-$version/test"
if [ ! -d "$tests" ]; then
  mkdir -p "$cache"
  # --no-build-isolation: pip only reads the sdist's metadata, with the system's build tools.
  timeout 300 $python -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation \
    "pyopencl==$version" -d "$cache" || skip "could not download the pyopencl $version sdist from PyPI"
  tar -xzf "$cache/pyopencl-$version.tar.gz" -C "$cache" "pyopencl-$version/test" ||
    realprog_fail "the sdist has no test/ folder"
fi

results="$cache/pyopencl-results"
rm -rf "$results"

# run NAME PLATFORM_SUBSTRING ENV_WRAPPER: every file in its own pytest, verbose, so that a log
# shows each outcome as it happens and a killed run still tells which tests finished.
run_suite() {
  local name=$1 platform=$2 wrapper=$3 file status
  mkdir -p "$results/$name"
  for file in "${files[@]}"; do
    status=0
    (cd "$tests" && $wrapper timeout "$file_timeout" env PYOPENCL_TEST="$platform" \
      XDG_CACHE_HOME="$REALPROG_TMP/cache-$name" POCL_CACHE_DIR="$pocl_kcache" \
      $python -m pytest -v -p no:cacheprovider "$file") >"$results/$name/$file.log" 2>&1 || status=$?
    echo "$name $file: pytest exit status $status ($(tail -n 1 "$results/$name/$file.log"))"
  done
}

# PyOpenCL's binary cache starts empty in each run (XDG_CACHE_HOME); PoCL keeps its usual kernel
# cache, which fedcld, started with the caller's environment, shares.
pocl_kcache="${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pocl/kcache}"
run_suite pocl portable realprog_pocl_env
run_suite fedcl fedcl realprog_fedcl_env
realprog_daemon_alive || realprog_fail "fedcld died during the suite"

$python "$here/pyopencl_compare.py" "$results" "$here/pyopencl_known_differences.txt" \
  "$here/pyopencl_pocl_failures.txt" "${files[@]}"
