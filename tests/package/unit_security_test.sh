#!/usr/bin/env bash
# The unit's sandbox, as systemd rates it: `systemd-analyze security` of packaging/fedcld.service.in
# (its paths filled in) must stay at an exposure of 2.5 or less (docs/install.md, "The unit's
# sandbox"), and the unit must still name the system calls fedcld's workers confine themselves with.
#
# unit_security_test.sh UNIT_IN
set -euo pipefail

unit_in=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e 's|@FEDCLD@|/usr/bin/fedcld|; s|@FEDCLD_CONF@|/etc/fedcl/fedcld.conf|' "$unit_in" >"$work/fedcld.service"
command -v systemd-analyze >/dev/null || { echo "FAIL: no systemd-analyze (Debian's systemd package)"; exit 1; }
report=$(systemd-analyze security --offline=true "$work/fedcld.service" 2>&1) || true
echo "$report" | tail -n 1
exposure=$(echo "$report" | sed -n 's/.*Overall exposure level for fedcld.service: \([0-9.]*\).*/\1/p')
[[ -n $exposure ]] || { echo "FAIL: no exposure level in:"; echo "$report"; exit 1; }
awk -v e="$exposure" 'BEGIN { exit !(e <= 2.5) }' || { echo "FAIL: exposure $exposure is above 2.5:"; echo "$report" | grep '✗'; exit 1; }
for call in landlock_create_ruleset landlock_add_rule landlock_restrict_self seccomp; do
  grep -q "^SystemCallFilter=.*\b$call\b" "$work/fedcld.service" ||
    { echo "FAIL: SystemCallFilter= lacks $call, without which fedcld's workers cannot confine themselves"; exit 1; }
done
echo PASS
