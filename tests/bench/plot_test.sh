#!/usr/bin/env bash
# bench/plot.py against a fedcl_bench result: it draws a PNG from a complete file, and refuses, naming
# what is missing, a file without the needed metrics (one without enqueue_finish, and a run from
# before floors were printed).
#
#   tests/bench/plot_test.sh REPO_DIR
set -euo pipefail

repo=$1
plot=$repo/bench/plot.py
fixture=$repo/tests/bench/fixture-result.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

/usr/bin/python3 "$plot" "$fixture" "$work/out.png" || fail "plot.py failed on a complete result"
[[ -s $work/out.png ]] || fail "no PNG written"
[[ $(head -c 8 "$work/out.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "the output is not a PNG"

# Expects plot.py to exit 1 on FILE, writing no picture, with stderr naming WANT.
expect_refusal() {
  local file=$1 want=$2 status=0
  /usr/bin/python3 "$plot" "$file" "$work/refused.png" 2>"$work/err" || status=$?
  [[ $status -eq 1 ]] || fail "plot.py exited $status on $file, not 1"
  [[ ! -e $work/refused.png ]] || fail "plot.py wrote a picture from $file"
  grep -q "lacks metrics" "$work/err" && grep -qF "$want" "$work/err" ||
    fail "plot.py's message on $file does not name $want: $(cat "$work/err")"
}

grep -v '^enqueue_finish\.' "$fixture" >"$work/no-enqueue-finish.txt"
expect_refusal "$work/no-enqueue-finish.txt" enqueue_finish.median.floor
expect_refusal "$repo/bench/results/2026-11-22-nvidia-h200.txt" read.64B.time.floor
echo "PASS"
