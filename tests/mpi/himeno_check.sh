#!/usr/bin/env bash
# The Himeno example in its three versions gives the same grid, bit for bit, and the same residual:
# the serial one on the backend itself (PoCL) and through fedcl, the hand-overlapped one and the one
# with fedcl's MPI commands on 2 and 3 ranks (tests/mpi/run_mpi.sh, a daemon per rank).
#
#   tests/mpi/himeno_check.sh BUILD_DIR
set -euo pipefail

build=$1
here=$(cd "$(dirname "$0")" && pwd)
size=(-i 40 -j 17 -k 19 -n 12)  # planes split unevenly over 3 ranks
# A process started without mpirun is an MPI job of one (singleton); as root Open MPI wants consent.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

result() { grep -o 'gosa [^ ]* checksum [0-9a-f]*' <<<"$1" || { echo "no result in:" >&2; echo "$1" >&2; return 1; }; }

reference=$(result "$(env -u OCL_ICD_VENDORS FEDCL_EXAMPLE_PLATFORM=Portable "$build/examples/himeno_serial" "${size[@]}")")
echo "serial on the backend: $reference"
failures=0
check() {
  local what=$1 got
  shift
  got=$(result "$(FEDCL_EXAMPLE_PLATFORM=fedcl "$@")")
  echo "$what: $got"
  [[ $got == "$reference" ]] || { echo "MISMATCH: $what" >&2; failures=$((failures + 1)); }
}
check "serial through fedcl" "$here/run_mpi.sh" "$build" 1 "$build/examples/himeno_serial" "${size[@]}"
for ranks in 2 3; do
  check "hand-overlapped, $ranks ranks" "$here/run_mpi.sh" "$build" "$ranks" "$build/examples/himeno_overlap" "${size[@]}"
  check "extension, $ranks ranks" "$here/run_mpi.sh" "$build" "$ranks" "$build/examples/himeno_extension" "${size[@]}"
done
((failures == 0)) && echo "PASS: every version gives the serial result"
exit $((failures > 0))
