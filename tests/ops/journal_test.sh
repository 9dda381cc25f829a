#!/usr/bin/env bash
# fedcld under systemd writes journal entries, not lines: each with its priority (so that
# `journalctl -u fedcld -p warning` shows exactly the warnings and errors) and the fields
# FEDCLD_SESSION, FEDCLD_USER and FEDCLD_PEER. Without a journald here, a stand-in takes its native
# socket (journal_sink.py) in a mount namespace of this test's own, where /run is a fresh tmpfs, and
# fedcld is started as systemd starts it: JOURNAL_STREAM naming its stderr. Then a client with a
# wrong key (a warning, in the main process), a session of user alice (info lines, in the main
# process and in alice's worker) and a stop (info).
#
# journal_test.sh BUILD_DIR    (root: unshare and mount; else it says why and fails)
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
if ((EUID != 0)); then
  echo "FAIL: needs root (a mount namespace with its own /run for the journal's socket)"
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(
  umask 077
  printf 'alice alices-key-0123456\n' >"$work/users"
  printf 'alices-key-0123456\n' >"$work/alice"
  printf 'not-her-key-0123456\n' >"$work/wrong"
)

unshare --mount --propagation private bash -s "$build" "$here" "$work" <<'INNER'
set -euo pipefail
build=$1 here=$2 work=$3
mount -t tmpfs fedcl-journal-test /run
mkdir -p /run/systemd/journal
python3 "$here/journal_sink.py" /run/systemd/journal/socket "$work/entries" &
sink=$!
for _ in $(seq 50); do [[ -S /run/systemd/journal/socket ]] && break; sleep 0.1; done
: >"$work/stderr"
# As systemd does: stderr connected to the journal, JOURNAL_STREAM=device:inode of it.
JOURNAL_STREAM=$(stat -c '%d:%i' "$work/stderr") \
  "$build/bridge-daemon/fedcld" --config /dev/null --listen 127.0.0.1:0 --port-file "$work/port" \
  --key-list "$work/users" --log-level info 2>>"$work/stderr" &
daemon=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
hosts=127.0.0.1:$(cat "$work/port")
FEDCL_HOSTS=$hosts FEDCL_USER=alice FEDCL_KEY_FILE=$work/wrong "$build/tools/fedcl" status >/dev/null 2>&1 || true
FEDCL_HOSTS=$hosts FEDCL_USER=alice FEDCL_KEY_FILE=$work/alice OCL_ICD_VENDORS=$build/vendors \
  "$build/examples/vector_add" >"$work/client.log" 2>&1
kill -TERM "$daemon"
wait "$daemon" || true
sleep 0.3
kill "$sink"
INNER

python3 - "$work/entries" "$work/stderr" <<'CHECK'
import json, os, sys
entries = [json.loads(line) for line in open(sys.argv[1])]
stderr = open(sys.argv[2]).read()
failures = []
def expect(condition, what):
    if not condition:
        failures.append(what)
expect(entries, "no journal entries at all")
expect(stderr == "", "lines went to stderr instead of the journal: %r" % stderr[:300])
for e in entries:
    expect(e.get("SYSLOG_IDENTIFIER") == "fedcld", "an entry without SYSLOG_IDENTIFIER=fedcld: %r" % e)
    expect(e.get("PRIORITY") in ("3", "4", "6", "7"), "an entry without a syslog priority: %r" % e)
warnings = [e for e in entries if int(e["PRIORITY"]) <= 4]
refused = [e for e in warnings if "refused" in e["MESSAGE"] and "wrong key" in e["MESSAGE"]]
expect(len(refused) == 1, "one warning for the wrong key, got %r" % warnings)
if refused:
    expect(refused[0].get("PRIORITY") == "4", "the refusal is a warning (4): %r" % refused[0])
    expect(refused[0].get("FEDCLD_USER") == "alice", "the refusal names the user: %r" % refused[0])
    expect(refused[0].get("FEDCLD_PEER", "").startswith("127.0.0.1:"), "the refusal names the peer: %r" % refused[0])
# `-p warning` would show exactly these: nothing else above info (but the warning of a fedcld run as
# root, which the test is where CI runs it).
as_root = [e for e in warnings if "fedcld runs as root" in e["MESSAGE"]]
expect(len(as_root) == (1 if os.geteuid() == 0 else 0), "the warning of a fedcld run as root: %r" % warnings)
expect(len(warnings) == len(refused) + len(as_root), "warnings other than the refusal: %r" % warnings)
infos = [e for e in entries if e["PRIORITY"] == "6"]
started = [e for e in infos if "client" in e["MESSAGE"] and "user 'alice'" in e["MESSAGE"]]
expect(started, "an info entry for alice's session: %r" % infos)
worker = [e for e in entries if e.get("FEDCLD_SESSION") and e.get("FEDCLD_USER") == "alice" and "[session " in e["MESSAGE"]]
expect(worker, "an entry of alice's session worker, with its session, user and peer: %r" % entries)
# On the daemon's own host the client comes over its local socket (FEDCL_LOCAL=auto): the kernel's
# uid and pid name it then, an address otherwise.
expect(all(e.get("FEDCLD_PEER", "").startswith(("127.0.0.1:", "local uid ")) for e in worker),
       "worker entries name the client: %r" % worker)
print("%d entries, %d warnings, %d info; alice's worker wrote %d" % (len(entries), len(warnings), len(infos), len(worker)))
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("journal entries: priorities and fields as expected")
CHECK
