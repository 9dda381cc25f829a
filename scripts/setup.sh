#!/usr/bin/env bash
# Installs what fedcl needs from Debian 12 and builds it into build/ (FEDCL_BUILD_DIR overrides).
# Safe to run again: packages already present are not fetched, and the build only redoes what changed.
#
#   setup.sh [--demo] [--targets "TARGET..."] [--tests all|release|sanitized]
#
# --demo installs only what the demo needs (the build's tools and libraries, PoCL, clinfo, python3:
# 16 of the 36 packages the tests need), and configures without the tests where GoogleTest
# is not installed. --targets builds only the named cmake targets (demo.sh needs a few; test.sh and
# CI, the default, everything). apt's and the build's output go to build/setup.log; the terminal
# shows a progress bar per target (on a non-terminal, a line every 10%). --tests picks the tests the
# tree has (tests/CMakeLists.txt, FEDCL_TESTS): test.sh's release tree leaves the sanitized set's to
# the sanitized trees.
set -euo pipefail

targets=()
demo=0
tests=all
while (($#)); do
  case $1 in
    --demo) demo=1; shift ;;
    --targets) [[ $# -ge 2 ]] || { echo "setup.sh: --targets needs a list of targets" >&2; exit 2; }
      read -ra targets <<<"$2"; shift 2 ;;
    --tests) [[ $# -ge 2 ]] || { echo "setup.sh: --tests needs all, release or sanitized" >&2; exit 2; }
      tests=$2; shift 2 ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FEDCL_BUILD_DIR:-$repo/build}
log=$build/setup.log

# What the build needs and the demo runs: build tools and libraries (libsystemd-dev: fedcld's
# journal entries; libssl-dev: TLS on fedcl's links), PoCL as the OpenCL backend, clinfo, python3.
demo_packages=(
  cmake make g++ pkg-config
  opencl-headers ocl-icd-opencl-dev ocl-icd-libopencl1
  capnproto libcapnp-dev libuv1-dev libsodium-dev libssl-dev libsystemd-dev
  pocl-opencl-icd clinfo python3
)
# And what the tests run (openssl: the command the TLS tests make their certificates with and test
# fedcl's records against; gnutls-bin: gnutls-cli and gnutls-serv, for the same interoperability
# tests; dpkg-dev: cpack's package dependencies; lintian: the packages checked against Debian's
# rules; scdoc: the manual pages; systemd: systemd-analyze verify of the unit; prometheus: promtool
# and a Prometheus that check and scrape fedcld --metrics; clang and its runtime: the libFuzzer
# targets, scripts/fuzz.sh; python3-matplotlib: bench/plot.py; Open MPI: the MPI commands).
test_packages=(
  openssl gnutls-bin
  googletest libgtest-dev
  clpeak python3-pyopencl python3-numpy python3-pytest python3-pip python3-matplotlib
  iproute2
  dpkg-dev lintian scdoc systemd prometheus
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev
)
packages=("${demo_packages[@]}")
((demo)) || packages+=("${test_packages[@]}")

step() { printf '==> %s\n' "$*"; }

# Runs a command with its output in the log; on failure shows the end of the log and stops.
quietly() {
  if ! "$@" >>"$log" 2>&1; then
    echo "setup.sh: '$*' failed; the last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

missing_packages() {
  local package
  for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}\n' "$package" 2>/dev/null | grep -q '^install ok installed$' || echo "$package"
  done
}

mkdir -p "$build"
: >"$log"

mapfile -t missing < <(missing_packages)
if ((${#missing[@]})); then
  step "installing ${#missing[@]} Debian packages: ${missing[*]}"
  if ((EUID != 0)); then
    echo "setup.sh: installing packages needs root (run it with sudo)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  quietly apt-get update
  quietly apt-get install -y --no-install-recommends "${packages[@]}"
else
  step "Debian packages: all ${#packages[@]} present"
fi

# Builds one target (or all) with its output in the log, drawing how far it is. CMake's Makefiles
# print "[ 42%] Building ..." before each step, counted over that target's own steps: one make per
# target keeps each bar going from 0 to 100 (one make for several targets starts again at every
# target). Ninja's "[7/90]" is read too. The build's exit status is the function's.
build_with_progress() {
  local target=$1 tty=0
  [[ -t 1 ]] && tty=1
  local args=(--build "$build" -j "$(nproc)")
  [[ $target == all ]] || args+=(--target "$target")
  echo "--- cmake ${args[*]}" >>"$log"
  set +o pipefail
  cmake "${args[@]}" 2>&1 | tee -a "$log" | {
    local line percent=0 printed=-1 width=24 what=
    while IFS= read -r line; do
      if [[ $line =~ ^\[\ *([0-9]+)%\]\ (.*)$ ]]; then
        percent=${BASH_REMATCH[1]} what=${BASH_REMATCH[2]}
      elif [[ $line =~ ^\[([0-9]+)/([0-9]+)\]\ (.*)$ ]]; then
        percent=$((100 * BASH_REMATCH[1] / BASH_REMATCH[2])) what=${BASH_REMATCH[3]}
      else
        continue
      fi
      if ((tty)); then
        local filled=$((percent * width / 100)) bar
        printf -v bar '%*s' "$filled" ''
        bar=${bar// /#}
        printf -v bar '%-*s' "$width" "$bar"
        what=${what##* }  # the file or target, not "Building CXX object"
        printf '\r\033[K    %-22s [%s] %3d%%  %.16s' "$target" "${bar// /.}" "$percent" "${what##*/}"
      elif ((percent >= printed + 10 || (percent == 100 && printed < 100))); then
        printf '    %s: %d%%\n' "$target" "$percent"
        printed=$percent
      fi
    done
    ((tty)) && printf '\r\033[K    %-22s %s\n' "$target" "$([[ $percent == 100 ]] && echo done || echo "stopped at $percent%")"
    true
  }
  local status=${PIPESTATUS[0]}
  set -o pipefail
  return "$status"
}

step "building fedcl into $build (${targets[*]:-all targets}; log: $log)"
# The tests need GoogleTest, which the demo's packages leave out; the full set-up always has them.
with_tests=ON
if ((demo)) && ! dpkg-query -W -f='${Status}\n' libgtest-dev 2>/dev/null | grep -q '^install ok installed$'; then
  with_tests=OFF
fi
quietly cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFEDCL_BUILD_TESTS=$with_tests -DFEDCL_TESTS="$tests"
for target in "${targets[@]:-all}"; do
  if ! build_with_progress "$target"; then
    echo "setup.sh: building $target failed; the last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
done
if ((${#targets[@]})); then
  step "built: ${targets[*]} in $build"
else
  step "built: $build/icd/libfedcl.so, $build/bridge-daemon/fedcld, $build/examples/"
fi
