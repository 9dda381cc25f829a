#!/usr/bin/env python3
"""Where a synchronising call's time goes: joins a client's FEDCL_TRACE file and fedcld's --trace
file (one host: both clocks are CLOCK_MONOTONIC; calls are matched by the client's port and seq) and prints each hand-off's median
and 90th percentile over the calls that went the whole way, as `trace.<hop>.<stat> value us` lines;
`request_to_daemon` splits into `link_to_daemon` and `daemon_runs_requests_before_it` (requests
without a reply that came with the call, e.g. the launch before a clFinish); `daemon_batch_flush` is
fedcld's clFlush of the queues a batch touched, over every batch.

    FEDCL_TRACE=/tmp/client.trace program ...      # fedcld --trace /tmp/daemon.trace ...
    bench/trace_report.py /tmp/client.trace /tmp/daemon.trace
"""
import bisect
import statistics
import sys


def read_marks(path):
    marks = {}
    lines = open(path).read().split('\n')
    for number, line in enumerate(lines, 1):
        if line.startswith('#') or not line.strip():
            continue
        fields = line.split()
        if len(fields) != 4 and number == len(lines):
            # A process stopped while it wrote its marks: the last line is cut short.
            print(f'{path}:{number}: a cut last line, left out', file=sys.stderr)
            continue
        if len(fields) != 4:
            sys.exit(f'{path}:{number}: not "<point> <stream> <seq> <ns>": {line.strip()}')
        point, call, ns = fields[0], (int(fields[1]), int(fields[2])), int(fields[3])
        marks.setdefault(point, []).append((call, ns))
    return marks


def by_call(marks, point):
    # A call is (stream, seq): the client's port names its connection at both ends.
    found = {}
    for call, ns in marks.get(point, []):
        found.setdefault(call, ns)
    return found


def last_between(times, low, high):
    i = bisect.bisect_right(times, high)
    if i and times[i - 1] >= low:
        return times[i - 1]
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    client, daemon = read_marks(sys.argv[1]), read_marks(sys.argv[2])
    sent, reply_read, resumed = (by_call(client, p) for p in ('client_sent', 'client_reply_read', 'client_resumed'))
    read, executed, reply_sent = (by_call(daemon, p) for p in ('daemon_read', 'daemon_executed', 'daemon_reply_sent'))
    # Requests without a reply (seq 0: launches, writes) that came with a call run before it.
    unanswered_read = {}
    for (stream, seq), ns in daemon.get('daemon_read', []):
        if seq == 0:
            unanswered_read.setdefault(stream, []).append(ns)
    for times in unanswered_read.values():
        times.sort()
    seen = sorted(ns for _, ns in daemon.get('daemon_completion_seen', []))
    run = sorted(ns for _, ns in daemon.get('daemon_completion_run', []))

    hops = {}
    def add(hop, begin, end):
        if begin is not None and end is not None:
            hops.setdefault(hop, []).append((end - begin) / 1000.0)

    calls = 0
    for seq, t_sent in sent.items():
        needed = (resumed, reply_read, read, executed, reply_sent)
        if any(seq not in table for table in needed):
            continue
        calls += 1
        add('total', t_sent, resumed[seq])
        add('request_to_daemon', t_sent, read[seq])
        before = unanswered_read.get(seq[0], [])
        i = bisect.bisect_left(before, t_sent)
        if i < len(before) and before[i] < read[seq]:
            add('link_to_daemon', t_sent, before[i])
            add('daemon_runs_requests_before_it', before[i], read[seq])
        else:
            add('link_to_daemon', t_sent, read[seq])
        add('reply_to_client', reply_sent[seq], reply_read[seq])
        add('client_wakes_caller', reply_read[seq], resumed[seq])
        if reply_sent[seq] <= executed[seq]:  # answered while it ran
            add('daemon_runs_request', read[seq], reply_sent[seq])
            continue
        add('daemon_runs_request', read[seq], executed[seq])
        t_seen = last_between(seen, executed[seq], reply_sent[seq])
        t_run = last_between(run, t_seen, reply_sent[seq]) if t_seen is not None else None
        if t_seen is not None and t_run is not None:
            add('backend_until_completion_seen', executed[seq], t_seen)
            add('completion_to_loop', t_seen, t_run)
            add('loop_to_reply', t_run, reply_sent[seq])
        else:
            add('answered_after_running', executed[seq], reply_sent[seq])
    # The clFlush of a batch's queues, paired in order on each stream (they never nest).
    started = {}
    for (stream, _), ns in daemon.get('daemon_flush_started', []):
        started.setdefault(stream, []).append(ns)
    for (stream, _), ns in daemon.get('daemon_flush_ended', []):
        if started.get(stream):
            add('daemon_batch_flush', started[stream].pop(0), ns)
    if not calls:
        sys.exit('no call appears in both traces (are they of one host and one run?)')
    print(f'trace.calls {calls} calls')
    for hop, values in hops.items():
        values.sort()
        p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
        print(f'trace.{hop}.median {statistics.median(values):.2f} us')
        print(f'trace.{hop}.p90 {p90:.2f} us')
        print(f'trace.{hop}.count {len(values)} calls')


if __name__ == '__main__':
    main()
