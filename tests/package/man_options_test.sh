#!/usr/bin/env bash
# The manual pages are written by hand (docs/man/*.scd), so their options could drift from the
# programs'. Compares the options fedcld(8) and fedcl(1) describe (their lines "*--name* _VALUE_")
# with those `fedcld --help` and `fedcl --help` list (their lines "  --name VALUE  help"): names and
# value names, both ways.
#
# man_options_test.sh MAN_DIR FEDCLD FEDCL
set -euo pipefail

man=$1
fedcld=$2
fedcl=$3
failed=0

# "--name VALUE" (or "--name"), one per line, sorted.
page_options() { sed -n 's/^\*\(--[a-z-]*\)\*\( _\([^_]*\)_\)\{0,1\}$/\1 \3/p' "$1" | sed 's/ $//' | sort; }
help_options() { "$1" --help | sed -n 's/^  \(--[^ ]*\( [^ ][^ ]*\)\{0,1\}\)\(  .*\)\{0,1\}$/\1/p' | sort; }

compare() {  # PAGE PROGRAM
  local page=$man/$1.scd
  [[ -n $(page_options "$page") ]] || { echo "FAIL: no options found in $page"; failed=1; return; }
  if diff -u --label "$1.scd" --label "$(basename "$2") --help" <(page_options "$page") <(help_options "$2"); then
    echo "$1: the same $(page_options "$page" | wc -l) options as $(basename "$2") --help"
  else
    echo "FAIL: $page and $(basename "$2") --help differ (above: - only in the page, + only in the help)"
    failed=1
  fi
}

compare fedcld.8 "$fedcld"
compare fedcl.1 "$fedcl"
if ((failed)); then exit 1; fi
echo PASS
