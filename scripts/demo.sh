#!/usr/bin/env bash
# Installs and builds fedcl (scripts/setup.sh), starts a local fedcld on loopback, and runs two
# unmodified OpenCL programs through fedcl: clinfo, and the NBody example checked against the CPU.
# Arguments go to nbody, e.g. `demo.sh -n 8192 -s 10`.
set -euo pipefail

scripts=$(cd "$(dirname "$0")" && pwd)
build=${FEDCL_BUILD_DIR:-$(dirname "$scripts")/build}
bash "$scripts/setup.sh"

bash "$scripts/with-fedcld.sh" bash -c '
  set -e
  echo "==> clinfo through fedcl (FEDCL_HOSTS=$FEDCL_HOSTS)"
  clinfo
  echo
  echo "==> NBody through fedcl"
  "$@"' demo "$build/examples/nbody" "$@"
echo "==> demo passed"
