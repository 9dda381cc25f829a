#!/usr/bin/env python3
"""Where a chain across two daemons spends its time: a kernel on node 0 writes, a kernel on node 1
waits for its event (and reads what it wrote), clFinish on node 1 (fedcl_federation_bench's event and
shared chains). Joins the client's FEDCL_TRACE file and both daemons' --trace files (one host: one
CLOCK_MONOTONIC) and prints, for the chains that end with a clFinish on node 1 (or on node 0 with
--same-node), when each mark first came after the chain's first flush to node 0, as medians over the
chains: `<who>:<mark>[:<peer message kind>] <median> us (n=<chains that had it>)`. Kinds: 2 data,
4 signal (wire PeerMessage).

    fedcld --trace /tmp/t/node0 ...; fedcld --trace /tmp/t/node1 ...   # each writes <FILE>.<session>
    FEDCL_TRACE=/tmp/t/client fedcl_federation_bench --only shared --shared-sizes 64
    bench/trace_chain.py /tmp/t/client /tmp/t/node0.1 /tmp/t/node1.1 [--same-node]
"""
import statistics
import sys


def read_marks(path, who):
    marks = []
    for line in open(path):
        fields = line.split()
        if line.startswith('#') or len(fields) != 4:
            continue
        point, stream, seq, ns = fields
        marks.append((int(ns), who, point, int(stream), int(seq)))
    return marks


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if len(args) != 3:
        sys.exit(__doc__)
    same_node = '--same-node' in sys.argv
    client, first, second = read_marks(args[0], 'C'), read_marks(args[1], 'A'), read_marks(args[2], 'B')
    # A daemon's requests carry the client's port of that connection as their stream.
    port = {who: {m[3] for m in marks if m[2] == 'daemon_read' and m[3]} for who, marks in (('A', first), ('B', second))}
    ending = port['A'] if same_node else port['B']
    marks = sorted(client + first + second)
    times, chains, start = {}, 0, 0
    for i, (ns, who, point, stream, _) in enumerate(marks):
        if who != 'C' or point != 'client_resumed':
            continue
        chain, start = marks[start:i + 1], i + 1
        if stream not in ending:
            continue
        t0 = next((m[0] for m in chain if m[1] == 'C' and m[2] == 'client_flushed' and m[3] in port['A']), None)
        if t0 is None:
            continue
        chains += 1
        seen = {}
        for ns2, who2, point2, _, seq2 in chain:
            if ns2 >= t0:
                seen.setdefault(f'{who2}:{point2}' + (f':{seq2}' if 'peer' in point2 else ''), (ns2 - t0) / 1000)
        for key, us in seen.items():
            times.setdefault(key, []).append(us)
    print(f'# {chains} chains ending on node {0 if same_node else 1}')
    for key, values in sorted(times.items(), key=lambda kv: statistics.median(kv[1])):
        if len(values) >= chains / 20:
            print(f'{key:<34} {statistics.median(values):8.1f} us (n={len(values)})')


if __name__ == '__main__':
    main()
