#!/usr/bin/env bash
# Installs what fedcl needs from Debian 12 and builds it into build/ (FEDCL_BUILD_DIR overrides).
# Safe to run again: packages already present are not fetched, and the build only redoes what changed.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FEDCL_BUILD_DIR:-$repo/build}
log=$build/setup.log

# Build tools and libraries, PoCL as the OpenCL backend, and what the tests and the demo run
# (dpkg-dev: cpack's package dependencies; lintian: the packages checked against Debian's rules;
# scdoc: the manual pages; systemd: systemd-analyze verify of the unit; libsystemd-dev: fedcld's
# journal entries; prometheus: promtool and a Prometheus that check and scrape fedcld --metrics;
# clang and its runtime: the libFuzzer targets, scripts/fuzz.sh; python3-matplotlib: bench/plot.py;
# libssl-dev: TLS on fedcl's links, and openssl, the command the TLS tests make their certificates
# with and test fedcl's records against; gnutls-bin: gnutls-cli and gnutls-serv, for the same
# interoperability tests).
packages=(
  cmake make g++ pkg-config
  opencl-headers ocl-icd-opencl-dev ocl-icd-libopencl1
  capnproto libcapnp-dev libuv1-dev libsodium-dev libssl-dev openssl gnutls-bin
  pocl-opencl-icd
  googletest libgtest-dev
  clinfo clpeak python3-pyopencl python3-numpy python3-pytest python3-pip python3-matplotlib
  iproute2
  dpkg-dev lintian scdoc systemd libsystemd-dev prometheus
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev
)

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

step "building fedcl into $build (log: $log)"
quietly cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
quietly cmake --build "$build" -j "$(nproc)"
step "built: $build/icd/libfedcl.so, $build/bridge-daemon/fedcld, $build/examples/"
